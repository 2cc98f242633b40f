//! The CUDA backend: NVRTC compiles each variant to a cubin for the device's
//! own architecture, the driver API (through cudarc's raw bindings, loaded
//! at run time) loads and launches it.
//!
//! - `probe`: the libraries and symbols are checked before any call, so a
//!   machine without CUDA gets a typed error, never a panic.
//! - `compile`: NVRTC options, the architecture, the module-key options.
//! - `load`: modules and functions (resolved once, kept by the variant).
//! - `memory`: streams, device memory with a per-stream cache, copies,
//!   fills and the built-in gather kernel.
//! - `launch`: arguments marshalled on the stack, one `cuLaunchKernel`.
//! - `worker`: compile worker processes, so that compiles of distinct
//!   kernels from many threads run in parallel (NVRTC serializes them
//!   inside one process).
//!
//! Unsafe code is confined to FFI calls, each with a `// SAFETY:` comment.
//! Every driver call is made with the device's primary context current on
//! the calling thread ([`Context::bind`], a thread-local check).

mod compile;
mod launch;
mod load;
mod memory;
mod probe;
pub(crate) mod worker;

use std::cell::Cell;
use std::ffi::{c_char, CStr};
use std::sync::{Arc, OnceLock};

use cudarc::driver::sys;

use crate::array::{Array, Place};
use crate::backend::{
    Backend, Buffer, Dispatch, LaunchJob, Limits, Module, SharedBuffer, StreamHandle,
};
use crate::codegen::Dialect;
use crate::device::Stream;
use crate::dtype::DType;
use std::time::{Duration, Instant};

use crate::error::{CompileError, DeviceError, Result};
use crate::kernel::outputs::Outputs;
use crate::kernel::variant::{Function, Variant};
use crate::options::CudaCompileOptions;

pub(crate) use load::CudaFunction;
pub(crate) use memory::{recycle, CudaStream, DeviceMem};
pub(crate) use probe::cuda_homes;

/// A driver call's result as a typed error naming the device and call.
pub(super) fn check(
    result: sys::CUresult,
    device: &str,
    operation: &'static str,
) -> Result<(), DeviceError> {
    if result == sys::CUresult::CUDA_SUCCESS {
        return Ok(());
    }
    Err(driver_error(result, device, operation, String::new()))
}

/// The error for a failed driver call; `what` adds context (a kernel name).
pub(super) fn driver_error(
    result: sys::CUresult,
    device: &str,
    operation: &'static str,
    what: String,
) -> DeviceError {
    use sys::CUresult as R;
    let reason = format!("{what}{}", describe(result));
    match result {
        R::CUDA_ERROR_ILLEGAL_ADDRESS
        | R::CUDA_ERROR_LAUNCH_FAILED
        | R::CUDA_ERROR_ILLEGAL_INSTRUCTION
        | R::CUDA_ERROR_MISALIGNED_ADDRESS
        | R::CUDA_ERROR_INVALID_ADDRESS_SPACE
        | R::CUDA_ERROR_INVALID_PC
        | R::CUDA_ERROR_HARDWARE_STACK_ERROR
        | R::CUDA_ERROR_ASSERT => DeviceError::Faulted {
            device: device.to_string(),
            reason: format!("{operation}: {reason}"),
        },
        _ => DeviceError::Driver {
            device: device.to_string(),
            operation,
            reason,
        },
    }
}

/// `CUDA_ERROR_X (text)` for a driver result.
fn describe(result: sys::CUresult) -> String {
    let text = |f: unsafe fn(sys::CUresult, *mut *const c_char) -> sys::CUresult| {
        let mut ptr: *const c_char = std::ptr::null();
        // SAFETY: the driver writes a pointer to a static string, or fails.
        let ok = unsafe { f(result, &mut ptr) } == sys::CUresult::CUDA_SUCCESS;
        if ok && !ptr.is_null() {
            // SAFETY: a NUL-terminated static string owned by the driver.
            unsafe { CStr::from_ptr(ptr) }
                .to_string_lossy()
                .into_owned()
        } else {
            format!("{result:?}")
        }
    };
    format!(
        "{} ({})",
        text(sys::cuGetErrorName),
        text(sys::cuGetErrorString)
    )
}

thread_local! {
    /// The context kernelkit last made current on this thread.
    static CURRENT: Cell<usize> = const { Cell::new(0) };
}

/// A device's primary context, retained for the backend's life.
pub(super) struct Context {
    raw: sys::CUcontext,
    device: sys::CUdevice,
    /// `cuda:N`.
    pub(super) label: String,
}

// SAFETY: a CUcontext is a handle the driver lets any thread use.
unsafe impl Send for Context {}
// SAFETY: as above; the handle is never mutated.
unsafe impl Sync for Context {}

impl Context {
    /// Makes this context current on the calling thread, unless kernelkit
    /// already did (a thread-local comparison on the hot path). Code that
    /// changes the current context behind kernelkit's back on a thread it
    /// also uses must restore it.
    #[inline]
    pub(super) fn bind(&self) -> Result<(), DeviceError> {
        let raw = self.raw as usize;
        if CURRENT.with(Cell::get) == raw {
            return Ok(());
        }
        // SAFETY: `raw` is a retained primary context.
        check(
            unsafe { sys::cuCtxSetCurrent(self.raw) },
            &self.label,
            "cuCtxSetCurrent",
        )?;
        CURRENT.with(|c| c.set(raw));
        Ok(())
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: releases the retain taken in `open`; forgets the cached
        // binding, since the context may be destroyed now.
        unsafe {
            sys::cuDevicePrimaryCtxRelease_v2(self.device);
        }
        CURRENT.with(|c| {
            if c.get() == self.raw as usize {
                c.set(0)
            }
        });
    }
}

/// One device attribute.
fn attribute(device: sys::CUdevice, attr: sys::CUdevice_attribute, label: &str) -> Result<i32> {
    let mut v = 0i32;
    // SAFETY: writes one int.
    check(
        unsafe { sys::cuDeviceGetAttribute(&mut v, attr, device) },
        label,
        "cuDeviceGetAttribute",
    )?;
    Ok(v)
}

/// See the module documentation.
pub(crate) struct CudaBackend {
    ctx: Arc<Context>,
    nvrtc: compile::Nvrtc,
    allocator: Arc<memory::Allocator>,
    gather: OnceLock<Result<memory::Gather, String>>,
    limits: Limits,
    description: String,
    warp: u32,
    /// The first fault (an illegal address, a trap) seen on this device.
    /// A fault ruins the CUDA context for good: every later operation
    /// reports it at once instead of reaching the driver.
    fault: OnceLock<String>,
}

impl CudaBackend {
    /// Runs a device operation unless the device has faulted; latches the
    /// fault if this operation reports one.
    fn guarded<T>(&self, op: impl FnOnce() -> Result<T>) -> Result<T> {
        if let Some(reason) = self.fault.get() {
            return Err(DeviceError::Faulted {
                device: self.ctx.label.clone(),
                reason: format!("an earlier operation failed: {reason}"),
            }
            .into());
        }
        let out = op();
        if let Err(crate::Error::Device(DeviceError::Faulted { reason, .. })) = &out {
            let _ = self.fault.set(reason.clone());
        }
        out
    }
}

impl CudaBackend {
    /// Opens GPU `ordinal`: checks the libraries, initializes the driver,
    /// retains the primary context, reads the limits, prepares NVRTC.
    pub(crate) fn open(ordinal: u32, options: &CudaCompileOptions) -> Result<Box<dyn Backend>> {
        let label = format!("cuda:{ordinal}");
        let unavailable = |reason: String| DeviceError::Unavailable {
            device: label.clone(),
            reason,
        };
        let libs = probe::libraries().map_err(unavailable)?;
        // A second guard: the probe should leave nothing that panics.
        match std::panic::catch_unwind(|| CudaBackend::open_checked(ordinal, options, libs)) {
            Ok(r) => r.map(|b| Box::new(b) as Box<dyn Backend>),
            Err(_) => {
                Err(unavailable("the CUDA libraries failed while opening the device".into()).into())
            }
        }
    }

    fn open_checked(
        ordinal: u32,
        options: &CudaCompileOptions,
        libs: &probe::Libraries,
    ) -> Result<CudaBackend> {
        use sys::CUdevice_attribute as A;
        let label = format!("cuda:{ordinal}");
        let unavailable = |reason: String| DeviceError::Unavailable {
            device: label.clone(),
            reason,
        };
        // SAFETY: plain driver initialization, idempotent.
        let init = unsafe { sys::cuInit(0) };
        if init != sys::CUresult::CUDA_SUCCESS {
            return Err(unavailable(format!("cuInit failed: {}", describe(init))).into());
        }
        let mut count = 0i32;
        // SAFETY: writes one int.
        check(
            unsafe { sys::cuDeviceGetCount(&mut count) },
            &label,
            "cuDeviceGetCount",
        )?;
        if ordinal as i64 >= count as i64 {
            return Err(unavailable(format!("the driver sees {count} GPU(s)")).into());
        }
        let mut device: sys::CUdevice = 0;
        // SAFETY: writes one device handle.
        check(
            unsafe { sys::cuDeviceGet(&mut device, ordinal as i32) },
            &label,
            "cuDeviceGet",
        )?;
        let mut raw: sys::CUcontext = std::ptr::null_mut();
        // SAFETY: retains (creating if needed) the device's primary context;
        // released by `Context::drop`.
        check(
            unsafe { sys::cuDevicePrimaryCtxRetain(&mut raw, device) },
            &label,
            "cuDevicePrimaryCtxRetain",
        )?;
        let ctx = Arc::new(Context {
            raw,
            device,
            label: label.clone(),
        });
        ctx.bind()?;

        let get = |a| attribute(device, a, &label);
        let cc = (
            get(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
            get(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
        );
        let limits = Limits {
            max_threads_per_group: get(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)? as u64,
            max_group_dims: [
                get(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)? as u64,
                get(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y)? as u64,
                get(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)? as u64,
            ],
            max_groups: [
                get(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)? as u64,
                get(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)? as u64,
                get(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)? as u64,
            ],
            max_shared_bytes: get(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)? as u64,
        };
        let warp = get(A::CU_DEVICE_ATTRIBUTE_WARP_SIZE)? as u32;
        let sms = get(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?;
        let pools = libs.has_pools && get(A::CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED)? != 0;

        let mut name = [0 as c_char; 256];
        // SAFETY: writes at most 256 bytes, NUL-terminated.
        check(
            unsafe { sys::cuDeviceGetName(name.as_mut_ptr(), name.len() as i32, device) },
            &label,
            "cuDeviceGetName",
        )?;
        // SAFETY: NUL-terminated by the driver (and the buffer was zeroed).
        let name = unsafe { CStr::from_ptr(name.as_ptr()) }
            .to_string_lossy()
            .into_owned();
        let mut total = 0usize;
        // SAFETY: writes one size.
        check(
            unsafe { sys::cuDeviceTotalMem_v2(&mut total, device) },
            &label,
            "cuDeviceTotalMem",
        )?;
        let mut driver = 0i32;
        // SAFETY: writes one int.
        check(
            unsafe { sys::cuDriverGetVersion(&mut driver) },
            &label,
            "cuDriverGetVersion",
        )?;

        let nvrtc = compile::Nvrtc::new(cc, &options.with_env()).map_err(unavailable)?;
        let allocator = Arc::new(memory::Allocator::new(ctx.clone(), ordinal, pools)?);
        let description = format!(
            "{name} (sm_{}{}, {sms} SMs, {:.0} GiB), driver {}.{}, {}, allocator: {}, {}",
            cc.0,
            cc.1,
            total as f64 / (1u64 << 30) as f64,
            driver / 1000,
            (driver % 1000) / 10,
            nvrtc.describe(),
            allocator.describe(),
            nvrtc.describe_workers(),
        );
        Ok(CudaBackend {
            ctx,
            nvrtc,
            allocator,
            gather: OnceLock::new(),
            limits,
            description,
            warp,
            fault: OnceLock::new(),
        })
    }

    fn stream<'a>(&self, handle: &'a StreamHandle) -> &'a Arc<memory::CudaStream> {
        handle.cuda().expect("CUDA calls get CUDA streams")
    }
}

impl Backend for CudaBackend {
    fn name(&self) -> &'static str {
        "cuda"
    }
    fn dialect(&self) -> Dialect {
        Dialect::Cuda
    }
    fn label(&self) -> &str {
        &self.ctx.label
    }
    fn description(&self) -> String {
        self.description.clone()
    }
    fn supports(&self, _dtype: DType) -> bool {
        true
    }
    fn limits(&self) -> &Limits {
        &self.limits
    }
    fn options(&self) -> &str {
        self.nvrtc.key()
    }
    fn simd_width(&self) -> u32 {
        self.warp
    }
    fn compile(&self, kernel: &str, variant: &Variant) -> Result<Vec<u8>, CompileError> {
        self.nvrtc.compile(kernel, variant)
    }
    fn load(
        &self,
        kernel: &str,
        variant: &Variant,
        artifact: &[u8],
    ) -> Result<Module, CompileError> {
        load::load(&self.ctx, kernel, variant.name(), artifact)
    }
    fn function(
        &self,
        kernel: &str,
        module: &Module,
        name: &str,
    ) -> Result<Function, CompileError> {
        load::function(&self.ctx, kernel, module, name)
    }
    fn new_stream(&self) -> Result<StreamHandle> {
        self.guarded(|| {
            Ok(StreamHandle::Cuda(memory::CudaStream::new(
                self.allocator.clone(),
            )?))
        })
    }
    fn synchronize(&self, stream: &StreamHandle) -> Result<()> {
        self.guarded(|| self.stream(stream).synchronize())
    }
    fn synchronize_timeout(&self, stream: &StreamHandle, timeout: Duration) -> Result<()> {
        self.guarded(|| {
            let stream = self.stream(stream);
            let deadline = Instant::now() + timeout;
            while !stream.finished()? {
                if Instant::now() >= deadline {
                    // A kernel cannot be stopped: nothing on this context is
                    // safe to use after it (as after a fault).
                    let _ = self.fault.set(format!(
                        "work on a stream did not finish within {timeout:?}"
                    ));
                    return Err(DeviceError::TimedOut {
                        device: self.ctx.label.clone(),
                        after: timeout,
                    }
                    .into());
                }
                std::thread::sleep(Duration::from_micros(200));
            }
            Ok(())
        })
    }
    fn alloc(&self, len: usize, place: Place) -> Result<SharedBuffer> {
        self.guarded(|| memory::alloc(len, place))
    }
    fn upload(&self, bytes: &[u8], place: Place) -> Result<SharedBuffer> {
        self.guarded(|| memory::upload(bytes, place))
    }
    fn download(
        &self,
        buf: &Buffer,
        offset: usize,
        len: usize,
        stream: &StreamHandle,
    ) -> Result<Vec<u8>> {
        self.guarded(|| memory::download(self.stream(stream), buf, offset, len))
    }
    fn fill(&self, buf: &Buffer, pattern: &[u8], stream: &StreamHandle) -> Result<()> {
        self.guarded(|| memory::fill(self.stream(stream), buf, pattern))
    }
    fn make_contiguous(&self, src: &Array, dst: &Buffer, stream: &StreamHandle) -> Result<()> {
        let gather = self
            .gather
            .get_or_init(|| memory::Gather::build(&self.ctx, &self.nvrtc));
        let gather = gather.as_ref().map_err(|reason| DeviceError::Driver {
            device: self.ctx.label.clone(),
            operation: "building the strided-copy kernel",
            reason: reason.clone(),
        })?;
        self.guarded(|| gather.run(self.stream(stream), src, dst))
    }
    fn dispatch(&self, call: &Dispatch<'_>, stream: &Stream, outputs: &mut Outputs) -> Result<()> {
        self.guarded(|| {
            let cuda = self.stream(stream.handle());
            call.new_outputs(
                stream,
                outputs,
                |len, stream| memory::alloc_output(cuda, len, stream),
                |buf, pattern| memory::fill(cuda, buf, pattern),
            )?;
            launch::launch(&self.ctx, &call.job(outputs), cuda, 1)
        })
    }
    fn launch_raw(&self, job: &LaunchJob<'_>, stream: &StreamHandle, iters: u32) -> Result<()> {
        self.guarded(|| launch::launch(&self.ctx, job, self.stream(stream), iters))
    }
}
