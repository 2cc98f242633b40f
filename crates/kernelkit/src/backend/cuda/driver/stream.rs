//! Streams and events.

use cudarc::driver::sys;

use super::{check, out, RawEvent, RawStream};
use crate::error::DeviceError;

/// `cuStreamCreate` of a stream that does not synchronize with the legacy
/// default stream.
pub(in crate::backend::cuda) fn stream_create(label: &str) -> Result<RawStream, DeviceError> {
    let flags = sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32;
    // SAFETY: writes one stream handle.
    unsafe { out(label, "cuStreamCreate", |s| sys::cuStreamCreate(s, flags)) }.map(RawStream)
}

/// `cuStreamDestroy`; work already queued still completes. Its result is
/// ignored (it runs in a `Drop`).
pub(in crate::backend::cuda) fn stream_destroy(stream: RawStream) {
    // SAFETY: destroys a stream; the caller uses the handle no more.
    unsafe {
        sys::cuStreamDestroy_v2(stream.0);
    }
}

/// `cuStreamSynchronize`.
pub(in crate::backend::cuda) fn stream_synchronize(
    stream: RawStream,
    label: &str,
) -> Result<(), DeviceError> {
    // SAFETY: waits for the stream's work; no memory is involved.
    check(
        unsafe { sys::cuStreamSynchronize(stream.0) },
        label,
        "cuStreamSynchronize",
    )
}

/// `cuStreamQuery`: whether the stream's work has finished (without
/// waiting).
pub(in crate::backend::cuda) fn stream_query(
    stream: RawStream,
    label: &str,
) -> Result<bool, DeviceError> {
    // SAFETY: asks the driver about the stream's work; no memory moves.
    let result = unsafe { sys::cuStreamQuery(stream.0) };
    if result == sys::CUresult::CUDA_ERROR_NOT_READY {
        return Ok(false);
    }
    check(result, label, "cuStreamQuery")?;
    Ok(true)
}

/// `cuStreamIsCapturing`: whether work queued on `stream` now is captured
/// into a CUDA graph (or the capture was invalidated) instead of run. Asks
/// the driver only about the stream: no synchronization, legal while
/// capturing.
pub(in crate::backend::cuda) fn stream_is_capturing(
    stream: RawStream,
    label: &str,
) -> Result<bool, DeviceError> {
    // SAFETY: writes one status value; an invalid stream is the driver's
    // error.
    let status = unsafe {
        out(label, "cuStreamIsCapturing", |s| {
            sys::cuStreamIsCapturing(stream.0, s)
        })
    }?;
    Ok(status != sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE)
}

/// `cuEventCreate` of an event without timing.
pub(in crate::backend::cuda) fn event_create(label: &str) -> Result<RawEvent, DeviceError> {
    let flags = sys::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32;
    // SAFETY: writes one event handle.
    unsafe { out(label, "cuEventCreate", |e| sys::cuEventCreate(e, flags)) }.map(RawEvent)
}

/// `cuEventRecord` on `stream`.
pub(in crate::backend::cuda) fn event_record(
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
pub(in crate::backend::cuda) fn stream_wait_event(
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

/// `cuEventQuery`: whether the work recorded before `event` has finished
/// (without waiting). An event never recorded has.
pub(in crate::backend::cuda) fn event_query(
    event: RawEvent,
    label: &str,
) -> Result<bool, DeviceError> {
    // SAFETY: asks the driver about an event; no memory moves.
    let result = unsafe { sys::cuEventQuery(event.0) };
    if result == sys::CUresult::CUDA_ERROR_NOT_READY {
        return Ok(false);
    }
    check(result, label, "cuEventQuery")?;
    Ok(true)
}

/// The calling thread in the driver's relaxed stream capture mode until
/// dropped, then back in the mode it was in
/// (`cuThreadExchangeStreamCaptureMode`, push then pop). In the relaxed
/// mode a "potentially unsafe" call (loading or unloading a module,
/// querying an event, ...) does not invalidate a capture that another
/// thread runs in the global mode (PyTorch's default); calls that
/// necessarily conflict with a capture (synchronizing the context, or a
/// stream that captures) still do, in every mode.
pub(in crate::backend::cuda) struct RelaxedCapture {
    /// The thread's mode before; `None` when the exchange failed (then
    /// nothing is restored).
    previous: Option<sys::CUstreamCaptureMode>,
}

impl RelaxedCapture {
    /// Enters the relaxed mode on this thread (if the driver refuses, the
    /// thread stays in its mode: the calls are made anyway, as before).
    pub(in crate::backend::cuda) fn enter() -> RelaxedCapture {
        let mut mode = sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED;
        // SAFETY: swaps one per-thread value through a pointer to a local.
        let result = unsafe { sys::cuThreadExchangeStreamCaptureMode(&mut mode) };
        RelaxedCapture {
            previous: (result == sys::CUresult::CUDA_SUCCESS).then_some(mode),
        }
    }
}

impl Drop for RelaxedCapture {
    fn drop(&mut self) {
        if let Some(mut mode) = self.previous {
            // SAFETY: as in `enter`; restores the thread's own mode.
            unsafe {
                sys::cuThreadExchangeStreamCaptureMode(&mut mode);
            }
        }
    }
}

/// `cuEventDestroy`: a recorded event's resources go when it completes.
/// Its result is ignored.
pub(in crate::backend::cuda) fn event_destroy(event: RawEvent) {
    // SAFETY: destroys an event; the caller uses the handle no more.
    unsafe {
        sys::cuEventDestroy_v2(event.0);
    }
}

/// `cuStreamGetCtx`: the context a stream belongs to (a foreign stream is
/// checked to be of the device's context before kernelkit uses it).
pub(in crate::backend::cuda) fn stream_context(
    stream: RawStream,
    label: &str,
) -> Result<super::RawContext, DeviceError> {
    // SAFETY: writes one context handle; an invalid stream is the
    // driver's error.
    unsafe {
        out(label, "cuStreamGetCtx", |c| {
            sys::cuStreamGetCtx(stream.0, c)
        })
    }
    .map(super::RawContext)
}

impl RawStream {
    /// A stream handle that another library created (see
    /// `CudaStream::wrap`, which checks its context first).
    pub(in crate::backend::cuda) fn from_foreign(raw: sys::CUstream) -> RawStream {
        RawStream(raw)
    }
}

/// `cuEventCreate` of an event that records a time (for
/// `cuEventElapsedTime`: tuning times kernels on their own stream).
pub(in crate::backend::cuda) fn timing_event_create(label: &str) -> Result<RawEvent, DeviceError> {
    // SAFETY: writes one event handle.
    unsafe { out(label, "cuEventCreate", |e| sys::cuEventCreate(e, 0)) }.map(RawEvent)
}

/// `cuEventSynchronize`: waits until the work recorded before `event` is
/// done.
pub(in crate::backend::cuda) fn event_synchronize(
    event: RawEvent,
    label: &str,
) -> Result<(), DeviceError> {
    // SAFETY: waits for an event; no memory is involved.
    check(
        unsafe { sys::cuEventSynchronize(event.0) },
        label,
        "cuEventSynchronize",
    )
}

/// `cuEventElapsedTime_v2` (CUDA 12.8+ drivers; see
/// [`event_timing_available`]) between two timing events, both complete,
/// in milliseconds.
pub(in crate::backend::cuda) fn event_elapsed_ms(
    start: RawEvent,
    end: RawEvent,
    label: &str,
) -> Result<f32, DeviceError> {
    let mut ms = 0f32;
    // SAFETY: writes one float; both events are live handles of this
    // context.
    check(
        unsafe { sys::cuEventElapsedTime_v2(&mut ms, start.0, end.0) },
        label,
        "cuEventElapsedTime_v2",
    )?;
    Ok(ms)
}

/// Whether the driver has `cuEventElapsedTime_v2` (asked once): without
/// it, tuning times with the host's clock around a stream synchronize.
pub(in crate::backend::cuda) fn event_timing_available() -> bool {
    static AVAILABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        super::missing_symbol(crate::backend::cuda::probe::OPTIONAL_SYMBOLS).is_none()
    })
}
