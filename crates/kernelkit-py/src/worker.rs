//! The compile worker shipped with the package: the Python interpreter
//! itself, serving through this extension module.
//!
//! kernelkit hands a CUDA compile to a worker process when this process is
//! already compiling (NVRTC compiles one program at a time per process). The
//! library finds a `kernelkit` executable next to the running program, which
//! for Python is the interpreter's directory, where none is. So the package
//! names its own: `sys.executable -S -c CODE compile-worker`, where `CODE`
//! puts the package's directory on the path and calls `_compile_worker`,
//! which runs kernelkit's worker loop on the standard input and output.
//! `-S` skips `site` (the package's directory is given): the worker starts
//! in a few milliseconds and imports nothing but this module.
//!
//! `KERNELKIT_WORKER` still wins (a worker program of the caller's choice),
//! and `KERNELKIT_COMPILE_WORKERS=0` still turns workers off.
//!
//! The workers start in the background at the process's first compile
//! (`StartWorkers::AtFirstCompile`) unless `KERNELKIT_START_WORKERS` says
//! otherwise: a Python program that compiles one kernel usually goes on to
//! compile others, often from many threads at once, and a worker started
//! by such a burst would make it wait for the interpreter and NVRTC.

use std::ffi::OsString;
use std::path::PathBuf;

use kernelkit::{CompileWorkers, Config, StartWorkers};
use pyo3::prelude::*;

/// The configuration a CUDA device of this package opens with: the
/// environment's, with the package's own worker when none is configured.
pub(crate) fn config(py: Python<'_>) -> Config {
    let mut config = Config::from_env();
    let cuda = &mut config.cuda;
    // The library's default is `demand`; this package's, `first`.
    if std::env::var_os("KERNELKIT_START_WORKERS").is_none() {
        cuda.start_workers = StartWorkers::AtFirstCompile;
    }
    if cuda.worker.is_none() && cuda.options.workers == CompileWorkers::Auto {
        if let Some((python, args)) = command(py) {
            cuda.worker = Some(python);
            cuda.worker_args = args;
        }
    }
    config
}

/// `sys.executable` and the arguments that make it a worker; `None` when
/// the interpreter is not known (an embedded one) or the package has no
/// file (then the library's own search applies).
fn command(py: Python<'_>) -> Option<(PathBuf, Vec<OsString>)> {
    let python: PathBuf = py
        .import("sys")
        .ok()?
        .getattr("executable")
        .ok()?
        .extract::<Option<PathBuf>>()
        .ok()??;
    if python.as_os_str().is_empty() {
        return None;
    }
    // The directory that holds the `kernelkit` package.
    let package: PathBuf = py
        .import("kernelkit")
        .ok()?
        .getattr("__file__")
        .ok()?
        .extract::<PathBuf>()
        .ok()?;
    let root = package.parent()?.parent()?.to_str()?.to_owned();
    let code = format!(
        "import sys; sys.path.insert(0, {root:?}); \
         from kernelkit._kernelkit import _compile_worker; sys.exit(_compile_worker())"
    );
    Some((python, vec!["-S".into(), "-c".into(), code.into()]))
}

/// The command line of the package's compile worker (`[python, "-S", "-c",
/// CODE, "compile-worker"]`), or `None` when the package cannot name one;
/// for tests and for looking.
#[pyfunction]
pub(crate) fn _worker_command(py: Python<'_>) -> Option<Vec<OsString>> {
    let (python, mut args) = command(py)?;
    args.insert(0, python.into_os_string());
    args.push("compile-worker".into());
    Some(args)
}

/// Serves CUDA compile jobs on the standard input and output until the
/// input ends (kernelkit's worker loop); returns the exit status. Run by
/// the worker processes this package starts, not by programs.
#[pyfunction]
pub(crate) fn _compile_worker(py: Python<'_>) -> i32 {
    #[cfg(feature = "cuda")]
    {
        match py.detach(kernelkit::compile_worker::serve_stdio) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("kernelkit compile worker: {e}");
                1
            }
        }
    }
    #[cfg(not(feature = "cuda"))]
    {
        let _ = py;
        eprintln!("kernelkit compile worker: this build has no CUDA");
        2
    }
}
