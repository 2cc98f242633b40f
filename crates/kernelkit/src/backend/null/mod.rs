//! The null backend: a device that runs nothing. It generates sources in
//! the dialect it is given, "compiles" one by keeping its bytes as the
//! artifact, loads it, resolves functions by name, gives arrays host
//! memory, and *records* each launch ([`LaunchRecord`]) instead of running
//! it. Its streams order nothing (there is no work to order).
//!
//! Why it exists: everything between a call and the backend — the variant
//! memo and the thread's recent variants, the checks, the module resolver
//! with its single flight and its artifact tiers, output allocation and
//! dispatch — is generic, and with the null backend it runs, and is
//! tested, where no C++ compiler and no GPU are at hand. A program that
//! uses kernelkit can test its own calls the same way: which kernels it
//! launches, with what grid, arrays and layouts (`Device::new_null`).
//!
//! Of the CUDA dialect, it stands in for a GPU in one more way: it names
//! the GPU's strided-copy kernel (`backend::copy`), whose module the floors
//! above resolve and "compile" like any variant's, and its strided copies
//! (on the host) refuse to run without that kernel's entry point of the
//! right element size, loaded.
//!
//! What it cannot tell: what a kernel computes. Outputs hold zeros, or the
//! call's `init_value` fill. A source that holds an `#error` line outside
//! any conditional block is rejected, as a preprocessor would reject it, so
//! that compile failures can be tested too; nothing else is checked. A
//! compile may be given a duration ([`NullOptions::compile_time`]), so that
//! threads asking for one module meet while it is being built, as they do
//! on a real compiler: without it, single flight is rarely exercised.
//!
//! The same files as the other backends: `compile.rs`, `load.rs`,
//! `memory.rs`, `launch.rs`.

mod compile;
mod launch;
mod load;
mod memory;

use std::time::Duration;

use crate::backend::copy::{BuiltinKernel, STRIDED_COPY};
use crate::backend::{
    ArgRef, Backend, CompileJob, Compiled, Function, LaunchDesc, Limits, Memory, Module,
    StreamHandle,
};
use crate::codegen::Dialect;
use crate::dtype::DType;
use crate::error::{CompileError, Result};

pub(crate) use launch::LaunchLog;
pub use launch::{ArgRecord, LaunchRecord};
pub(crate) use load::NullFunction;

/// How a null device behaves: the dialect it generates and how long a
/// compile takes. `NullOptions::default()`: the CPU's dialect, compiles
/// that take no time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct NullOptions {
    /// The dialect sources are generated in; it also picks the device's
    /// limits and the dialect's checks (see `Device::new_null_with`).
    pub dialect: Dialect,
    /// How long each compile takes (the thread sleeps, outside every lock,
    /// as it would wait for a compiler).
    pub compile_time: Duration,
}

impl Default for NullOptions {
    fn default() -> NullOptions {
        NullOptions {
            dialect: Dialect::Cpu,
            compile_time: Duration::ZERO,
        }
    }
}

impl NullOptions {
    /// Generates `dialect`.
    pub fn dialect(mut self, dialect: Dialect) -> NullOptions {
        self.dialect = dialect;
        self
    }

    /// Makes each compile take `time`.
    pub fn compile_time(mut self, time: Duration) -> NullOptions {
        self.compile_time = time;
        self
    }
}

/// See the module documentation.
pub(crate) struct NullBackend {
    dialect: Dialect,
    compile_time: Duration,
    limits: Limits,
    identity: String,
    log: LaunchLog,
}

impl NullBackend {
    /// A null backend that generates `dialect`, with the limits of a
    /// typical device of that dialect: the CPU backend's for C++ (no
    /// dynamic shared memory), an H100's for CUDA (227 KiB of shared memory
    /// per block with the opt-in), an Apple GPU's for Metal (32 KiB of
    /// threadgroup memory).
    pub(crate) fn new(options: NullOptions) -> NullBackend {
        let dialect = options.dialect;
        let limits = match dialect {
            Dialect::Cpu => super::cpu::LIMITS,
            Dialect::Cuda => Limits {
                max_threads_per_group: 1024,
                max_group_dims: [1024, 1024, 64],
                max_groups: [(1 << 31) - 1, 65535, 65535],
                max_shared_bytes: 227 << 10,
            },
            Dialect::Metal => Limits {
                max_threads_per_group: 1024,
                max_group_dims: [1024, 1024, 1024],
                max_groups: [u32::MAX as u64; 3],
                max_shared_bytes: 32 << 10,
            },
        };
        NullBackend {
            dialect,
            compile_time: options.compile_time,
            limits,
            // The module key hashes it: null artifacts of one dialect never
            // answer for another's, nor for a real backend's (whose name
            // differs too).
            identity: format!(
                "null backend, {} dialect, source kept as the artifact",
                dialect.name()
            ),
            log: LaunchLog::default(),
        }
    }
}

impl Backend for NullBackend {
    fn name(&self) -> &'static str {
        "null"
    }
    fn dialect(&self) -> Dialect {
        self.dialect
    }
    fn label(&self) -> &str {
        "null"
    }
    fn description(&self) -> String {
        format!(
            "null (runs nothing; {} sources, launches recorded)",
            self.dialect.name()
        )
    }
    fn supports(&self, dtype: DType) -> bool {
        // Metal has no 64-bit floats; every other dialect has every dtype.
        !(self.dialect == Dialect::Metal && dtype == DType::F64)
    }
    fn limits(&self) -> &Limits {
        &self.limits
    }
    fn identity(&self) -> &str {
        &self.identity
    }
    fn target(&self) -> &str {
        "null"
    }
    fn simd_width(&self) -> u32 {
        32
    }
    fn compile(&self, job: &CompileJob<'_>) -> Result<Compiled, CompileError> {
        if !self.compile_time.is_zero() {
            std::thread::sleep(self.compile_time);
        }
        compile::compile(self.dialect, job)
    }
    fn load(&self, job: &CompileJob<'_>, artifact: &[u8]) -> Result<Module, CompileError> {
        load::load(job, artifact)
    }
    fn function(
        &self,
        kernel: &str,
        module: &Module,
        name: &str,
    ) -> Result<Function, CompileError> {
        load::function(kernel, module, name)
    }
    fn new_stream(&self) -> Result<StreamHandle> {
        Ok(StreamHandle::Host)
    }
    fn synchronize(&self, _stream: &StreamHandle) -> Result<()> {
        Ok(())
    }
    fn alloc(&self, len: usize, _home: &StreamHandle) -> Result<Memory> {
        memory::alloc(len)
    }
    fn upload(&self, bytes: &[u8], _home: &StreamHandle) -> Result<Memory> {
        memory::upload(bytes)
    }
    fn download(
        &self,
        mem: &Memory,
        offset: usize,
        len: usize,
        _stream: &StreamHandle,
    ) -> Result<Vec<u8>> {
        memory::download(mem, offset, len)
    }
    fn fill(&self, mem: &Memory, pattern: &[u8], _stream: &StreamHandle) -> Result<()> {
        memory::fill(mem, pattern);
        Ok(())
    }
    fn copy_kernel(&self) -> Option<&'static BuiltinKernel> {
        // Standing in for a GPU, it needs the GPU's copy kernel resolved
        // as a GPU does (the floors above are tested with it).
        (self.dialect == Dialect::Cuda).then_some(&STRIDED_COPY)
    }
    fn gather(
        &self,
        src: &ArgRef<'_>,
        dst: &Memory,
        _stream: &StreamHandle,
        function: Option<&Function>,
    ) -> Result<()> {
        if self.dialect == Dialect::Cuda {
            launch::check_copy_function(function, src.dtype.size())?;
        }
        memory::gather(src, dst);
        Ok(())
    }
    fn launch(&self, launch: &LaunchDesc<'_>) -> Result<()> {
        self.log.record(launch)
    }
    fn launch_log(&self) -> Option<&LaunchLog> {
        Some(&self.log)
    }
}
