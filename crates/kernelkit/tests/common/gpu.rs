//! Helpers of the CUDA test files that run on a GPU, on the stand-in
//! driver of `tools/fakecuda`, or skip (`tests/cuda_lifecycle.rs`,
//! `tests/cuda_capture.rs`; included by `#[path]`).

// Each file uses a subset.
#![allow(dead_code)]

use std::sync::Mutex;
use std::thread;

use kernelkit::{CacheMode, Device};

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
