//! The CUDA driver API, each call behind a small safe function: the only
//! place of the backend that calls `cudarc::driver::sys` (cudarc's raw
//! bindings). With `nvrtc` (NVRTC's calls), this is the backend's only
//! `unsafe` code but one: the kernel parameters of `launch`, which no
//! wrapper can check.
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
//!
//! The calls by subject: `context` (the driver, devices, contexts),
//! `stream` (streams, events), `memory` (pools, allocations, copies,
//! fills), `module` (modules, functions, launches); here: handles, errors
//! and the library's checks.

mod context;
mod graph;
mod memory;
mod module;
mod stream;

use std::ffi::{c_char, CStr};
use std::mem::MaybeUninit;

use cudarc::driver::sys;

use crate::error::DeviceError;

/// The attributes [`device_attribute`] reads.
pub(super) use sys::CUdevice_attribute as DeviceAttribute;

pub(super) use context::*;
pub(super) use graph::*;
pub(super) use memory::*;
pub(super) use module::*;
pub(super) use stream::*;

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
handle!(
    /// A `CUgraphExec`.
    RawGraphExec(sys::CUgraphExec)
);

/// A `CUdevice` (an ordinal the driver resolved).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct RawDevice(sys::CUdevice);

/// An address in the device's memory (`CUdeviceptr`).
pub(super) type DevicePtr = u64;

/// A driver call's result as a typed error naming the device and call.
#[inline]
fn check(result: sys::CUresult, device: &str, operation: &'static str) -> Result<(), DeviceError> {
    if result == sys::CUresult::CUDA_SUCCESS {
        return Ok(());
    }
    Err(driver_error(result, device, operation, String::new()))
}

/// The error for a failed driver call; `what` adds context (a kernel name).
#[cold]
#[inline(never)]
fn driver_error(
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

/// Whether the driver library loads (by the names cudarc's loader tries).
#[cfg(not(kernelkit_candle_cuda))]
pub(super) fn library_present() -> bool {
    // SAFETY: `is_culib_present` only tries to dlopen the driver library by
    // its usual names and drops the handle; it calls nothing in it.
    unsafe { sys::is_culib_present() }
}

/// The first of `names` that the driver library lacks (call only when
/// [`library_present`]).
#[cfg(not(kernelkit_candle_cuda))]
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

/// Linked, not loaded (`--cfg kernelkit_candle_cuda`: candle's CUDA backend
/// turns on cudarc's `dynamic-linking`): the program started, so the
/// driver library is there.
#[cfg(kernelkit_candle_cuda)]
pub(super) fn library_present() -> bool {
    true
}

/// Linked, not loaded: the first of `names` that the process's loaded
/// libraries lack.
#[cfg(kernelkit_candle_cuda)]
pub(super) fn missing_symbol<'a>(names: &[&'a str]) -> Option<&'a str> {
    crate::backend::cuda::linked::missing_symbol(names)
}
