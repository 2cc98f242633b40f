//! Memory and streams that another library declares through its own
//! protocol, taken at its word: a torch tensor's `data_ptr()`, `shape` and
//! `stride()`, a `__cuda_array_interface__`, a framework's current stream.
//!
//! Rust cannot check a protocol's word; kernelkit checks what can be
//! checked (alignment, strides that overflow, null pointers, and on CUDA
//! the driver is asked whose memory or stream it is), and the rest is the
//! producer's promise, which the protocol makes to every consumer. This is
//! the one place the crate takes that promise: callers pass only what
//! `owner` itself (or the framework that made a stream) declared, never a
//! layout of their own making.

use kernelkit::interop::{foreign_array, ForeignLayout, ForeignOwner};
use kernelkit::{Array, Device, Stream};
use pyo3::prelude::*;

/// An array over the memory `owner` declares with `layout` (its own
/// protocol's answer, read from it by the caller), kept alive by `owner`
/// while kernelkit holds the array. No copy.
pub(crate) fn declared_array(
    device: &Device,
    layout: ForeignLayout<'_>,
    owner: &Bound<'_, PyAny>,
) -> kernelkit::Result<Array> {
    // SAFETY: the layout is the owner's declaration of memory it holds on
    // `device` (the driver is asked which device when the producer did
    // not say it is the call's); the owner keeps that memory alive while
    // it is kept here, as the array's owner. The producer's writes are
    // ordered by `layout.stream` (its stream, or its order before the
    // call's), and it frees the memory in the order of its current stream,
    // as the protocols say.
    unsafe { foreign_array(device, layout, ForeignOwner::keep(owner.clone().unbind())) }
}

/// A kernelkit stream over `raw`, a CUDA stream a framework made on
/// `device` and keeps (its current stream, or one named by an array
/// interface). kernelkit asks the driver that it is of the device's
/// context before using it, and never destroys it.
pub(crate) fn declared_stream(device: &Device, raw: u64) -> kernelkit::Result<Stream> {
    // SAFETY: `raw` is a stream its framework made and keeps alive (the
    // caller's wrappers are kept no longer than the framework's streams
    // live: `crate::streams`); the driver checks its context.
    unsafe { Stream::from_raw_cuda(device, raw as usize as *mut std::ffi::c_void) }
}
