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
