//! `kernelkit`: the command-line face of the library.
//!
//! - `demo`: the seed's reproduction — many threads compile and run
//!   distinct kernels at once — with a `cache:` summary line.
//! - `source`: prints the generated source of one call, for any dialect.
//! - `run`: runs a kernel from a spec file on real data.
//! - `cache`: inspects and maintains the artifact store (`--remote`: the
//!   fleet tier on Redis); exports and imports signed bundles of compiled
//!   kernels.
//! - `precompile`: compiles spec files' calls ahead of time, in parallel
//!   (`--tune`: and tunes them over launch configurations).
//! - `tune`: tunes one spec file's call over launch configurations and
//!   prints the ranking.
//! - `compile-worker` (hidden, `cuda` feature): serves CUDA compile jobs on
//!   stdin/stdout for another process's kernelkit (see
//!   `kernelkit::CompileWorkers`).
//!
//! One file per command (`cache_cmd` for `cache`, with `cache_remote` for
//! its `--remote` actions), and what `source` and `run` share: `failure`
//! (how they fail: exit code 2 and one line), `out_dir` (`run --out-dir`:
//! outputs as `.npy` files) and `spec_help` (the spec format in brief).

mod cache_cmd;
mod cache_remote;
mod demo;
mod failure;
mod out_dir;
mod precompile;
mod run;
mod source;
mod spec_help;
mod tune;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "kernelkit",
    version,
    about = "Custom GPU and CPU kernels written inline"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Many threads compile and run distinct kernels at once; checks every result.
    Demo(demo::Args),
    /// Prints the generated source of one call (metal, cuda or cpu dialect).
    Source(source::Args),
    /// Runs a kernel from a spec file on real data and prints its outputs.
    Run(run::Args),
    /// Inspects and maintains the on-disk artifact store; signed bundles.
    Cache(cache_cmd::Args),
    /// Compiles the calls of spec files in parallel without running them.
    Precompile(precompile::Args),
    /// Tunes one call of a spec file over launch configurations; prints the ranking.
    Tune(tune::Args),
    /// Serves CUDA compile jobs on stdin/stdout (started by kernelkit itself).
    #[cfg(feature = "cuda")]
    #[command(name = "compile-worker", hide = true)]
    CompileWorker,
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("KERNELKIT_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    match cli.command {
        Command::Demo(a) => demo::main(a),
        Command::Source(a) => source::main(a),
        Command::Run(a) => run::main(a),
        Command::Cache(a) => cache_cmd::main(a),
        Command::Precompile(a) => precompile::main(a),
        Command::Tune(a) => tune::main(a),
        #[cfg(feature = "cuda")]
        Command::CompileWorker => match kernelkit::compile_worker::serve_stdio() {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("kernelkit compile-worker: {e}");
                ExitCode::FAILURE
            }
        },
    }
}
