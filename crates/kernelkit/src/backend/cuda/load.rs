//! Loads cubins into modules and resolves functions, once each.
//!
//! A module lives as long as the device's kernel cache and every function
//! resolved from it (each [`CudaFunction`] holds its module), so queued work
//! never runs unloaded code. Functions are resolved once per variant and
//! device and kept by the variant: no launch looks a function up.

use std::ffi::CString;
use std::sync::atomic::AtomicU32;
use std::sync::Arc;

use cudarc::driver::sys;

use super::{driver_error, Context};
use crate::backend::Module;
use crate::error::CompileError;
use crate::kernel::variant::Function;

/// A loaded CUDA module.
pub(super) struct CudaModule {
    pub(super) raw: sys::CUmodule,
    ctx: Arc<Context>,
}

// SAFETY: module handles may be used from any thread of the process.
unsafe impl Send for CudaModule {}
// SAFETY: as above; the handle is never mutated.
unsafe impl Sync for CudaModule {}

impl Drop for CudaModule {
    fn drop(&mut self) {
        if self.ctx.bind().is_ok() {
            // SAFETY: the last owner is gone (no function of it remains), so
            // nothing can launch it any more; waiting for the context makes
            // sure nothing already queued still runs it.
            unsafe {
                sys::cuCtxSynchronize();
                sys::cuModuleUnload(self.raw);
            }
        }
    }
}

/// A resolved kernel function, plus the largest dynamic shared memory size
/// it has been allowed so far (see `launch`).
pub(crate) struct CudaFunction {
    pub(super) raw: sys::CUfunction,
    pub(super) max_dynamic_shared: AtomicU32,
    _module: Module,
}

// SAFETY: function handles may be used from any thread; the attribute
// setting is guarded by the atomic.
unsafe impl Send for CudaFunction {}
// SAFETY: as above.
unsafe impl Sync for CudaFunction {}

/// Loads a cubin (or NUL-terminated PTX).
pub(super) fn load(
    ctx: &Arc<Context>,
    kernel: &str,
    function: &str,
    artifact: &[u8],
) -> Result<Module, CompileError> {
    let fail = |reason: String| CompileError::Load {
        kernel: kernel.to_string(),
        function: function.to_string(),
        reason,
    };
    ctx.bind().map_err(|e| fail(e.to_string()))?;
    let mut raw: sys::CUmodule = std::ptr::null_mut();
    // SAFETY: `artifact` is a cubin or NUL-terminated PTX image that NVRTC
    // produced (or the artifact store returned after its checks); the driver
    // copies it.
    let r = unsafe { sys::cuModuleLoadData(&mut raw, artifact.as_ptr().cast()) };
    if r != sys::CUresult::CUDA_SUCCESS {
        return Err(fail(
            driver_error(r, &ctx.label, "cuModuleLoadData", String::new()).to_string(),
        ));
    }
    Ok(Arc::new(CudaModule {
        raw,
        ctx: ctx.clone(),
    }))
}

/// Resolves `name` in a loaded module.
pub(super) fn function(
    ctx: &Arc<Context>,
    kernel: &str,
    module: &Module,
    name: &str,
) -> Result<Function, CompileError> {
    let fail = |reason: String| CompileError::Load {
        kernel: kernel.to_string(),
        function: name.to_string(),
        reason,
    };
    let cuda = module
        .downcast_ref::<CudaModule>()
        .ok_or_else(|| fail("the module is not a CUDA module".into()))?;
    Ok(Function::Cuda(Arc::new(
        resolve(ctx, cuda, name)
            .map_err(fail)?
            .with_module(module.clone()),
    )))
}

/// A function handle not yet tied to a shared module.
pub(super) struct Resolved(pub(super) sys::CUfunction);

impl Resolved {
    fn with_module(self, module: Module) -> CudaFunction {
        CudaFunction {
            raw: self.0,
            max_dynamic_shared: AtomicU32::new(48 * 1024),
            _module: module,
        }
    }
}

/// `cuModuleGetFunction`, as a message on failure.
pub(super) fn resolve(ctx: &Context, module: &CudaModule, name: &str) -> Result<Resolved, String> {
    ctx.bind().map_err(|e| e.to_string())?;
    let cname = CString::new(name).map_err(|_| "the name contains a NUL byte".to_string())?;
    let mut raw: sys::CUfunction = std::ptr::null_mut();
    // SAFETY: the module is loaded; `cname` is NUL-terminated.
    let r = unsafe { sys::cuModuleGetFunction(&mut raw, module.raw, cname.as_ptr()) };
    if r != sys::CUresult::CUDA_SUCCESS {
        return Err(driver_error(r, &ctx.label, "cuModuleGetFunction", String::new()).to_string());
    }
    Ok(Resolved(raw))
}
