//! Kernels on memory and streams that other libraries own, without copies.
//!
//! Every path ends in an ordinary [`Array`] whose memory kernelkit does
//! not own: it is never cached, never kept as a thread's spare and never
//! freed by kernelkit; its owner is told when kernelkit's last array of it
//! goes. Paths, from the most to the least checked:
//!
//! - **Borrowed** ([`scope`]): host slices (`&[T]`, `&mut [T]`) and cudarc
//!   slices and views viewed for the length of a closure, as
//!   [`std::thread::scope`] borrows: when the closure returns, every view
//!   it made is *revoked* (after waiting for uses in progress), so a clone
//!   that escaped is an error
//!   ([`ArrayError::Revoked`](crate::error::ArrayError::Revoked)), never a dangling
//!   pointer.
//! - **Owned by something you hand over** ([`from_vec`]): kernelkit keeps
//!   the owner and drops it with the last array.
//! - **Raw** ([`foreign_array`], `unsafe`): a pointer and its layout, kept
//!   alive by a [`ForeignOwner`] (an `Arc` of anything, or a deleter called
//!   once). [`dlpack`] is built on it; so are language bindings.
//! - **Streams**: [`Stream::from_raw_cuda`](crate::Stream::from_raw_cuda)
//!   (`unsafe`) or [`cudarc::stream`] wrap a stream the caller owns, so
//!   kernels queue in order with the caller's work, without a synchronize;
//!   a foreign array made with a stream is *produced* by it: a call that
//!   names no stream runs there, and a call elsewhere waits for it.
//! - **Outputs in place**: [`Call::output_into`](crate::Call::output_into)
//!   writes an output into any writable array, foreign ones included.
//! - **candle** (feature `candle`): [`candle`] runs kernels on candle
//!   tensors.
//!
//! Checked for every path, as errors: a pointer misaligned for its dtype,
//! strides whose reach overflows, a null pointer, memory the driver says
//! is another device's, a stream of another context, a read-only array
//! given as an output, a borrowed view used after its scope.
//!
//! **What this floor may import:** everything below it; nothing imports it.

#[cfg(feature = "candle")]
pub mod candle;
#[cfg(feature = "cuda")]
pub mod cudarc;
pub mod dlpack;
mod scope;

use crate::array::foreign::{self, Source};
use crate::array::Array;
use crate::device::{Device, Stream};
use crate::dtype::{DType, Element};
use crate::error::Result;

pub use crate::backend::foreign::ForeignOwner;
pub use scope::{scope, Scope};

#[cfg(feature = "cuda")]
pub use crate::backend::foreign::ForeignAccess;

/// A description of memory another library owns, for [`foreign_array`]:
/// element 0's address, the dtype and the layout in elements.
#[derive(Clone, Copy, Debug)]
pub struct ForeignLayout<'a> {
    /// The address of element 0: a host pointer on the CPU, a
    /// `CUdeviceptr` on CUDA (with any byte offset already added).
    pub data: u64,
    /// The element type.
    pub dtype: DType,
    /// The extents.
    pub shape: &'a [usize],
    /// The strides in elements, negative and zero allowed; `None` for
    /// row-major.
    pub strides: Option<&'a [isize]>,
    /// The owner's stream, which writes (produced) the memory: calls that
    /// name no stream run on it, calls on others wait for it. `None`: the
    /// memory is complete now.
    pub stream: Option<&'a Stream>,
    /// Kernels may only read it: giving it to
    /// [`Call::output_into`](crate::Call::output_into) is an error.
    pub read_only: bool,
    /// The producer already said which device holds the memory (a torch
    /// tensor's `get_device()`), so kernelkit does not ask the driver
    /// again: that check is a driver call per array, paid by every call of
    /// a framework's hot path. `false`: CUDA asks the driver that the
    /// memory is `device`'s, and a wrong device is a typed error rather
    /// than a kernel fault.
    pub device_known: bool,
}

impl<'a> ForeignLayout<'a> {
    /// A row-major, writable array of `shape` at `data`, complete now.
    pub fn new(data: u64, dtype: DType, shape: &'a [usize]) -> Self {
        ForeignLayout {
            data,
            dtype,
            shape,
            strides: None,
            stream: None,
            read_only: false,
            device_known: false,
        }
    }
}

/// An array over memory another library owns, kept alive by `owner` until
/// kernelkit's last array of it goes (then `owner` is dropped, or its
/// deleter called, once). No copy is made. The layout is checked (dtype
/// alignment, strides that overflow, null pointers) and, on CUDA, the
/// driver is asked that the memory is `device`'s (unless
/// `layout.device_known`).
///
/// On an error, `owner` is dropped (a deleter is **not** called: the
/// memory is still the caller's).
///
/// # Safety
///
/// - Every element the layout reaches (from `data`, with its strides) lies
///   in one allocation that is `device`'s memory (host memory for the CPU,
///   device memory or managed memory of that GPU for CUDA) and stays valid
///   until `owner` is dropped or its deleter runs.
/// - Nothing writes the memory while kernelkit may read it, except in the
///   order of `layout.stream` (when given); unless `layout.read_only`,
///   nothing reads or writes it while a kernel may write it, except in
///   that order.
/// - On CUDA, the owner frees or reuses the memory only in the order of
///   `layout.stream` (the device's default stream if none): kernelkit
///   orders its own launches on other streams before that stream's next
///   work when its last array goes, and waits for nothing else. An owner
///   that frees outside that order must synchronize first.
pub unsafe fn foreign_array(
    device: &Device,
    layout: ForeignLayout<'_>,
    owner: ForeignOwner,
) -> Result<Array> {
    let described = foreign::describe(layout.data, layout.dtype, layout.shape, layout.strides)?;
    // On an error the owner is dropped unreleased: a deleter runs only
    // when an array that held the memory goes.
    foreign::build(
        device,
        described,
        layout.dtype,
        layout.stream,
        Source {
            owner,
            lease: None,
            read_only: layout.read_only,
            device_known: layout.device_known,
            #[cfg(feature = "cuda")]
            access: None,
        },
    )
}

/// A host array that owns `data` (moved in, not copied), row-major in
/// `shape`: the vector is dropped with kernelkit's last array of it. On
/// the CPU (or a null) device only.
pub fn from_vec<T: Element>(
    device: &Device,
    data: Vec<T>,
    shape: impl IntoIterator<Item = usize>,
) -> Result<Array> {
    let shape: Vec<usize> = shape.into_iter().collect();
    host_device(device)?;
    let n: usize = shape.iter().product();
    if n != data.len() {
        return Err(crate::error::ArrayError::Length {
            len: data.len(),
            shape,
            expected: n,
        }
        .into());
    }
    let mut layout = ForeignLayout::new(data.as_ptr() as u64, T::DTYPE, &shape);
    if n == 0 {
        layout.data = 0;
    }
    // SAFETY: the vector holds `n` elements of `T` laid out row-major in
    // `shape` at its pointer, host memory of the CPU device; it moves into
    // the owner (moving a `Vec` does not move its elements) and nothing
    // else reaches it until the owner drops it, with the last array.
    unsafe { foreign_array(device, layout, ForeignOwner::keep(data)) }
}

/// Refuses a device whose arrays are not host memory.
pub(crate) fn host_device(device: &Device) -> Result<()> {
    match device.kind() {
        crate::DeviceKind::Cpu | crate::DeviceKind::Null => Ok(()),
        _ => Err(crate::error::ArrayError::Foreign(format!(
            "host memory cannot be an array of {}",
            device.label()
        ))
        .into()),
    }
}
