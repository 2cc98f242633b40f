//! Graphs kernelkit captures itself (autotuning's timed batches).

use cudarc::driver::sys;

use super::{check, out, RawGraphExec, RawStream};
use crate::error::DeviceError;

/// `cuStreamBeginCapture_v2` in the relaxed mode: calls other threads make
/// meanwhile (loading a module, allocating) neither fail nor end the
/// capture; only what is queued on `stream` is captured.
pub(in crate::backend::cuda) fn begin_capture(
    stream: RawStream,
    label: &str,
) -> Result<(), DeviceError> {
    let mode = sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED;
    // SAFETY: changes the stream's state; no memory is involved.
    check(
        unsafe { sys::cuStreamBeginCapture_v2(stream.0, mode) },
        label,
        "cuStreamBeginCapture",
    )
}

/// `cuStreamEndCapture`, then `cuGraphInstantiateWithFlags` of the graph
/// it made; the graph itself is destroyed either way (the executable graph
/// is a copy that needs it no more).
pub(in crate::backend::cuda) fn end_capture(
    stream: RawStream,
    label: &str,
) -> Result<RawGraphExec, DeviceError> {
    // SAFETY: writes one graph handle (null when the capture was
    // invalidated, with an error).
    let graph = unsafe {
        out(label, "cuStreamEndCapture", |g| {
            sys::cuStreamEndCapture(stream.0, g)
        })
    }?;
    // SAFETY: writes one executable graph handle; `graph` is live.
    let exec = unsafe {
        out(label, "cuGraphInstantiateWithFlags", |e| {
            sys::cuGraphInstantiateWithFlags(e, graph, 0)
        })
    };
    // SAFETY: destroys the graph made above; the executable graph (if
    // any) does not refer to it.
    unsafe {
        sys::cuGraphDestroy(graph);
    }
    exec.map(RawGraphExec)
}

/// `cuGraphLaunch`: queues the graph's work on `stream`.
pub(in crate::backend::cuda) fn graph_launch(
    exec: RawGraphExec,
    stream: RawStream,
    label: &str,
) -> Result<(), DeviceError> {
    // SAFETY: queues work on a stream; the memory the graph's kernels use
    // is its capturer's to keep alive.
    check(
        unsafe { sys::cuGraphLaunch(exec.0, stream.0) },
        label,
        "cuGraphLaunch",
    )
}

/// `cuGraphExecDestroy`; launches already queued still complete. Its
/// result is ignored (it runs in a `Drop`).
pub(in crate::backend::cuda) fn graph_exec_destroy(exec: RawGraphExec) {
    // SAFETY: destroys an executable graph; the caller uses the handle no
    // more.
    unsafe {
        sys::cuGraphExecDestroy(exec.0);
    }
}

/// Whether the driver has the calls above (asked once): the stand-in
/// driver of the tests, for one, may not; then nothing is captured.
pub(in crate::backend::cuda) fn graphs_available() -> bool {
    static AVAILABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *AVAILABLE
        .get_or_init(|| super::missing_symbol(crate::backend::cuda::probe::GRAPH_SYMBOLS).is_none())
}
