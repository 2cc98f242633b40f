//! Helpers of the CUDA test files that run on a GPU, on the stand-in
//! driver of `tools/fakecuda`, or skip (`tests/cuda_lifecycle.rs`,
//! `tests/cuda_capture.rs`, `tests/cuda_unload.rs`; included by `#[path]`).

// Each file uses a subset.
#![allow(dead_code)]

use std::sync::Mutex;
use std::thread;

use cudarc::driver::sys;
use kernelkit::{CacheMode, Device, Stream};

/// Runs a test alone: one at a time (each needs to be the only holder of
/// the context, and a capture in the driver's global mode forbids calls
/// from every thread), on a thread of its own that has exited before the
/// next test starts (a thread's spare output holds a stream, and so a
/// device, until the thread's next output or its exit).
pub fn alone(test: impl FnOnce() + Send + 'static) {
    static SERIAL: Mutex<()> = Mutex::new(());
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    if let Err(panic) = thread::spawn(test).join() {
        std::panic::resume_unwind(panic);
    }
}

/// A new CUDA device with no disk tier, or `None` (with the reason printed).
pub fn gpu() -> Option<Device> {
    match Device::builder().cache_mode(CacheMode::Memory).cuda(0) {
        Ok(d) => Some(d),
        Err(e) => {
            println!("skipped: {e}");
            None
        }
    }
}

/// The stand-in driver (kernels do not run there).
pub fn stand_in(device: &Device) -> bool {
    device.description().contains("fakecuda")
}

/// A raw stream of the current context, as another library makes it, and
/// kernelkit's stream over it. The caller destroys the raw stream after
/// every kernelkit object using it is gone.
pub fn foreign_stream(device: &Device) -> (sys::CUstream, Stream) {
    let mut raw: sys::CUstream = std::ptr::null_mut();
    // SAFETY: the device was opened on this thread, so its context is
    // current; writes one stream handle.
    let r = unsafe {
        sys::cuStreamCreate(&mut raw, sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32)
    };
    assert_eq!(r, sys::CUresult::CUDA_SUCCESS);
    // SAFETY: `raw` is a live stream of the device's context, destroyed by
    // the caller only after the returned stream and its arrays are gone.
    let stream = unsafe { Stream::from_raw_cuda(device, raw.cast()) }.unwrap();
    (raw, stream)
}
