//! `kernelkit tune SPEC.json --configs CONFIGS.json [--device D]`: tunes
//! one call of a spec file over launch configurations and prints the
//! ranking, fastest first, one line per configuration, then the choice
//! and the `cache:` line. The record is kept in every cache tier the
//! device has (memory, the disk store, the fleet tier), so later
//! processes launch the choice without timing.
//!
//! The configurations file is described in
//! [`kernelkit::spec_file::tune_configs`]; the spec needs `data` for its
//! inputs (or placeholder inputs are used: zeros of the declared shapes).
//! Any failure exits with code 2 and one line on stderr.

use std::path::PathBuf;
use std::process::ExitCode;

use kernelkit::spec_file::{tune_configs, SpecFile};
use kernelkit::{Device, Tuning};

use crate::failure::CommandError;

/// Arguments of `kernelkit tune`.
#[derive(clap::Args, Clone)]
pub struct Args {
    /// The spec file (JSON) of the call to tune; its `grid` is used by
    /// configurations that fix none.
    spec: PathBuf,
    /// The configurations (JSON): a list of {"threadgroup": [x, y, z],
    /// "template": {"NAME": value}, "grid": [x, y, z]}.
    #[arg(long, value_name = "CONFIGS.json")]
    configs: PathBuf,
    /// `cpu`, `cuda` or `cuda:N` (default: CUDA GPU 0 if there is one, else
    /// the CPU).
    #[arg(long)]
    device: Option<String>,
}

/// Runs `kernelkit tune`.
pub fn main(args: Args) -> ExitCode {
    match run(&args) {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => e.report("tune"),
    }
}

/// Reads the configurations file at `path`.
pub fn read_configs(path: &std::path::Path) -> Result<Tuning, CommandError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| CommandError::Unsupported(format!("cannot read {}: {e}", path.display())))?;
    Ok(Tuning::new(tune_configs::from_json(&text)?))
}

fn run(args: &Args) -> Result<String, CommandError> {
    let spec = SpecFile::from_path(&args.spec)?;
    let tuning = read_configs(&args.configs)?;
    let kernel = spec.kernel()?;
    let device = match &args.device {
        Some(name) => Device::from_name(name)?,
        None => Device::default_device()?,
    };
    let inputs = if spec.data.is_empty() {
        spec.placeholder_inputs(&device)?
    } else {
        spec.input_arrays(&device)?
    };
    let mut call = spec.call(&kernel, &inputs).on(device.default_stream());
    if let Some(grid) = spec.grid {
        call = call.grid(grid);
    }
    if let Some(v) = spec.init_value {
        call = call.init_value(v);
    }
    let record = tuning.record(&call)?;
    let mut ranked: Vec<_> = record.configs.iter().collect();
    ranked.sort_by_key(|c| (c.time_ns.is_none(), c.time_ns));
    let mut text = format!(
        "kernel {} on {} ({} configurations; kernelkit {})\n",
        spec.name,
        record.target,
        ranked.len(),
        record.version
    );
    for c in ranked {
        match (c.time_ns, &c.error) {
            (Some(ns), _) => text.push_str(&format!(
                "{:>12.3} us  round {}  {}{}\n",
                ns as f64 / 1e3,
                c.round,
                c.config,
                if c.config == record.choice {
                    "  <- chosen"
                } else {
                    ""
                }
            )),
            (None, e) => text.push_str(&format!(
                "{:>12}     round {}  {}  failed: {}\n",
                "-",
                c.round,
                c.config,
                e.as_deref().unwrap_or("")
            )),
        }
    }
    text.push_str(&format!("chosen: {}\n", record.choice));
    text.push_str(&format!("cache: {}\n", device.cache_stats().summary()));
    Ok(text)
}
