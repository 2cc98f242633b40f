//! Loads cubins into modules and resolves functions, once each.
//!
//! A module lives while its device's kernel cache keeps it (bounded by
//! `max_loaded_modules`, see `cache::kernel_cache`) or a caller holds it:
//! a variant's function slot for this device, or a launch that read that
//! slot (see `cache::loaded`). Its drop, when the last holder lets go,
//! hands it to its context's unloads (`unload`): `cuModuleUnload` comes
//! once events recorded after every launch that may have used it have
//! passed, so queued work never runs unloaded code, and nothing waits for
//! the rest of the context's work (only a device that goes synchronizes).
//! Functions are resolved once per variant and device and kept in the
//! variant's slot beside their module: no launch looks a function up. A
//! `CudaFunction` itself does not keep its module: the slot's `Bound`
//! does, and the device clears the slots when it unloads the module or
//! goes, so a variant never keeps a gone device's module or context.

use std::ffi::CString;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use super::driver::{self, RawFunction, RawModule};
use super::Context;
use crate::backend::Function;
use crate::backend::Module;
use crate::error::CompileError;
use crate::sync::RaisedLimit;

/// Dynamic shared memory a block may use without raising a function's
/// limit (the driver's default for `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`).
pub(super) const DEFAULT_DYNAMIC_SHARED: u32 = 48 * 1024;

/// A loaded CUDA module.
pub(crate) struct CudaModule {
    pub(super) raw: RawModule,
    ctx: Arc<Context>,
    /// The dynamic shared memory limit of each function resolved from this
    /// module, by `CUfunction`: the attribute belongs to the driver's
    /// function, and one function can be resolved into several
    /// [`CudaFunction`]s (two threads resolving it at once, a variant
    /// rebuilt after a memo clear), which must all see one limit.
    limits: Mutex<Vec<(usize, Arc<RaisedLimit>)>>,
    /// [`FREE`], then for good either [`PINNED`] (a function of this
    /// module was launched into a CUDA graph being captured: the graph may
    /// replay it at any later time, so it must not be unloaded) or
    /// [`RETIRED`] (the bounded module cache let it go: it is unloaded
    /// when its last holder drops it, so no capture may take it). One word
    /// decided by compare-and-swap, shared with every [`CudaFunction`]
    /// resolved from the module, so a capture and an unload never both win.
    pub(super) state: Arc<AtomicU8>,
}

/// A module neither pinned nor retired.
const FREE: u8 = 0;
/// A module a captured graph may launch: never unloaded.
const PINNED: u8 = 1;
/// A module the cache unloads once its holders let go.
const RETIRED: u8 = 2;

impl CudaModule {
    /// Marks the module retired unless a capture pinned it (then false):
    /// see [`CudaModule::state`].
    pub(crate) fn retire(&self) -> bool {
        match self
            .state
            .compare_exchange(FREE, RETIRED, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => true,
            Err(now) => now == RETIRED,
        }
    }
}

impl Drop for CudaModule {
    fn drop(&mut self) {
        if self.ctx.bind().is_ok() {
            // The last owner is gone (no slot or launch holds it), so
            // nothing can launch it any more; it is unloaded once the
            // fences recorded after its launches pass (at once if they
            // have), without waiting here (see `unload`).
            self.ctx.unloads.unload(self.raw, &self.ctx.label);
        }
    }
}

/// A resolved kernel function, plus the dynamic shared memory size its
/// driver function allows (shared by every `CudaFunction` of that
/// `CUfunction`; see `launch`). Valid while its device lives (see the
/// module documentation).
pub(crate) struct CudaFunction {
    pub(super) raw: RawFunction,
    /// Raised by any thread, one raise at a time.
    pub(super) dynamic_shared: Arc<RaisedLimit>,
    /// The generated function's name, for messages.
    pub(crate) name: Box<str>,
    /// What the compiled function allows a launch (its registers can make
    /// its most threads per block fewer than the device's).
    pub(super) limits: driver::FunctionLimits,
    /// Its module's [`CudaModule::state`].
    module_state: Arc<AtomicU8>,
}

impl CudaFunction {
    /// Pins this function's module before it is launched into a graph
    /// being captured (see [`CudaModule::state`]); false when the module
    /// was retired already (the launch must not be captured: the graph
    /// would outlive the module).
    #[cold]
    #[inline(never)]
    pub(super) fn pin_module(&self) -> bool {
        match self
            .module_state
            .compare_exchange(FREE, PINNED, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => true,
            Err(now) => now == PINNED,
        }
    }
}

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
    // A cold path: unloads whose fences passed since are done now.
    ctx.unloads.reap(&ctx.label);
    // A load is not captured work: in the relaxed capture mode, so that a
    // capture that another thread runs in the global mode stays valid.
    let raw = {
        let _relaxed = driver::RelaxedCapture::enter();
        driver::module_load(artifact, &ctx.label)
    }
    .map_err(|e| fail(e.to_string()))?;
    Ok(Arc::new(CudaModule {
        raw,
        ctx: ctx.clone(),
        limits: Mutex::new(Vec::new()),
        state: Arc::new(AtomicU8::new(FREE)),
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
    let raw = resolve(ctx, cuda, name).map_err(fail)?.0;
    let limits = driver::function_limits(raw, &ctx.label).map_err(|e| fail(e.to_string()))?;
    Ok(Function::Cuda(Arc::new(CudaFunction {
        raw,
        dynamic_shared: cuda.limit_of(raw),
        name: name.into(),
        limits,
        module_state: cuda.state.clone(),
    })))
}

impl CudaModule {
    /// The dynamic shared memory limit of `function`, one per `CUfunction`.
    fn limit_of(&self, function: RawFunction) -> Arc<RaisedLimit> {
        let mut limits = self.limits.lock().unwrap_or_else(|p| p.into_inner());
        let key = function.addr();
        if let Some((_, limit)) = limits.iter().find(|(k, _)| *k == key) {
            return limit.clone();
        }
        let limit = Arc::new(RaisedLimit::new(DEFAULT_DYNAMIC_SHARED));
        limits.push((key, limit.clone()));
        limit
    }
}

/// A function handle not yet tied to a shared module.
pub(super) struct Resolved(pub(super) RawFunction);

/// `cuModuleGetFunction`, as a message on failure.
pub(super) fn resolve(ctx: &Context, module: &CudaModule, name: &str) -> Result<Resolved, String> {
    ctx.bind().map_err(|e| e.to_string())?;
    let cname = CString::new(name).map_err(|_| "the name contains a NUL byte".to_string())?;
    driver::module_function(module.raw, &cname, &ctx.label)
        .map(Resolved)
        .map_err(|e| e.to_string())
}
