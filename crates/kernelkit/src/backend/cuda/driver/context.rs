//! The driver, devices and contexts.

use std::ffi::{c_char, CStr};

use cudarc::driver::sys;

use super::{check, describe, out, DeviceAttribute, RawContext, RawDevice};
use crate::error::DeviceError;

/// `cuInit`: a failure means there is no usable driver, so it is the
/// device's [`DeviceError::Unavailable`].
pub(in crate::backend::cuda) fn init(label: &str) -> Result<(), DeviceError> {
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
pub(in crate::backend::cuda) fn driver_version(label: &str) -> Result<i32, DeviceError> {
    // SAFETY: writes one int.
    unsafe { out(label, "cuDriverGetVersion", |v| sys::cuDriverGetVersion(v)) }
}

/// `cuDeviceGetCount`.
pub(in crate::backend::cuda) fn device_count(label: &str) -> Result<i32, DeviceError> {
    // SAFETY: writes one int.
    unsafe { out(label, "cuDeviceGetCount", |n| sys::cuDeviceGetCount(n)) }
}

/// `cuDeviceGet`.
pub(in crate::backend::cuda) fn device_get(
    ordinal: u32,
    label: &str,
) -> Result<RawDevice, DeviceError> {
    let ordinal = i32::try_from(ordinal).unwrap_or(i32::MAX);
    // SAFETY: writes one device handle.
    unsafe { out(label, "cuDeviceGet", |d| sys::cuDeviceGet(d, ordinal)) }.map(RawDevice)
}

/// `cuDeviceGetAttribute`.
pub(in crate::backend::cuda) fn device_attribute(
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
pub(in crate::backend::cuda) fn device_name(
    device: RawDevice,
    label: &str,
) -> Result<String, DeviceError> {
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
pub(in crate::backend::cuda) fn device_total_mem(
    device: RawDevice,
    label: &str,
) -> Result<usize, DeviceError> {
    // SAFETY: writes one size.
    unsafe {
        out(label, "cuDeviceTotalMem", |b| {
            sys::cuDeviceTotalMem_v2(b, device.0)
        })
    }
}

/// `cuDevicePrimaryCtxRetain`: the device's primary context, retained
/// (created if needed) until [`primary_ctx_release`].
pub(in crate::backend::cuda) fn primary_ctx_retain(
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
pub(in crate::backend::cuda) fn primary_ctx_release(device: RawDevice) {
    // SAFETY: releases a device's primary context; a release without a
    // retain is the driver's error, not undefined behaviour.
    unsafe {
        sys::cuDevicePrimaryCtxRelease_v2(device.0);
    }
}

/// `cuCtxSetCurrent`.
pub(in crate::backend::cuda) fn ctx_set_current(
    ctx: RawContext,
    label: &str,
) -> Result<(), DeviceError> {
    // SAFETY: makes a context current on this thread; a destroyed one is
    // the driver's error.
    check(
        unsafe { sys::cuCtxSetCurrent(ctx.0) },
        label,
        "cuCtxSetCurrent",
    )
}

/// `cuCtxSynchronize`: waits for all work of the current context.
pub(in crate::backend::cuda) fn ctx_synchronize(label: &str) -> Result<(), DeviceError> {
    // SAFETY: waits; no memory is involved.
    check(
        unsafe { sys::cuCtxSynchronize() },
        label,
        "cuCtxSynchronize",
    )
}
