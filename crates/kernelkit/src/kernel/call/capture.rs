//! Calls on a stream that is being captured into a CUDA graph (PyTorch's
//! `torch.cuda.graph`, a raw `cuStreamBeginCapture`): while capturing, a
//! call may only queue its kernel. Compiling or loading its variant, which
//! the driver forbids during a capture (or which would stall it), is
//! refused here with a typed error before anything reaches the stream, so
//! the capture stays valid and the caller learns which kernel to compile
//! first. (Allocations and host waits are refused in `device::dispatch`.)
//!
//! Only a call whose variant has not kept its function for the device
//! asks the stream (a cold path): a warm call reads one word here.

use crate::cache::loaded::FunctionRef;
use crate::device::{Device, Stream};
use crate::error::{CallError, Result};
use crate::kernel::variant::Variant;

/// What a refused call should do instead.
const COMPILE_FIRST: &str = "compile it before capture (run the call once, or `Call::compile`, \
                             with the same inputs' dtypes and template values before the \
                             capture begins)";

/// `variant`'s function on `device`, for a call on `stream`: as
/// [`Variant::function_on`], but a variant that would be compiled or
/// loaded while `stream` is capturing is a [`CallError::Capturing`].
#[inline(always)]
pub(super) fn function_for(
    variant: &Variant,
    device: &Device,
    stream: &Stream,
    kernel: &str,
) -> Result<FunctionRef> {
    // The warm path reads the slot once; only a variant that kept no
    // function asks whether the stream is capturing.
    if let Some(f) = variant.kept_on(device) {
        return Ok(f);
    }
    refuse_cold(variant, device, stream, kernel)?;
    Ok(variant.function_on(device, kernel)?)
}

/// The error for a variant that is not loaded on `device` when `stream`
/// is capturing (one loaded by this device already needs no compile or
/// load: its function is looked up in the module, which a capture allows).
#[cold]
#[inline(never)]
fn refuse_cold(variant: &Variant, device: &Device, stream: &Stream, kernel: &str) -> Result<()> {
    if !stream.capturing()? {
        return Ok(());
    }
    if device
        .cache_state(variant.name(), variant.source_hash128())
        .memory
    {
        return Ok(());
    }
    Err(CallError::Capturing {
        kernel: kernel.to_string(),
        what: format!(
            "its variant `{}` is not compiled and loaded on {} (a compile or module load)",
            variant.name(),
            device.label()
        ),
        advice: COMPILE_FIRST,
    }
    .into())
}
