//! The CUDA streams of PyTorch and CuPy as kernelkit streams.
//!
//! A call on torch tensors runs on torch's current stream of the tensors'
//! device, a call on CuPy arrays on CuPy's current stream, so kernelkit's
//! launches queue in order with the framework's own work, without a
//! synchronize. Both frameworks hand out raw `CUstream` handles; each
//! (device, handle) pair is wrapped once ([`kernelkit::Stream::from_raw_cuda`])
//! and kept in a small table, so that the hot path finds the same kernelkit
//! stream again (one lock, a short scan): the same stream object is what
//! lets kernelkit see that an input's producer is the call's stream and
//! order nothing.
//!
//! Handles 0 and 1 are the legacy default stream (PyTorch's and CuPy's
//! default); 2 is the per-thread default stream, wrapped for one use only
//! (it means another stream on every thread).
//!
//! Neither framework is imported here: the torch and CuPy functions are
//! reached only once a tensor of theirs was seen (`crate::torch`,
//! [`cupy_current`]).

use std::sync::Mutex;

use kernelkit::{Device, DeviceId, Stream};
use pyo3::prelude::*;
use pyo3::types::IntoPyDict;

use crate::errors::IntoPy;

/// Wrapped streams kept at most: PyTorch keeps a pool of 32 streams per
/// priority per device and a program a few of its own.
const KEPT: usize = 256;

/// (device, raw handle, stream).
static WRAPPED: Mutex<Vec<(DeviceId, u64, Stream)>> = Mutex::new(Vec::new());

/// The process's per-thread default stream handle (`CU_STREAM_PER_THREAD`).
pub(crate) const PER_THREAD: u64 = 2;

/// `device`'s kernelkit stream over the framework stream `raw` (0 or 1:
/// the legacy default stream).
///
/// The framework keeps the stream alive: PyTorch never destroys its pool
/// streams, and CuPy's current stream is alive while current. A stream a
/// program made and then destroyed must not be current when a call runs
/// (it could not be either: the framework would fail first).
pub(crate) fn wrap(device: &Device, raw: u64) -> PyResult<Stream> {
    let key = device.id();
    let raw = if raw == 0 { 1 } else { raw };
    {
        let table = WRAPPED.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, _, s)) = table.iter().find(|(d, r, _)| *d == key && *r == raw) {
            return Ok(s.clone());
        }
    }
    let stream = wrap_once(device, raw)?;
    if raw != PER_THREAD {
        let mut table = WRAPPED.lock().unwrap_or_else(|p| p.into_inner());
        if table.len() >= KEPT {
            table.remove(0);
        }
        if !table.iter().any(|(d, r, _)| *d == key && *r == raw) {
            table.push((key, raw, stream.clone()));
        }
    }
    Ok(stream)
}

/// A new wrapper of `raw` on `device`, not kept.
pub(crate) fn wrap_once(device: &Device, raw: u64) -> PyResult<Stream> {
    #[cfg(feature = "cuda")]
    if raw == 1 || raw == 0 {
        return Stream::cuda_legacy_default(device).py_err();
    }
    crate::ffi::foreign::declared_stream(device, raw).py_err()
}

/// CuPy's current stream handle on device `ordinal` (CuPy is imported: a
/// CuPy array was seen).
pub(crate) fn cupy_current(py: Python<'_>, ordinal: u32) -> PyResult<u64> {
    let cupy_cuda = py.import("cupy.cuda")?;
    let get = cupy_cuda.getattr("get_current_stream")?;
    // `device_id=` exists from CuPy 12 on; before, the current device's.
    let stream = match get.call((), Some(&[("device_id", ordinal)].into_py_dict(py)?)) {
        Ok(s) => s,
        Err(_) => get.call0()?,
    };
    stream.getattr("ptr")?.extract::<u64>()
}
