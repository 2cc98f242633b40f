//! The CPU backend: generated C++ compiled by the system compiler into a
//! shared library, loaded with `libloading`, threadgroups run in parallel on
//! the rayon pool; the threads of a group one after another, or, when the
//! body synchronises them (barriers, SIMD-group functions), as fibers on
//! stacks this backend lends (`launch.rs`).
//!
//! It is always built, so the whole generic path — memo, caches, codegen,
//! validation — runs and is tested on machines without a GPU.

mod compile;
mod launch;
mod load;
mod memory;
mod pch;

use crate::array::{Array, Place};
use crate::backend::{
    Backend, Buffer, Dispatch, LaunchJob, Limits, Module, SharedBuffer, StreamHandle,
};
use crate::codegen::Dialect;
use crate::device::Stream;
use crate::dtype::DType;
use crate::error::{CompileError, DeviceError, Error, Result};
use crate::kernel::outputs::Outputs;
use crate::kernel::variant::{Function, Variant};

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
    pub(crate) fn new() -> CpuBackend {
        CpuBackend::from_compiler(Compiler::from_env())
    }

    pub(crate) fn with_compiler(program: String) -> CpuBackend {
        CpuBackend::from_compiler(Compiler::with_program(program))
    }

    fn from_compiler(compiler: Compiler) -> CpuBackend {
        CpuBackend {
            compiler,
            limits: Limits {
                max_threads_per_group: 1024,
                max_group_dims: [1024, 1024, 1024],
                max_groups: [u32::MAX as u64; 3],
                max_shared_bytes: 0,
            },
        }
    }
}

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
    fn options(&self) -> &str {
        self.compiler.options()
    }
    fn artifact_identity(&self) -> &str {
        self.compiler.artifact_identity()
    }
    fn simd_width(&self) -> u32 {
        32
    }
    fn compile(&self, kernel: &str, variant: &Variant) -> Result<Vec<u8>, CompileError> {
        self.compiler.compile(kernel, variant)
    }
    fn load(
        &self,
        kernel: &str,
        variant: &Variant,
        artifact: &[u8],
    ) -> Result<Module, CompileError> {
        load::load(kernel, variant, artifact)
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
    fn alloc(&self, len: usize, place: Place) -> Result<SharedBuffer> {
        memory::alloc(len, place).ok_or_else(|| out_of_memory(len))
    }
    fn upload(&self, bytes: &[u8], place: Place) -> Result<SharedBuffer> {
        let buf = memory::alloc(bytes.len(), place).ok_or_else(|| out_of_memory(bytes.len()))?;
        memory::write(&buf, 0, bytes);
        Ok(buf)
    }
    fn download(
        &self,
        buf: &Buffer,
        offset: usize,
        len: usize,
        _stream: &StreamHandle,
    ) -> Result<Vec<u8>> {
        Ok(memory::read(buf, offset, len))
    }
    fn fill(&self, buf: &Buffer, pattern: &[u8], _stream: &StreamHandle) -> Result<()> {
        memory::fill(buf, pattern);
        Ok(())
    }
    fn make_contiguous(&self, src: &Array, dst: &Buffer, _stream: &StreamHandle) -> Result<()> {
        memory::gather(src, dst);
        Ok(())
    }
    fn dispatch(&self, call: &Dispatch<'_>, stream: &Stream, outputs: &mut Outputs) -> Result<()> {
        call.new_outputs(
            stream,
            outputs,
            |len, stream| {
                memory::alloc(len, Place::Queued(stream.clone())).ok_or_else(|| out_of_memory(len))
            },
            |buf, pattern| {
                memory::fill(buf, pattern);
                Ok(())
            },
        )?;
        launch::launch(&call.job(outputs), self.simd_width(), 1)
    }
    fn launch_raw(&self, job: &LaunchJob<'_>, _stream: &StreamHandle, iters: u32) -> Result<()> {
        launch::launch(job, self.simd_width(), iters)
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
