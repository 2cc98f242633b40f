//! A compile-only CUDA backend: NVRTC for a named architecture, and no GPU
//! (`kernelkit precompile --arch sm_90a`). It compiles exactly as a device
//! of that architecture would (same options, same identity, so the same
//! keys), and runs nothing: its memory, streams and launches are the null
//! backend's, and "loading" keeps the source (nothing here can load a
//! cubin). Only precompiling uses it.

use crate::backend::copy::{BuiltinKernel, STRIDED_COPY};
use crate::backend::null::{NullBackend, NullOptions};
use crate::backend::{
    ArgRef, Backend, CompileJob, Compiled, Function, LaunchDesc, Limits, Memory, Module,
    StreamHandle,
};
use crate::codegen::Dialect;
use crate::config::CudaConfig;
use crate::dtype::DType;
use crate::error::{CompileError, Result};

use super::compile::Nvrtc;

/// See the module documentation.
pub(crate) struct CompileOnly {
    nvrtc: Nvrtc,
    null: NullBackend,
    label: String,
}

impl CompileOnly {
    /// NVRTC (found as `config` says) for `target` (`sm_90a`, `compute_90`),
    /// and NVRTC's version (`nvrtc 12.8`).
    pub(crate) fn open(target: &str, config: &CudaConfig) -> Result<(CompileOnly, String), String> {
        let nvrtc = Nvrtc::for_target(target, config)?;
        let version = nvrtc.version_name();
        Ok((
            CompileOnly {
                nvrtc,
                null: NullBackend::new(NullOptions::default().dialect(Dialect::Cuda)),
                label: format!("cuda ({target}, compile only)"),
            },
            version,
        ))
    }
}

impl Backend for CompileOnly {
    fn name(&self) -> &'static str {
        "cuda"
    }
    fn dialect(&self) -> Dialect {
        Dialect::Cuda
    }
    fn label(&self) -> &str {
        &self.label
    }
    fn description(&self) -> String {
        format!("{} ({})", self.label, self.nvrtc.describe())
    }
    fn supports(&self, _dtype: DType) -> bool {
        true
    }
    fn limits(&self) -> &Limits {
        self.null.limits()
    }
    fn identity(&self) -> &str {
        self.nvrtc.identity()
    }
    fn target(&self) -> &str {
        self.nvrtc.target()
    }
    fn simd_width(&self) -> u32 {
        32
    }
    fn compile(&self, job: &CompileJob<'_>) -> std::result::Result<Compiled, CompileError> {
        self.nvrtc.compile(job)
    }
    fn load(
        &self,
        job: &CompileJob<'_>,
        _artifact: &[u8],
    ) -> std::result::Result<Module, CompileError> {
        self.null.load(job, job.source.as_bytes())
    }
    fn function(
        &self,
        kernel: &str,
        module: &Module,
        name: &str,
    ) -> std::result::Result<Function, CompileError> {
        self.null.function(kernel, module, name)
    }
    fn new_stream(&self) -> Result<StreamHandle> {
        self.null.new_stream()
    }
    fn synchronize(&self, stream: &StreamHandle) -> Result<()> {
        self.null.synchronize(stream)
    }
    fn alloc(&self, len: usize, home: &StreamHandle) -> Result<Memory> {
        self.null.alloc(len, home)
    }
    fn upload(&self, bytes: &[u8], home: &StreamHandle) -> Result<Memory> {
        self.null.upload(bytes, home)
    }
    fn download(
        &self,
        mem: &Memory,
        offset: usize,
        len: usize,
        stream: &StreamHandle,
    ) -> Result<Vec<u8>> {
        self.null.download(mem, offset, len, stream)
    }
    fn fill(&self, mem: &Memory, pattern: &[u8], stream: &StreamHandle) -> Result<()> {
        self.null.fill(mem, pattern, stream)
    }
    fn copy_kernel(&self) -> Option<&'static BuiltinKernel> {
        // Precompiled for a GPU of this architecture, as a GPU needs it.
        Some(&STRIDED_COPY)
    }
    fn gather(
        &self,
        src: &ArgRef<'_>,
        dst: &Memory,
        stream: &StreamHandle,
        function: Option<&Function>,
    ) -> Result<()> {
        self.null.gather(src, dst, stream, function)
    }
    fn launch(&self, launch: &LaunchDesc<'_>) -> Result<()> {
        self.null.launch(launch)
    }
}
