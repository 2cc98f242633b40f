//! Being written.

use std::process::ExitCode;

/// Arguments.
#[derive(clap::Args)]
pub struct Args {}

pub fn main(_args: Args) -> ExitCode {
    eprintln!("kernelkit: this command is not built yet");
    ExitCode::from(2)
}
