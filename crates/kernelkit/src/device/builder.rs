//! [`DeviceBuilder`]: a device whose settings the program gives.

use std::path::PathBuf;

use super::Device;
use crate::config::{CacheMode, Config, CudaCompileOptions};
use crate::error::Result;

/// Opens a device with settings given by the program (or a test) rather
/// than read from the environment, from [`Device::builder`].
///
/// It starts from [`Config::from_env`]; [`DeviceBuilder::config`] replaces
/// the whole configuration, the other methods one setting. Every device it
/// opens is new, with its own kernel cache (the process-wide ones are
/// [`Device::cpu`] and [`Device::cuda`]).
#[derive(Clone, Debug)]
#[must_use = "a builder opens nothing until `cpu()` or `cuda()`"]
pub struct DeviceBuilder {
    config: Config,
}

impl DeviceBuilder {
    pub(super) fn new() -> DeviceBuilder {
        DeviceBuilder {
            config: Config::from_env(),
        }
    }

    /// Uses `config` for everything (the environment is then not
    /// consulted at all, if `config` did not come from it).
    pub fn config(mut self, config: Config) -> DeviceBuilder {
        self.config = config;
        self
    }

    /// Which cache tiers the device uses: [`CacheMode::Memory`] keeps
    /// nothing on disk (tests that count compiles want it).
    pub fn cache_mode(mut self, mode: CacheMode) -> DeviceBuilder {
        self.config = self.config.cache_mode(mode);
        self
    }

    /// Keeps the artifact store in `dir` (and turns the disk tier on).
    pub fn cache_dir(mut self, dir: impl Into<PathBuf>) -> DeviceBuilder {
        self.config = self.config.cache_dir(dir);
        self
    }

    /// Keeps at most `n` modules loaded on the device (at least 1; see
    /// [`CacheConfig::max_loaded_modules`](crate::config::CacheConfig::max_loaded_modules)).
    pub fn max_loaded_modules(mut self, n: usize) -> DeviceBuilder {
        self.config = self.config.max_loaded_modules(n);
        self
    }

    /// Compiles CPU kernels with `program` (a C++20 compiler command).
    pub fn compiler(mut self, program: impl Into<String>) -> DeviceBuilder {
        self.config = self.config.compiler(program);
        self
    }

    /// A CUDA device's own compile options (the configuration's
    /// `nvrtc_flags` still follow them).
    pub fn cuda_options(mut self, options: CudaCompileOptions) -> DeviceBuilder {
        self.config = self.config.cuda_options(options);
        self
    }

    /// Opens a new CPU device.
    pub fn cpu(self) -> Result<Device> {
        Ok(Device::open_cpu(&self.config))
    }

    /// NVTX ranges around compiles, loads and launches (`KERNELKIT_NVTX`):
    /// on for the whole process once a device is opened with them.
    pub fn nvtx(mut self, on: bool) -> DeviceBuilder {
        self.config = self.config.nvtx(on);
        self
    }

    /// Opens a new CPU device that compiles for the portable level `target`
    /// (`x86-64-v2`, `x86-64-v3`, `x86-64-v4`, `x86-64`; `native` is
    /// [`DeviceBuilder::cpu`]) instead of this machine's CPU: its
    /// artifacts load on any CPU that runs the level (see
    /// `kernelkit precompile --device cpu --target`). It runs kernels too,
    /// when this CPU runs the level.
    pub fn cpu_target(self, target: &str) -> Result<Device> {
        Device::open_cpu_target(&self.config, target)
    }

    /// Opens a new null device (see [`Device::new_null`]) with `options`.
    pub fn null(self, options: crate::NullOptions) -> Device {
        crate::nvtx::configure(&self.config.nvtx);
        Device::open_null(options, &self.config.cache)
    }

    /// Opens a new device for CUDA GPU `ordinal`: an error, never a panic,
    /// without the `cuda` feature or when the driver, NVRTC or the GPU is
    /// missing.
    pub fn cuda(self, ordinal: u32) -> Result<Device> {
        Device::open_cuda(ordinal, &self.config)
    }
}
