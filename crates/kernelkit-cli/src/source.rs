//! `kernelkit source --dialect metal|cuda|cpu SPEC.json`: prints the source
//! kernelkit generates for one call, exactly (the counterpart of MLX's
//! `verbose=True`, without a device).
//!
//! Nothing but the generated text goes to stdout, and no newline is added
//! beyond what the generator returns, so `kernelkit source ... > k.metal`
//! can be compared byte for byte with MLX's output. `--name` prints the
//! generated function name instead, followed by a newline.

use std::path::PathBuf;
use std::process::ExitCode;

use kernelkit::spec_file::SpecFile;
use kernelkit::{Device, Dialect};

use crate::failure::{print_exact, CommandError};

/// Arguments of `kernelkit source`.
#[derive(clap::Args)]
#[command(after_long_help = crate::spec_help::HELP)]
pub struct Args {
    /// The kernel language: `metal`, `cuda` or `cpu`.
    #[arg(long, value_parser = parse_dialect)]
    dialect: Dialect,
    /// Print the generated function name instead of the source.
    #[arg(long)]
    name: bool,
    /// Also compile the source on a device of its dialect (`cpu`: the
    /// system compiler; `cuda`: NVRTC on GPU 0) and fail with the
    /// compiler's log if it does not compile.
    #[arg(long)]
    compile: bool,
    /// The spec file (JSON); `grid`, `data` and the other launch fields are
    /// checked but not used.
    spec: PathBuf,
}

fn parse_dialect(s: &str) -> Result<Dialect, String> {
    Dialect::from_name(s)
        .ok_or_else(|| format!("unknown dialect `{s}` (expected metal, cuda or cpu)"))
}

/// Runs `kernelkit source`.
pub fn main(args: Args) -> ExitCode {
    match generate(&args).and_then(|text| print_exact(&text)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => e.report("source"),
    }
}

/// The text to print: the source, or the name and a newline.
fn generate(args: &Args) -> Result<String, CommandError> {
    let spec = SpecFile::from_path(&args.spec)?;
    let kernel = spec.kernel()?;
    // Stand-ins that generate like the declared inputs, without their data.
    let inputs = spec.placeholder_inputs(&Device::cpu())?;
    let generated = spec.call(&kernel, &inputs).generate(args.dialect)?;
    if args.compile {
        let device = match args.dialect {
            Dialect::Cpu => Device::cpu(),
            Dialect::Cuda => Device::cuda(0)?,
            Dialect::Metal => {
                return Err(CommandError::Unsupported(
                    "--compile needs the cpu or cuda dialect: kernelkit has no Metal compiler"
                        .into(),
                ))
            }
        };
        let on_device = spec.placeholder_inputs(&device)?;
        spec.call(&kernel, &on_device)
            .grid([1, 1, 1])
            .prepare()?
            .compile()?;
    }
    Ok(if args.name {
        format!("{}\n", generated.name)
    } else {
        generated.source
    })
}
