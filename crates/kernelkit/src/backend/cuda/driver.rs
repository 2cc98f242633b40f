//! The CUDA driver API, each call behind a small safe function: the only
//! place of the backend that calls `cudarc::driver::sys` (cudarc's raw
//! bindings) and the only `unsafe` code of the backend but one (the
//! kernel parameters of `launch`, which no wrapper can check).
//!
//! Every wrapper returns the driver's answer as a typed error naming the
//! device (its label, `cuda:N`) and the call ([`DeviceError::Driver`], or
//! [`DeviceError::Faulted`] for the results that mean the context is
//! lost). Handles are small `Copy` types ([`RawStream`], [`RawModule`], ...)
//! that the driver lets any thread use, so the types above hold them
//! without `unsafe impl Send`.
//!
//! What makes the wrappers safe to call with any argument: the driver
//! never dereferences a device address on the host, and checks handles
//! and addresses itself (a wrong one is an error, or at worst a fault of
//! the device's own memory, which the backend latches); host memory is only
//! passed as borrowed slices, and every call that reads or writes one has
//! finished with it before the wrapper returns. Callers must still keep
//! the driver's rules that are about ordering, not memory: the device's
//! context is current on the calling thread (`Context::bind`), and a
//! handle is not used after it was destroyed.
//!
//! The library and its symbols are checked by `probe` before the first
//! call, so none of these calls can reach cudarc's panicking loader.

use std::ffi::{c_char, c_void, CStr};
use std::mem::MaybeUninit;

use cudarc::driver::sys;

use crate::error::DeviceError;

/// The attributes [`device_attribute`] reads.
pub(super) use sys::CUdevice_attribute as DeviceAttribute;

/// Declares a `Copy` handle of the driver that any thread may use.
macro_rules! handle {
    ($(#[$doc:meta])* $name:ident($raw:ty)) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub(super) struct $name($raw);

        // SAFETY: the driver's handles are opaque values that any thread
        // of the process may pass to it (the CUDA programming guide's
        // "Multithreaded programming"); this type only carries the value.
        unsafe impl Send for $name {}
        // SAFETY: as above; the value is never mutated through a shared
        // reference.
        unsafe impl Sync for $name {}

        impl $name {
            /// The handle's value, as an identity (never dereferenced).
            #[allow(dead_code)] // Not every handle is compared by value.
            pub(super) fn addr(self) -> usize {
                self.0 as usize
            }
        }
    };
}

handle!(
    /// A `CUcontext`.
    RawContext(sys::CUcontext)
);
handle!(
    /// A `CUstream`.
    RawStream(sys::CUstream)
);
handle!(
    /// A `CUmodule`.
    RawModule(sys::CUmodule)
);
handle!(
    /// A `CUfunction`.
    RawFunction(sys::CUfunction)
);
handle!(
    /// A `CUmemoryPool`.
    RawPool(sys::CUmemoryPool)
);
handle!(
    /// A `CUevent`.
    RawEvent(sys::CUevent)
);

/// A `CUdevice` (an ordinal the driver resolved).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct RawDevice(sys::CUdevice);

/// An address in the device's memory (`CUdeviceptr`).
pub(super) type DevicePtr = u64;

// ---------------------------------------------------------------------
// Results and errors
// ---------------------------------------------------------------------

/// A driver call's result as a typed error naming the device and call.
#[inline]
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
#[cold]
#[inline(never)]
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

/// Runs a driver call that writes one value of type `T` through its first
/// argument, as a typed result.
///
/// # Safety
///
/// `call` must write a valid `T` through the pointer when it returns
/// `CUDA_SUCCESS`, and read nothing through it.
#[inline]
unsafe fn out<T>(
    label: &str,
    operation: &'static str,
    call: impl FnOnce(*mut T) -> sys::CUresult,
) -> Result<T, DeviceError> {
    let mut value = MaybeUninit::<T>::uninit();
    check(call(value.as_mut_ptr()), label, operation)?;
    // SAFETY: the call succeeded, so it wrote the value (the contract).
    Ok(unsafe { value.assume_init() })
}

// ---------------------------------------------------------------------
// The library
// ---------------------------------------------------------------------

/// Whether the driver library loads (by the names cudarc's loader tries).
pub(super) fn library_present() -> bool {
    // SAFETY: `is_culib_present` only tries to dlopen the driver library by
    // its usual names and drops the handle; it calls nothing in it.
    unsafe { sys::is_culib_present() }
}

/// The first of `names` that the driver library lacks (call only when
/// [`library_present`]).
pub(super) fn missing_symbol<'a>(names: &[&'a str]) -> Option<&'a str> {
    // SAFETY: the library is present (the caller checked), so `culib`
    // loads it without panicking; looking up symbols runs no code.
    let lib = unsafe { sys::culib() };
    names
        .iter()
        .copied()
        // SAFETY: a symbol lookup only; the pointer is not called here.
        .find(|name| unsafe { lib.get::<*const ()>(name.as_bytes()) }.is_err())
}

// ---------------------------------------------------------------------
// Driver, devices, contexts
// ---------------------------------------------------------------------

/// `cuInit`: a failure means there is no usable driver, so it is the
/// device's [`DeviceError::Unavailable`].
pub(super) fn init(label: &str) -> Result<(), DeviceError> {
    // SAFETY: plain driver initialization, idempotent.
    let r = unsafe { sys::cuInit(0) };
    if r != sys::CUresult::CUDA_SUCCESS {
        return Err(DeviceError::Unavailable {
            device: label.to_string(),
            reason: format!("cuInit failed: {}", describe(r)),
        });
    }
    Ok(())
}

/// `cuDriverGetVersion`: e.g. 13000 for CUDA 13.0.
pub(super) fn driver_version(label: &str) -> Result<i32, DeviceError> {
    // SAFETY: writes one int.
    unsafe { out(label, "cuDriverGetVersion", |v| sys::cuDriverGetVersion(v)) }
}

/// `cuDeviceGetCount`.
pub(super) fn device_count(label: &str) -> Result<i32, DeviceError> {
    // SAFETY: writes one int.
    unsafe { out(label, "cuDeviceGetCount", |n| sys::cuDeviceGetCount(n)) }
}

/// `cuDeviceGet`.
pub(super) fn device_get(ordinal: u32, label: &str) -> Result<RawDevice, DeviceError> {
    let ordinal = i32::try_from(ordinal).unwrap_or(i32::MAX);
    // SAFETY: writes one device handle.
    unsafe { out(label, "cuDeviceGet", |d| sys::cuDeviceGet(d, ordinal)) }.map(RawDevice)
}

/// `cuDeviceGetAttribute`.
pub(super) fn device_attribute(
    device: RawDevice,
    attribute: DeviceAttribute,
    label: &str,
) -> Result<i32, DeviceError> {
    // SAFETY: writes one int.
    unsafe {
        out(label, "cuDeviceGetAttribute", |v| {
            sys::cuDeviceGetAttribute(v, attribute, device.0)
        })
    }
}

/// `cuDeviceGetName`.
pub(super) fn device_name(device: RawDevice, label: &str) -> Result<String, DeviceError> {
    let mut name = [0 as c_char; 256];
    // SAFETY: writes at most 256 bytes, NUL-terminated.
    check(
        unsafe { sys::cuDeviceGetName(name.as_mut_ptr(), name.len() as i32, device.0) },
        label,
        "cuDeviceGetName",
    )?;
    // The buffer was zeroed and the driver writes at most its length, so
    // there is a NUL inside it.
    let bytes: Vec<u8> = name.iter().map(|&c| c as u8).collect();
    Ok(CStr::from_bytes_until_nul(&bytes)
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default())
}

/// `cuDeviceTotalMem`, in bytes.
pub(super) fn device_total_mem(device: RawDevice, label: &str) -> Result<usize, DeviceError> {
    // SAFETY: writes one size.
    unsafe {
        out(label, "cuDeviceTotalMem", |b| {
            sys::cuDeviceTotalMem_v2(b, device.0)
        })
    }
}

/// `cuDevicePrimaryCtxRetain`: the device's primary context, retained
/// (created if needed) until [`primary_ctx_release`].
pub(super) fn primary_ctx_retain(
    device: RawDevice,
    label: &str,
) -> Result<RawContext, DeviceError> {
    // SAFETY: writes one context handle.
    unsafe {
        out(label, "cuDevicePrimaryCtxRetain", |c| {
            sys::cuDevicePrimaryCtxRetain(c, device.0)
        })
    }
    .map(RawContext)
}

/// `cuDevicePrimaryCtxRelease`: gives back one retain. Its result is
/// ignored: it runs in a `Drop`, and there is nothing to do about it.
pub(super) fn primary_ctx_release(device: RawDevice) {
    // SAFETY: releases a device's primary context; a release without a
    // retain is the driver's error, not undefined behaviour.
    unsafe {
        sys::cuDevicePrimaryCtxRelease_v2(device.0);
    }
}

/// `cuCtxSetCurrent`.
pub(super) fn ctx_set_current(ctx: RawContext, label: &str) -> Result<(), DeviceError> {
    // SAFETY: makes a context current on this thread; a destroyed one is
    // the driver's error.
    check(
        unsafe { sys::cuCtxSetCurrent(ctx.0) },
        label,
        "cuCtxSetCurrent",
    )
}

/// `cuCtxSynchronize`: waits for all work of the current context.
pub(super) fn ctx_synchronize(label: &str) -> Result<(), DeviceError> {
    // SAFETY: waits; no memory is involved.
    check(
        unsafe { sys::cuCtxSynchronize() },
        label,
        "cuCtxSynchronize",
    )
}

// ---------------------------------------------------------------------
// Streams and events
// ---------------------------------------------------------------------

/// `cuStreamCreate` of a stream that does not synchronize with the legacy
/// default stream.
pub(super) fn stream_create(label: &str) -> Result<RawStream, DeviceError> {
    let flags = sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32;
    // SAFETY: writes one stream handle.
    unsafe { out(label, "cuStreamCreate", |s| sys::cuStreamCreate(s, flags)) }.map(RawStream)
}

/// `cuStreamDestroy`; work already queued still completes. Its result is
/// ignored (it runs in a `Drop`).
pub(super) fn stream_destroy(stream: RawStream) {
    // SAFETY: destroys a stream; the caller uses the handle no more.
    unsafe {
        sys::cuStreamDestroy_v2(stream.0);
    }
}

/// `cuStreamSynchronize`.
pub(super) fn stream_synchronize(stream: RawStream, label: &str) -> Result<(), DeviceError> {
    // SAFETY: waits for the stream's work; no memory is involved.
    check(
        unsafe { sys::cuStreamSynchronize(stream.0) },
        label,
        "cuStreamSynchronize",
    )
}

/// `cuEventCreate` of an event without timing.
pub(super) fn event_create(label: &str) -> Result<RawEvent, DeviceError> {
    let flags = sys::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32;
    // SAFETY: writes one event handle.
    unsafe { out(label, "cuEventCreate", |e| sys::cuEventCreate(e, flags)) }.map(RawEvent)
}

/// `cuEventRecord` on `stream`.
pub(super) fn event_record(
    event: RawEvent,
    stream: RawStream,
    label: &str,
) -> Result<(), DeviceError> {
    // SAFETY: records an event; no memory is involved.
    check(
        unsafe { sys::cuEventRecord(event.0, stream.0) },
        label,
        "cuEventRecord",
    )
}

/// `cuStreamWaitEvent`: work queued on `stream` from now on waits for
/// `event`.
pub(super) fn stream_wait_event(
    stream: RawStream,
    event: RawEvent,
    label: &str,
) -> Result<(), DeviceError> {
    // SAFETY: orders two streams; no memory is involved.
    check(
        unsafe { sys::cuStreamWaitEvent(stream.0, event.0, 0) },
        label,
        "cuStreamWaitEvent",
    )
}

/// `cuEventDestroy`: a recorded event's resources go when it completes.
/// Its result is ignored.
pub(super) fn event_destroy(event: RawEvent) {
    // SAFETY: destroys an event; the caller uses the handle no more.
    unsafe {
        sys::cuEventDestroy_v2(event.0);
    }
}

// ---------------------------------------------------------------------
// Memory
// ---------------------------------------------------------------------

/// `cuMemPoolCreate` of a pool of pinned device memory on device
/// `ordinal`, whose release threshold (`cuMemPoolSetAttribute`) keeps
/// freed memory mapped, for stream-ordered allocation.
pub(super) fn mem_pool_create(ordinal: u32, label: &str) -> Result<RawPool, DeviceError> {
    // SAFETY: the props are plain data, zero meaning "default" for every
    // field not set here.
    let mut props: sys::CUmemPoolProps = unsafe { std::mem::zeroed() };
    props.allocType = sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED;
    props.handleTypes = sys::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_NONE;
    props.location.type_ = sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = i32::try_from(ordinal).unwrap_or(i32::MAX);
    // SAFETY: writes one pool handle; reads `props` during the call.
    let pool = unsafe {
        out(label, "cuMemPoolCreate", |p| {
            sys::cuMemPoolCreate(p, &props)
        })
    }?;
    let mut threshold: u64 = u64::MAX;
    // SAFETY: the release threshold attribute is a u64, read during the
    // call.
    let set = check(
        unsafe {
            sys::cuMemPoolSetAttribute(
                pool,
                sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                (&mut threshold as *mut u64).cast(),
            )
        },
        label,
        "cuMemPoolSetAttribute",
    );
    if let Err(e) = set {
        mem_pool_destroy(RawPool(pool));
        return Err(e);
    }
    Ok(RawPool(pool))
}

/// `cuMemPoolDestroy`. Its result is ignored (it runs in a `Drop`).
pub(super) fn mem_pool_destroy(pool: RawPool) {
    // SAFETY: destroys a pool; the caller uses the handle no more.
    unsafe {
        sys::cuMemPoolDestroy(pool.0);
    }
}

/// `cuMemAllocFromPoolAsync`: `bytes` from `pool`, usable in `stream`'s
/// order.
pub(super) fn mem_alloc_from_pool(
    bytes: usize,
    pool: RawPool,
    stream: RawStream,
    label: &str,
) -> Result<DevicePtr, DeviceError> {
    // SAFETY: writes one device address.
    unsafe {
        out(label, "cuMemAllocFromPoolAsync", |p| {
            sys::cuMemAllocFromPoolAsync(p, bytes, pool.0, stream.0)
        })
    }
}

/// `cuMemAlloc`.
pub(super) fn mem_alloc(bytes: usize, label: &str) -> Result<DevicePtr, DeviceError> {
    // SAFETY: writes one device address.
    unsafe { out(label, "cuMemAlloc", |p| sys::cuMemAlloc_v2(p, bytes)) }
}

/// `cuMemFreeAsync` in `stream`'s order. Its result is ignored: a block
/// that cannot be given back stays with the driver.
pub(super) fn mem_free_async(ptr: DevicePtr, stream: RawStream) {
    // SAFETY: frees device memory in stream order; the host never
    // dereferences it.
    unsafe {
        sys::cuMemFreeAsync(ptr, stream.0);
    }
}

/// `cuMemFree`. Its result is ignored, as [`mem_free_async`]'s.
pub(super) fn mem_free(ptr: DevicePtr) {
    // SAFETY: frees device memory; the host never dereferences it.
    unsafe {
        sys::cuMemFree_v2(ptr);
    }
}

/// Copies `src` to device address `dst` in `stream`'s order and waits for
/// the stream (`cuMemcpyHtoDAsync`, `cuStreamSynchronize`), so the host
/// memory is no longer read when this returns.
pub(super) fn copy_to_device(
    dst: DevicePtr,
    src: &[u8],
    stream: RawStream,
    label: &str,
) -> Result<(), DeviceError> {
    // SAFETY: reads `src.len()` bytes of the borrowed slice; the wait
    // below ends before the borrow does (from pageable memory the copy has
    // read the slice when the call returns; from pinned memory it has
    // once the stream is done).
    check(
        unsafe {
            sys::cuMemcpyHtoDAsync_v2(dst, src.as_ptr().cast::<c_void>(), src.len(), stream.0)
        },
        label,
        "cuMemcpyHtoDAsync",
    )?;
    stream_synchronize(stream, label)
}

/// Copies `dst.len()` bytes at device address `src` into `dst` in
/// `stream`'s order and waits for the stream (`cuMemcpyDtoHAsync`,
/// `cuStreamSynchronize`), so the host memory is written when this
/// returns.
pub(super) fn copy_to_host(
    dst: &mut [u8],
    src: DevicePtr,
    stream: RawStream,
    label: &str,
) -> Result<(), DeviceError> {
    // SAFETY: writes at most `dst.len()` bytes of the borrowed slice; the
    // wait below ends before the borrow does.
    check(
        unsafe {
            sys::cuMemcpyDtoHAsync_v2(dst.as_mut_ptr().cast::<c_void>(), src, dst.len(), stream.0)
        },
        label,
        "cuMemcpyDtoHAsync",
    )?;
    stream_synchronize(stream, label)
}

/// The device fills (`cuMemsetD8Async` and friends), each setting `n`
/// elements from `dst` in `stream`'s order. Errors name them
/// `cuMemsetAsync`.
pub(super) mod memset {
    use super::{check, sys, DeviceError, DevicePtr, RawStream};

    /// `n` bytes of `value`.
    pub(in super::super) fn d8(
        dst: DevicePtr,
        value: u8,
        n: usize,
        stream: RawStream,
        label: &str,
    ) -> Result<(), DeviceError> {
        // SAFETY: writes device memory only.
        check(
            unsafe { sys::cuMemsetD8Async(dst, value, n, stream.0) },
            label,
            "cuMemsetAsync",
        )
    }

    /// `n` 16-bit words of `value`.
    pub(in super::super) fn d16(
        dst: DevicePtr,
        value: u16,
        n: usize,
        stream: RawStream,
        label: &str,
    ) -> Result<(), DeviceError> {
        // SAFETY: writes device memory only.
        check(
            unsafe { sys::cuMemsetD16Async(dst, value, n, stream.0) },
            label,
            "cuMemsetAsync",
        )
    }

    /// `n` 32-bit words of `value`.
    pub(in super::super) fn d32(
        dst: DevicePtr,
        value: u32,
        n: usize,
        stream: RawStream,
        label: &str,
    ) -> Result<(), DeviceError> {
        // SAFETY: writes device memory only.
        check(
            unsafe { sys::cuMemsetD32Async(dst, value, n, stream.0) },
            label,
            "cuMemsetAsync",
        )
    }

    /// `n` 32-bit words of `value`, `pitch` bytes apart (one column of a
    /// 2-D fill).
    pub(in super::super) fn d32_strided(
        dst: DevicePtr,
        pitch: usize,
        value: u32,
        n: usize,
        stream: RawStream,
        label: &str,
    ) -> Result<(), DeviceError> {
        // SAFETY: writes device memory only.
        check(
            unsafe { sys::cuMemsetD2D32Async(dst, pitch, value, 1, n, stream.0) },
            label,
            "cuMemsetAsync",
        )
    }
}

// ---------------------------------------------------------------------
// Modules, functions, launches
// ---------------------------------------------------------------------

/// `cuModuleLoadData` of a cubin or of NUL-terminated PTX. An image that
/// is neither (an ELF image whose tables or sections lie outside it, or
/// text without a NUL) is refused before the driver reads it.
pub(super) fn module_load(image: &[u8], label: &str) -> Result<RawModule, DeviceError> {
    if let Err(reason) = check_image(image) {
        return Err(DeviceError::Driver {
            device: label.to_string(),
            operation: "cuModuleLoadData",
            reason,
        });
    }
    // SAFETY: the image is a cubin whose headers and sections lie inside
    // the slice, or text with a NUL inside it (checked above), so the
    // driver reads only the slice; it copies what it keeps.
    unsafe {
        out(label, "cuModuleLoadData", |m| {
            sys::cuModuleLoadData(m, image.as_ptr().cast())
        })
    }
    .map(RawModule)
}

/// `cuModuleUnload`. Its result is ignored (it runs in a `Drop`).
pub(super) fn module_unload(module: RawModule) {
    // SAFETY: unloads a module; the caller uses it and its functions no
    // more (and waited for work that may run them).
    unsafe {
        sys::cuModuleUnload(module.0);
    }
}

/// `cuModuleGetFunction`.
pub(super) fn module_function(
    module: RawModule,
    name: &CStr,
    label: &str,
) -> Result<RawFunction, DeviceError> {
    // SAFETY: writes one function handle; `name` is NUL-terminated.
    unsafe {
        out(label, "cuModuleGetFunction", |f| {
            sys::cuModuleGetFunction(f, module.0, name.as_ptr())
        })
    }
    .map(RawFunction)
}

/// `cuFuncSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)`.
pub(super) fn set_max_dynamic_shared(
    function: RawFunction,
    bytes: u32,
    label: &str,
) -> Result<(), DeviceError> {
    let bytes = i32::try_from(bytes).unwrap_or(i32::MAX);
    // SAFETY: sets an attribute of the driver's function.
    check(
        unsafe {
            sys::cuFuncSetAttribute(
                function.0,
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                bytes,
            )
        },
        label,
        "cuFuncSetAttribute",
    )
}

/// A launch the driver refused: its result, made the device's error by
/// [`LaunchFailed::into_error`] (off the launch path, which keeps nothing
/// for the message).
#[derive(Clone, Copy, Debug)]
pub(super) struct LaunchFailed(sys::CUresult);

impl LaunchFailed {
    /// The error of `operation` (`cuLaunchKernel`, or what the launch is
    /// for) on device `label`, with `what` in front of the driver's reason.
    #[cold]
    #[inline(never)]
    pub(super) fn into_error(
        self,
        label: &str,
        operation: &'static str,
        what: String,
    ) -> DeviceError {
        driver_error(self.0, label, operation, what)
    }
}

/// `cuLaunchKernel` of `function` on `blocks` × `threads`, with `shared`
/// bytes of dynamic shared memory, in `stream`'s order.
///
/// # Safety
///
/// `params` must hold one pointer per parameter of `function`, in the
/// order of its signature, each to a value of that parameter's type and
/// size, readable during the call (the driver copies them). Nothing checks
/// this: a wrong list makes the kernel read garbage, or the driver read
/// host memory past a value.
#[inline(always)]
pub(super) unsafe fn launch_kernel(
    function: RawFunction,
    blocks: [u32; 3],
    threads: [u32; 3],
    shared: u32,
    stream: RawStream,
    params: &mut [*mut c_void],
) -> Result<(), LaunchFailed> {
    // SAFETY: the caller's contract covers `params`; the rest are values.
    let r = unsafe {
        sys::cuLaunchKernel(
            function.0,
            blocks[0],
            blocks[1],
            blocks[2],
            threads[0],
            threads[1],
            threads[2],
            shared,
            stream.0,
            params.as_mut_ptr(),
            std::ptr::null_mut(),
        )
    };
    if r != sys::CUresult::CUDA_SUCCESS {
        return Err(LaunchFailed(r));
    }
    Ok(())
}

/// Whether the driver may read `image` as a module without reading past
/// it: a 64-bit ELF image (a cubin) whose header, program and section
/// header tables and every section with contents lie inside the slice;
/// anything else must hold a NUL (the end of PTX text).
fn check_image(image: &[u8]) -> Result<(), String> {
    if !image.starts_with(b"\x7fELF") {
        return if image.contains(&0) {
            Ok(())
        } else {
            Err("the image is neither a cubin nor NUL-terminated PTX".into())
        };
    }
    let bad = |what: &str| Err(format!("the cubin is malformed: {what}"));
    // ELF64, little endian (what NVRTC writes).
    if image.get(4) != Some(&2) || image.get(5) != Some(&1) || image.len() < 64 {
        return bad("not a little-endian 64-bit ELF image");
    }
    let u16_at = |o: usize| u16::from_le_bytes([image[o], image[o + 1]]) as u64;
    let u32_at = |o: usize| u32::from_le_bytes(image[o..o + 4].try_into().unwrap_or([0; 4])) as u64;
    let u64_at = |o: usize| u64::from_le_bytes(image[o..o + 8].try_into().unwrap_or([0; 8]));
    let len = image.len() as u64;
    let inside = |start: u64, size: u64| start.checked_add(size).is_some_and(|end| end <= len);
    let (phoff, shoff) = (u64_at(0x20), u64_at(0x28));
    let (phentsize, phnum) = (u16_at(0x36), u16_at(0x38));
    let (shentsize, shnum) = (u16_at(0x3A), u16_at(0x3C));
    if !inside(phoff, phentsize * phnum) {
        return bad("its program headers lie outside it");
    }
    if !inside(shoff, shentsize * shnum) || (shnum > 0 && shentsize < 64) {
        return bad("its section headers lie outside it");
    }
    for i in 0..shnum {
        let header = (shoff + i * shentsize) as usize;
        const NOBITS: u64 = 8;
        let (kind, offset, size) = (
            u32_at(header + 4),
            u64_at(header + 0x18),
            u64_at(header + 0x20),
        );
        if kind != NOBITS && !inside(offset, size) {
            return bad("a section lies outside it");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::check_image;

    /// A minimal ELF64 image: the header and one section header.
    fn elf(section_offset: u64, section_size: u64) -> Vec<u8> {
        let mut image = vec![0u8; 64 + 64];
        image[..4].copy_from_slice(b"\x7fELF");
        image[4] = 2;
        image[5] = 1;
        image[0x28..0x30].copy_from_slice(&64u64.to_le_bytes()); // e_shoff
        image[0x3A..0x3C].copy_from_slice(&64u16.to_le_bytes()); // e_shentsize
        image[0x3C..0x3E].copy_from_slice(&1u16.to_le_bytes()); // e_shnum
        let sh = 64;
        image[sh + 4..sh + 8].copy_from_slice(&1u32.to_le_bytes()); // PROGBITS
        image[sh + 0x18..sh + 0x20].copy_from_slice(&section_offset.to_le_bytes());
        image[sh + 0x20..sh + 0x28].copy_from_slice(&section_size.to_le_bytes());
        image
    }

    #[test]
    fn only_images_the_driver_reads_inside_are_loaded() {
        assert!(check_image(b".version 8.0\n.target sm_90\0").is_ok());
        assert!(check_image(b"fakecuda image\0").is_ok());
        assert!(check_image(b".version 8.0 without an end").is_err());
        assert!(check_image(&elf(0, 64)).is_ok());
        assert!(check_image(&elf(64, 64)).is_ok());
        assert!(
            check_image(&elf(100, 64)).is_err(),
            "a section past the end"
        );
        assert!(
            check_image(&elf(u64::MAX, 2)).is_err(),
            "an offset that wraps"
        );
        let mut truncated = elf(0, 64);
        truncated.truncate(100);
        assert!(check_image(&truncated).is_err(), "section headers cut off");
        assert!(check_image(b"\x7fELF\x01\x01").is_err(), "32-bit or short");
    }
}
