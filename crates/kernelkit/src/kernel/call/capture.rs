//! Calls on a stream that is being captured into a CUDA graph (PyTorch's
//! `torch.cuda.graph`, a raw `cuStreamBeginCapture`): while capturing, a
//! call queues its work and nothing else: no synchronize, no event query,
//! no host allocation, no compile and no module load. A warm call is
//! captured like any kernel node.
//!
//! Compiling or loading a call's variant, which the driver forbids during
//! a capture (or which would stall it), is refused here with a typed error
//! before anything reaches the stream, so the capture stays valid and the
//! caller learns which kernel to compile first. (Host waits are refused in
//! `device::dispatch`.)
//!
//! Only a call whose variant has not kept its function for the device
//! asks the stream (a cold path): a warm call reads one word here.
//!
//! # Outputs under a capture
//!
//! Outputs given by the caller (`Call::output_into`; in Python `out=`, or
//! PyTorch tensors, which come from torch's own graph-aware allocator) are
//! written in place. Outputs that kernelkit allocates are **graph
//! allocations**: `cuMemAllocFromPoolAsync` from the device's
//! stream-ordered pool on the capturing stream, which the driver records
//! as an allocation node of the graph. Such memory never comes from or goes
//! back to kernelkit's block caches, so it is never shared with an
//! ordinary array. (A strided input of a kernel that asks for row-contiguous
//! inputs is copied into a graph allocation the same way, once the copy
//! kernel was loaded by an earlier strided call on the device.)
//!
//! CUDA's rules for graph allocations, which the caller keeps:
//!
//! - **The address is the graph's.** It is fixed when the call is captured
//!   and stays the same at every launch of the graph; the memory is live
//!   from a launch that reaches the allocation until it is freed. Read the
//!   array (`to_vec`, another call) only in work ordered after a launch of
//!   the graph (on the captured stream, or a stream that waits for it): it
//!   holds nothing before the graph first ran.
//! - **Dropped during the capture, it is freed by the graph.** Dropping the
//!   array while its stream still captures records a free node: the memory
//!   is the graph's scratch, allocated and freed at every launch. Such a
//!   graph can be launched any number of times.
//! - **Kept past the capture, it must be freed before the graph is launched
//!   again**, or the launch fails (`CUDA_ERROR_INVALID_VALUE`), unless the
//!   graph was instantiated with `CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH`
//!   (PyTorch and most users do): then every launch frees the previous
//!   launch's allocation and makes it again at the same address, so the
//!   array holds the latest launch's results. Dropping the array after the
//!   capture frees the memory in its stream's order (`cuMemFreeAsync`,
//!   after every other stream that used it is ordered before); drop it
//!   after the graph's last launch, ordered after that launch (launch the
//!   graph on the captured stream, or make it wait). Launches after the
//!   drop make memory that nothing frees but a later launch with auto-free,
//!   and destroying a graph frees none of it. A graph never launched has
//!   no live allocation: drop its arrays before destroying it.
//! - **Dropped during another capture of its stream**, the free is recorded
//!   in that other graph, which then frees the first graph's allocation
//!   when it runs: launch the first graph before it, every time.
//!
//! A device whose driver has no stream-ordered memory pools cannot allocate
//! under a capture (`cuMemAlloc` is forbidden there): such a call is a
//! [`CallError::Capturing`] naming the output, before anything is queued.
//! On the CPU nothing is ever captured.

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
    variant.function_on(device, kernel)
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
