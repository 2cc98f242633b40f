//! Loads a compiled shared library and resolves its entry point.

use std::ffi::c_void;
use std::sync::Arc;

use crate::backend::{CompileJob, Function, Module};
use crate::error::CompileError;

/// The launch description the generated entry point reads (`kk_launch` in
/// the prelude; the layouts must match).
#[repr(C)]
pub(super) struct KkLaunch {
    pub(super) grid: [u32; 3],
    pub(super) tg: [u32; 3],
    pub(super) groups: [u32; 3],
    pub(super) simd: u32,
    pub(super) group_begin: u64,
    pub(super) group_end: u64,
    /// Fiber stacks for bodies that synchronise (null otherwise).
    pub(super) stacks: *mut u8,
    pub(super) stack_stride: u64,
    pub(super) stack_guard: u64,
    pub(super) stack_count: u32,
    /// Misuse the generated code reports (see `kk_launch` in the prelude).
    pub(super) status: *const std::sync::atomic::AtomicU32,
}

/// `extern "C" void NAME(void* const* args, const kk_launch* launch)`.
pub(super) type Entry = unsafe extern "C" fn(*const *mut c_void, *const KkLaunch);

/// A loaded library. Never unloaded while a function from it exists.
pub(super) struct CpuModule {
    library: libloading::Library,
}

/// A resolved entry point and the library that holds its code.
pub(crate) struct CpuFunction {
    pub(super) entry: Entry,
    /// The generated function's name.
    pub(crate) name: Box<str>,
    _module: Module,
}

pub(super) fn load(job: &CompileJob<'_>, artifact: &[u8]) -> Result<Module, CompileError> {
    let fail = |reason: String| CompileError::Load {
        kernel: job.kernel.to_string(),
        function: job.function.to_string(),
        reason,
    };
    // dlopen needs a file: write the bytes to a private temporary file (mode
    // 0600 in a fresh directory of mode 0700), open it, and remove it; the
    // mapping stays.
    let dir = super::scratch::private_dir("kernelkit-so-")
        .map_err(|e| fail(format!("cannot create a temporary directory: {e}")))?;
    let path = dir.path().join("kernel.so");
    super::scratch::write_private(&path, artifact)
        .map_err(|e| fail(format!("cannot write the library: {e}")))?;
    // SAFETY: loading a library runs its initializers. The library is one
    // kernelkit generated and compiled (or read back from the artifact store
    // after its checksum and ownership checks); its only initializers are
    // those of the C++ standard headers the prelude includes.
    let library = unsafe { libloading::Library::new(&path) }.map_err(|e| fail(e.to_string()))?;
    Ok(Arc::new(CpuModule { library }))
}

pub(super) fn function(
    kernel: &str,
    module: &Module,
    name: &str,
) -> Result<Function, CompileError> {
    let fail = |reason: String| CompileError::Load {
        kernel: kernel.to_string(),
        function: name.to_string(),
        reason,
    };
    let cpu = module
        .downcast_ref::<CpuModule>()
        .ok_or_else(|| fail("the module is not a CPU module".into()))?;
    // SAFETY: the symbol is the generated entry point, whose C signature is
    // exactly `Entry` (see `codegen::cpu`); the pointer is kept together
    // with an `Arc` of its library, so it never outlives the code.
    let entry: Entry = unsafe {
        let symbol: libloading::Symbol<'_, Entry> = cpu
            .library
            .get(name.as_bytes())
            .map_err(|e| fail(e.to_string()))?;
        *symbol
    };
    Ok(Function::Cpu(Arc::new(CpuFunction {
        entry,
        name: name.into(),
        _module: module.clone(),
    })))
}
