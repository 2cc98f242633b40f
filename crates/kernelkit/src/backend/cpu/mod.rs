//! The CPU backend: generated C++ compiled by the system compiler into a
//! shared library, loaded with `libloading`, threadgroups run in parallel on
//! the rayon pool; the threads of a group one after another, or, when the
//! body synchronises them (barriers, SIMD-group functions), as fibers on
//! stacks this backend lends (`launch.rs`).
//!
//! It is always built, so the whole generic path — memo, caches, codegen,
//! validation — runs and is tested on machines without a GPU.
//!
//! The same files as every backend folder: `compile.rs`, `load.rs`,
//! `memory.rs`, `launch.rs`; and its own: `pch` (the prelude's
//! precompiled header), `depfile` (the compiler's dependency output, for
//! the artifact store's dependency list) and `scratch` (private temporary
//! directories and files for compiles and loads). Imports as the `backend`
//! floor allows.

mod compile;
mod depfile;
mod launch;
mod load;
pub(in crate::backend) mod memory;
mod pch;
pub(crate) mod portable;
mod scratch;

use crate::backend::{
    ArgRef, Backend, CompileJob, Compiled, Function, LaunchDesc, Limits, Memory, Module,
    StreamHandle,
};
use crate::codegen::Dialect;
use crate::config::CpuConfig;
use crate::dtype::DType;
use crate::error::{CompileError, DeviceError, Error, Result};

pub(crate) use compile::Compiler;
pub use compile::FLAGS;
pub(crate) use load::CpuFunction;
pub(crate) use memory::HostMem;

/// See the module documentation.
pub(crate) struct CpuBackend {
    compiler: Compiler,
    limits: Limits,
}

impl CpuBackend {
    /// A backend whose compiler `config` describes.
    pub(crate) fn new(config: &CpuConfig) -> CpuBackend {
        CpuBackend {
            compiler: Compiler::new(config),
            limits: LIMITS,
        }
    }

    /// A backend that compiles for the portable level `target` (see
    /// `portable`); `None` for a level kernelkit does not know.
    pub(crate) fn for_target(config: &CpuConfig, target: &str) -> Option<CpuBackend> {
        Some(CpuBackend {
            compiler: Compiler::for_target(config, target)?,
            limits: LIMITS,
        })
    }
}

/// The CPU backend's launch limits (also the null device's in the CPU
/// dialect): threadgroups of up to 1024 threads, no dynamic shared memory.
pub(in crate::backend) const LIMITS: Limits = Limits {
    max_threads_per_group: 1024,
    max_group_dims: [1024, 1024, 1024],
    max_groups: [u32::MAX as u64; 3],
    max_shared_bytes: 0,
};

impl Backend for CpuBackend {
    fn name(&self) -> &'static str {
        "cpu"
    }
    fn dialect(&self) -> Dialect {
        Dialect::Cpu
    }
    fn label(&self) -> &str {
        "cpu"
    }
    fn description(&self) -> String {
        format!(
            "cpu ({} threads, compiler {})",
            rayon::current_num_threads(),
            self.compiler.describe()
        )
    }
    fn supports(&self, _dtype: DType) -> bool {
        true
    }
    fn limits(&self) -> &Limits {
        &self.limits
    }
    fn identity(&self) -> &str {
        self.compiler.artifact_identity()
    }
    fn target(&self) -> &str {
        self.compiler.target()
    }
    fn fallback_identities(&self) -> &[(String, String)] {
        // A native device also takes bundled portable artifacts its CPU
        // runs (best first); a portable one is what it is.
        if self.compiler.target() == "native" {
            portable::runnable()
        } else {
            &[]
        }
    }
    fn simd_width(&self) -> u32 {
        32
    }
    fn compile(&self, job: &CompileJob<'_>) -> Result<Compiled, CompileError> {
        self.compiler.compile(job)
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
        memory::alloc(len).ok_or_else(|| out_of_memory(len))
    }
    fn upload(&self, bytes: &[u8], _home: &StreamHandle) -> Result<Memory> {
        let mem = memory::alloc(bytes.len()).ok_or_else(|| out_of_memory(bytes.len()))?;
        memory::write(&mem, 0, bytes);
        Ok(mem)
    }
    fn download(
        &self,
        mem: &Memory,
        offset: usize,
        len: usize,
        _stream: &StreamHandle,
    ) -> Result<Vec<u8>> {
        memory::read(mem, offset, len).ok_or_else(|| out_of_memory(len))
    }
    fn fill(&self, mem: &Memory, pattern: &[u8], _stream: &StreamHandle) -> Result<()> {
        memory::fill(mem, pattern);
        Ok(())
    }
    fn gather(
        &self,
        src: &ArgRef<'_>,
        dst: &Memory,
        _stream: &StreamHandle,
        _function: Option<&Function>,
    ) -> Result<()> {
        // On the host: no kernel (`copy_kernel` names none).
        memory::gather(src, dst);
        Ok(())
    }
    fn launch(&self, launch: &LaunchDesc<'_>) -> Result<()> {
        launch::launch(launch, self.simd_width())
    }
}

/// The error for an allocation the system refused.
fn out_of_memory(len: usize) -> Error {
    DeviceError::Driver {
        device: "cpu".into(),
        operation: "allocate",
        reason: format!("the system cannot provide {len} bytes of host memory"),
    }
    .into()
}
