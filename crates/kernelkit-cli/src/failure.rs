//! How `kernelkit source` and `kernelkit run` fail: exit code 2 and one line
//! on stderr, then the compiler's log when there is one. Scripts can rely on
//! the first line of stderr being the whole reason.

use std::io::Write;
use std::process::ExitCode;

use kernelkit::spec_file::{InputError, SpecError};

/// Anything that stops a `source` or `run` command.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// The spec file is unreadable or invalid.
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// An input's data (inline or a `.npy` file) or views do not fit it.
    #[error(transparent)]
    Input(#[from] InputError),
    /// The library refused the kernel or the call, or the compile or the
    /// launch failed.
    #[error(transparent)]
    Kernel(#[from] kernelkit::Error),
    /// The command cannot do what its options ask.
    #[error("{0}")]
    Unsupported(String),
    /// An output file, the output folder or stdout cannot be written, or an
    /// output is too large to print.
    #[error("cannot write {what}: {reason}")]
    Write {
        /// What was being written.
        what: String,
        /// The I/O error.
        reason: String,
    },
}

/// The exit code of every failure of these commands but one.
pub const FAILURE: u8 = 2;

/// The exit code of a run whose checked kernel went out of bounds
/// (`--check-bounds`): the kernel ran, and its report is the reason.
pub const OUT_OF_BOUNDS: u8 = 3;

impl CommandError {
    /// The compiler's log, when the compiler rejected the source.
    fn log(&self) -> Option<&str> {
        match self {
            CommandError::Kernel(kernelkit::Error::Compile(c)) => c.log(),
            _ => None,
        }
    }

    /// The one-line reason. A compile error's message carries its log after
    /// the first line; the log is printed separately, below it.
    fn line(&self) -> String {
        let text = self.to_string();
        if self.log().is_some() {
            let first = text.lines().next().unwrap_or_default();
            first.trim_end_matches(':').to_string()
        } else {
            text.split_whitespace().collect::<Vec<_>>().join(" ")
        }
    }

    /// Prints the error (`kernelkit COMMAND: reason`, then the log) on
    /// stderr and returns exit code 2 ([`OUT_OF_BOUNDS`] for a bounds
    /// violation).
    pub fn report(&self, command: &str) -> ExitCode {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "kernelkit {command}: {}", self.line());
        if let Some(log) = self.log() {
            let _ = write!(err, "{log}");
            if !log.ends_with('\n') {
                let _ = writeln!(err);
            }
        }
        match self {
            CommandError::Kernel(kernelkit::Error::Call(kernelkit::CallError::OutOfBounds {
                ..
            })) => ExitCode::from(OUT_OF_BOUNDS),
            _ => ExitCode::from(FAILURE),
        }
    }
}

/// Writes `text` to stdout exactly. A closed pipe (`| head`) is not an
/// error: the reader has what it wanted.
pub fn print_exact(text: &str) -> Result<(), CommandError> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(CommandError::Write {
            what: "stdout".into(),
            reason: e.to_string(),
        }),
        _ => Ok(()),
    }
}
