//! Compile options a user can give the CUDA backend.
//!
//! Two sources, both applied: the environment variable
//! `KERNELKIT_NVRTC_FLAGS` (whitespace-separated NVRTC options, for every
//! CUDA device the process opens), and a [`CudaCompileOptions`] value given
//! to [`Device::new_cuda_with`](crate::Device::new_cuda_with) (for that device
//! object and its own kernel cache). Every option is part of the module key,
//! so kernels compiled with different options never share a module.
//!
//! The type is always built, so code that sets options compiles with or
//! without the `cuda` feature.
//!
//! [`CompileWorkers`] says where compiles run. NVRTC compiles one program
//! at a time inside a process, so distinct kernels compiled from many
//! threads would queue; the CUDA backend therefore hands a compile to a
//! worker process when this process is already compiling. The environment
//! can set the same: `KERNELKIT_WORKER` (the worker program) and
//! `KERNELKIT_COMPILE_WORKERS` (how many at most; `0`: none).

use std::path::PathBuf;

/// NVRTC options beyond kernelkit's own (`--gpu-architecture`, the CUDA
/// include directories).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct CudaCompileOptions {
    /// Adds `--use_fast_math` (approximate division, square root and
    /// transcendentals; flush denormals to zero).
    pub fast_math: bool,
    /// More include directories (`-I`), searched after kernelkit's.
    pub include_dirs: Vec<PathBuf>,
    /// Any other NVRTC options, passed as given (e.g. `-lineinfo`,
    /// `--maxrregcount=64`, `-DTILE=32`).
    pub flags: Vec<String>,
    /// Where compiles run (not part of the module key: a worker produces
    /// the same artifact as this process).
    pub workers: CompileWorkers,
}

/// Where the CUDA backend's compiles run.
///
/// A worker is a program run as `PROGRAM compile-worker` that serves
/// compile jobs on its standard input and output: the `kernelkit` command
/// is one, and any program can be one by calling
/// `kernelkit::compile_worker::serve_stdio()` when it gets that argument.
/// Whatever the setting, a compile never fails because of the workers: a
/// worker that cannot start or dies leaves the job to this process.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum CompileWorkers {
    /// The program in `KERNELKIT_WORKER`, else a `kernelkit` executable
    /// next to the running program, else none (compile in this process).
    #[default]
    Auto,
    /// Always compile in this process.
    InProcess,
    /// This worker program.
    Program(PathBuf),
}

impl CudaCompileOptions {
    /// Environment variable whose whitespace-separated words are added to
    /// every CUDA compile.
    pub const ENV_FLAGS: &'static str = "KERNELKIT_NVRTC_FLAGS";

    /// Options from `KERNELKIT_NVRTC_FLAGS` alone.
    pub fn from_env() -> CudaCompileOptions {
        let flags = std::env::var(Self::ENV_FLAGS)
            .map(|s| s.split_whitespace().map(str::to_string).collect())
            .unwrap_or_default();
        CudaCompileOptions {
            flags,
            ..CudaCompileOptions::default()
        }
    }

    /// Turns fast math on or off.
    pub fn fast_math(mut self, yes: bool) -> Self {
        self.fast_math = yes;
        self
    }

    /// Adds an include directory.
    pub fn include_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.include_dirs.push(dir.into());
        self
    }

    /// Adds an NVRTC option.
    pub fn flag(mut self, flag: impl Into<String>) -> Self {
        self.flags.push(flag.into());
        self
    }

    /// Sets where compiles run.
    pub fn workers(mut self, workers: CompileWorkers) -> Self {
        self.workers = workers;
        self
    }

    /// These options followed by the environment's.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub(crate) fn with_env(&self) -> CudaCompileOptions {
        let mut all = self.clone();
        all.flags.extend(CudaCompileOptions::from_env().flags);
        all
    }

    /// The NVRTC option words, in order.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub(crate) fn words(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.fast_math {
            out.push("--use_fast_math".to_string());
        }
        for dir in &self.include_dirs {
            out.push(format!("-I{}", dir.display()));
        }
        out.extend(self.flags.iter().cloned());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_in_order() {
        let o = CudaCompileOptions::default()
            .fast_math(true)
            .include_dir("/opt/inc")
            .flag("-lineinfo");
        assert_eq!(
            o.words(),
            vec!["--use_fast_math", "-I/opt/inc", "-lineinfo"]
        );
    }
}
