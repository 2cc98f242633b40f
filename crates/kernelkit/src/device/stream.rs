//! Streams: ordered queues of work on one device, the device's default
//! stream among them, and streams of other libraries wrapped as ours.

use std::fmt;
use std::sync::Arc;

use std::sync::atomic::{AtomicU64, Ordering};

use super::Device;
use crate::backend::{Replay, StreamHandle};
use crate::error::Result;

/// Numbers streams for `Debug` (the default stream's too).
pub(super) fn next_stream_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// A stream made by [`Device::new_stream`]. Its first two fields are laid
/// out as `DeviceShared`'s.
#[repr(C)]
struct StreamShared {
    handle: StreamHandle,
    device: Device,
    id: u64,
}

/// An ordered queue of work on one device. Work submitted to one stream runs
/// in submission order; many threads may each own a stream and submit at
/// once. On the CPU, a launch runs to completion before it returns.
///
/// Cloning takes one shared count: the stream's, or for the default
/// stream the device's (whose state holds it, so that the device does not
/// hold itself).
#[derive(Clone)]
pub struct Stream(Link);

/// What a [`Stream`] holds.
#[derive(Clone)]
enum Link {
    /// A stream made by [`Device::new_stream`].
    Own(Arc<StreamShared>),
    /// The device's default stream: its state lives in the device.
    Default(Device),
}

impl fmt::Debug for Stream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let id = match &self.0 {
            Link::Own(s) => s.id,
            Link::Default(d) => d.0.default_id,
        };
        write!(f, "Stream({} #{id})", self.device().label())
    }
}

impl PartialEq for Stream {
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        self.identity() == other.identity()
    }
}

impl Stream {
    /// The stream's device.
    #[inline]
    pub fn device(&self) -> &Device {
        match &self.0 {
            Link::Own(s) => &s.device,
            // SAFETY: written in `from_parts`. The borrow is tied to `self`,
            // which holds a count of the device.
            Link::Default(d) => unsafe { d.0.this.assume_init_ref() },
        }
    }
    /// Waits until all work submitted so far has finished.
    pub fn synchronize(&self) -> Result<()> {
        self.device().backend().synchronize(self.handle())
    }
    /// Waits until all work submitted so far has finished, for at most
    /// `timeout`. Work still running then (a kernel that never returns)
    /// cannot be stopped: the call fails with
    /// [`DeviceError::TimedOut`](crate::DeviceError::TimedOut) and the
    /// device is no longer usable. (CPU launches finish before they return,
    /// so on the CPU this never waits; bound a CPU launch from another
    /// thread, as `kernelkit run --timeout` does.)
    pub fn synchronize_timeout(&self, timeout: std::time::Duration) -> Result<()> {
        self.device()
            .backend()
            .synchronize_timeout(self.handle(), timeout)
    }
    /// How long the work `run` queues on this stream takes, timed on the
    /// stream (CUDA events; the wall clock on the CPU), after the work
    /// `before` queues, untimed: what autotuning compares.
    pub(crate) fn time(
        &self,
        before: &mut dyn FnMut() -> Result<()>,
        run: &mut dyn FnMut() -> Result<()>,
    ) -> Result<std::time::Duration> {
        self.device().backend().time_on(self.handle(), before, run)
    }
    /// The work `run` queues on this stream captured (a CUDA graph), not
    /// run, to queue again with [`Stream::replay`] on any stream of the
    /// device; `None` where the device captures nothing (the CPU, a
    /// driver without graphs), and then `run` was not called. The stream
    /// must be the caller's own, made for the capture: nothing else may
    /// queue on it meanwhile. The capture pins no module: the caller
    /// holds the functions of what `run` launches (`Variant::function_on`)
    /// while it keeps the replay.
    pub(crate) fn capture(&self, run: &mut dyn FnMut() -> Result<()>) -> Result<Option<Replay>> {
        self.device().backend().capture_on(self.handle(), run)
    }
    /// Queues `replay`'s work on this stream.
    pub(crate) fn replay(&self, replay: &Replay) -> Result<()> {
        self.device().backend().replay_on(replay, self.handle())
    }
    #[inline]
    pub(crate) fn handle(&self) -> &StreamHandle {
        match &self.0 {
            Link::Own(s) => &s.handle,
            Link::Default(d) => &d.0.default_handle,
        }
    }
    /// A stream of `device` that another library created and keeps, from
    /// its raw `CUstream`: kernelkit's launches on it are ordered with the
    /// owner's own work on it, without a synchronize. kernelkit never
    /// destroys it. Outputs allocated on it are kernelkit's memory, cached
    /// on it like any stream's, except that no thread keeps one as its
    /// spare (a spare outlives the user's arrays, and the owner may
    /// destroy the stream once they are gone). A stream of another device
    /// or context is
    /// refused (the driver is asked which context it belongs to).
    ///
    /// # Safety
    ///
    /// `stream` must be a valid `CUstream` and must
    /// stay valid for as long as the returned [`Stream`], its clones or any
    /// array whose memory it produced are alive: kernelkit queues work and,
    /// when the last of them goes, frees its cached blocks on it. For a
    /// stream with a safe owner, use `interop::cudarc::stream`.
    pub unsafe fn from_raw_cuda(device: &Device, stream: *mut std::ffi::c_void) -> Result<Stream> {
        Stream::wrap(device, crate::backend::ForeignStream::Raw(stream))
    }

    /// The legacy default stream of `device`'s context (CUDA), the stream
    /// that PyTorch and CuPy call their default one: kernelkit's launches
    /// on it are ordered with theirs. kernelkit's own streams do not
    /// synchronize with it (they are non-blocking); order them with
    /// [`Stream::wait_for`]. Valid for the life of the process; kernelkit
    /// makes the device's context (its primary one, which those libraries
    /// share) current before every use, so the handle always means that
    /// context's default stream.
    #[cfg(feature = "cuda")]
    pub fn cuda_legacy_default(device: &Device) -> Result<Stream> {
        /// `CU_STREAM_LEGACY`.
        const LEGACY: usize = 0x1;
        // SAFETY: `CU_STREAM_LEGACY` is valid for the life of the process
        // and names the legacy default stream of the context current when
        // it is used: kernelkit binds its device's context before every
        // driver call on a stream (launches, allocations, events, the
        // stream's drop), so it is always this device's.
        unsafe { Stream::from_raw_cuda(device, LEGACY as *mut std::ffi::c_void) }
    }

    /// The raw `CUstream` handle of a CUDA stream, as a number, for the
    /// protocols that exchange stream handles (DLPack's
    /// `__dlpack__(stream=...)`, `__cuda_array_interface__`'s `stream`);
    /// `None` on other devices. The handle stays the stream's: use it only
    /// while the stream (or a clone) lives.
    pub fn raw_cuda(&self) -> Option<u64> {
        #[cfg(feature = "cuda")]
        if let Some(s) = self.handle().cuda() {
            return Some(s.raw_handle());
        }
        None
    }

    /// Whether work queued on this stream now is being captured into a
    /// CUDA graph (`cuStreamIsCapturing`) rather than run. Only streams
    /// that someone else may capture are asked: another library's
    /// (`from_raw_cuda`, cudarc's) and kernelkit's own once their raw
    /// handle was handed out ([`Stream::raw_cuda`]); for the rest, and on
    /// other devices, `false` without a driver call. While it is `true`,
    /// calls on the stream queue kernels only, and the outputs kernelkit
    /// allocates for them are graph allocations with CUDA's rules: see
    /// [`CallError::Capturing`](crate::CallError::Capturing).
    #[inline]
    pub fn capturing(&self) -> Result<bool> {
        #[cfg(feature = "cuda")]
        if let Some(s) = self.handle().cuda() {
            return s.capturing();
        }
        Ok(false)
    }

    /// Whether kernelkit itself is capturing this stream now, for a graph
    /// it replays on the stream the arrays belong to ([`Stream::capture`]):
    /// that replay orders them, so a launch captured here waits for no
    /// other stream, before or after.
    pub(crate) fn captured_for_replay(&self) -> bool {
        #[cfg(feature = "cuda")]
        if let Some(s) = self.handle().cuda() {
            return s.own_capture();
        }
        false
    }

    /// Whether this stream might be capturing (someone else may capture
    /// it): a relaxed load, no driver call; ask [`Stream::capturing`]
    /// only when true. For the hot paths.
    #[inline(always)]
    pub(crate) fn may_capture(&self) -> bool {
        #[cfg(feature = "cuda")]
        if let Some(s) = self.handle().cuda() {
            return s.may_capture();
        }
        false
    }

    /// Makes the work queued on this stream from now on wait for the work
    /// queued on `earlier` so far, without a host wait (CUDA: an event
    /// recorded on `earlier` and waited for here). On the CPU, launches
    /// finish before they return: there is nothing to order. Streams of
    /// two devices are refused. When exactly one of the two streams is
    /// being captured into a CUDA graph, nothing is ordered (an event wait
    /// across a capture's border would break the capture): order the
    /// graph's replays with the graph's own stream instead.
    pub fn wait_for(&self, earlier: &Stream) -> Result<()> {
        if self.device() != earlier.device() {
            return Err(crate::error::DeviceError::Unavailable {
                device: self.device().label().to_string(),
                reason: format!(
                    "its stream cannot wait for a stream of {}",
                    earlier.device().label()
                ),
            }
            .into());
        }
        #[cfg(feature = "cuda")]
        if let (Some(later), Some(earlier)) = (self.handle().cuda(), earlier.handle().cuda()) {
            crate::backend::cuda::order_after(later, vec![earlier.clone()]);
        }
        Ok(())
    }

    /// A stream of `device` over a stream another library made.
    pub(crate) fn wrap(device: &Device, stream: crate::backend::ForeignStream) -> Result<Stream> {
        Ok(Stream::own(device, device.0.backend.wrap_stream(stream)?))
    }

    /// A stream of its own over `handle`, a stream of `device`'s backend.
    pub(super) fn own(device: &Device, handle: StreamHandle) -> Stream {
        Stream(Link::Own(Arc::new(StreamShared {
            device: device.clone(),
            handle,
            id: next_stream_id(),
        })))
    }

    /// `device`'s default stream, lent out (its state lives in the device).
    pub(super) fn default_of(device: Device) -> Stream {
        Stream(Link::Default(device))
    }

    /// The address of the state behind the stream: a stream's own, or its
    /// device's for the default stream. Two live streams have the same one
    /// exactly when they are the same stream.
    #[inline]
    fn identity(&self) -> *const () {
        match &self.0 {
            Link::Own(s) => Arc::as_ptr(s).cast(),
            Link::Default(d) => Arc::as_ptr(&d.0).cast(),
        }
    }
}
