//! Arrays over memory that another library owns: the checks of a
//! description (alignment, strides, span, device), the storage that holds
//! it, and the lease a use enters while the memory is borrowed.
//!
//! The public constructors are `interop`'s; this floor builds what they
//! describe and checks it the same way for every source (a raw pointer, a
//! DLPack tensor, a cudarc slice, a borrowed host slice).

use std::sync::Arc;

use smallvec::SmallVec;

use super::{checked_size, Array, Place, Shape, SharedStorage, Strides};
use crate::backend::foreign::{ForeignMem, ForeignOwner, Lease};
use crate::backend::{Memory, Owner};
use crate::device::{Device, Stream};
use crate::dtype::DType;
use crate::error::{ArrayError, Result};

/// The alignment a kernel's loads of `dtype` need: its size, but 4 for
/// complex64 (two floats).
pub(crate) fn alignment(dtype: DType) -> usize {
    match dtype {
        DType::Complex64 => 4,
        d => d.size(),
    }
}

/// Where a view's elements lie, in elements from element 0: the lowest and
/// one past the highest reached (`(0, 0)` for an empty view), or why not.
pub(crate) fn element_span(shape: &[usize], strides: &[isize]) -> Result<(isize, isize)> {
    let overflow =
        || ArrayError::Foreign(format!("strides {strides:?} of shape {shape:?} overflow"));
    if shape.contains(&0) {
        return Ok((0, 0));
    }
    let (mut lo, mut hi) = (0isize, 0isize);
    for (&d, &s) in shape.iter().zip(strides) {
        let last = isize::try_from(d - 1).map_err(|_| overflow())?;
        let reach = last.checked_mul(s).ok_or_else(overflow)?;
        if reach < 0 {
            lo = lo.checked_add(reach).ok_or_else(overflow)?;
        } else {
            hi = hi.checked_add(reach).ok_or_else(overflow)?;
        }
    }
    Ok((lo, hi.checked_add(1).ok_or_else(overflow)?))
}

/// Checks element 0's address `data` of a view of `dtype` whose elements
/// span `[lo, hi)` elements from it (`shape` and `strides` name it in
/// errors): not null, aligned, reaching neither below address 0 nor past
/// the last. The lowest byte address an element lies at and the view's
/// byte length (`data` and 0 for an empty view). Inlined: a rebindable
/// launch runs it for every argument of every run.
#[inline]
pub(crate) fn check_address(
    data: u64,
    dtype: DType,
    (lo, hi): (isize, isize),
    shape: &[usize],
    strides: &[isize],
) -> Result<(u64, usize)> {
    let fail = |m: String| -> crate::Error { ArrayError::Foreign(m).into() };
    let size = dtype.size() as isize;
    let bytes = (hi - lo)
        .checked_mul(size)
        .filter(|&b| b <= isize::MAX / 8)
        .ok_or_else(|| fail(format!("strides {strides:?} of shape {shape:?} overflow")))?;
    if bytes == 0 {
        return Ok((data, 0));
    }
    if data == 0 {
        return Err(fail(format!("a null pointer for {bytes} bytes of {dtype}")));
    }
    let align = alignment(dtype) as u64;
    if !data.is_multiple_of(align) {
        return Err(fail(format!(
            "the address {data:#x} is not aligned for {dtype} ({align} bytes)"
        )));
    }
    let below = (-lo * size) as u64;
    let base = data.checked_sub(below).ok_or_else(|| {
        fail(format!(
            "negative strides {strides:?} reach below address 0"
        ))
    })?;
    base.checked_add(bytes as u64).ok_or_else(|| {
        fail(format!(
            "the array's {bytes} bytes at {data:#x} wrap around"
        ))
    })?;
    Ok((base, bytes as usize))
}

/// The byte addresses `[lo, hi)` the elements of a view of `dtype` lie in,
/// with element 0 at `addr` and the elements spanning `[lo, hi)` elements
/// from it.
pub(crate) fn bytes_at(addr: u64, dtype: DType, (lo, hi): (isize, isize)) -> (u64, u64) {
    let size = dtype.size() as i128;
    let at = |e: isize| (addr as i128 + e as i128 * size) as u64;
    (at(lo), at(hi))
}

/// Whether two byte ranges `[lo, hi)`, neither empty, share a byte.
pub(crate) fn bytes_overlap(a: (u64, u64), b: (u64, u64)) -> bool {
    a.0 < a.1 && b.0 < b.1 && a.0 < b.1 && b.0 < a.1
}

/// A foreign array's description, checked: the memory it spans and the
/// layout of its elements in it.
pub(crate) struct Described {
    /// The lowest byte address any element lies at.
    pub(crate) base: u64,
    /// Bytes from `base` to one past the last element.
    pub(crate) len: usize,
    pub(crate) shape: Shape,
    pub(crate) strides: Strides,
    /// Element 0's offset from `base`, in elements.
    pub(crate) offset: usize,
}

/// Checks a description of foreign memory: element 0 at `data`, `shape`
/// and `strides` in elements (row-major when `None`).
pub(crate) fn describe(
    data: u64,
    dtype: DType,
    shape: &[usize],
    strides: Option<&[isize]>,
) -> Result<Described> {
    let fail = |m: String| -> crate::Error { ArrayError::Foreign(m).into() };
    let shape: Shape = shape.iter().copied().collect();
    let strides: Strides = match strides {
        Some(s) if s.len() != shape.len() => {
            return Err(fail(format!(
                "{} strides for the {} axes of shape {shape:?}",
                s.len(),
                shape.len()
            )))
        }
        Some(s) => s.iter().copied().collect(),
        None => super::row_major_strides(&shape),
    };
    if checked_size(&shape, dtype).is_none() {
        return Err(ArrayError::Overflow(shape.to_vec()).into());
    }
    let (lo, hi) = element_span(&shape, &strides)?;
    let (base, bytes) = check_address(data, dtype, (lo, hi), &shape, &strides)?;
    if bytes == 0 {
        return Ok(Described {
            base,
            len: 0,
            shape,
            strides,
            offset: 0,
        });
    }
    Ok(Described {
        base,
        len: bytes,
        shape,
        strides,
        offset: (-lo) as usize,
    })
}

/// What [`build`] makes an array of.
pub(crate) struct Source {
    pub(crate) owner: ForeignOwner,
    pub(crate) lease: Option<Arc<Lease>>,
    pub(crate) read_only: bool,
    /// The producer said the memory is the device's: the driver is not
    /// asked (see `ForeignLayout::device_known`).
    pub(crate) device_known: bool,
    /// The owner's per-launch bookkeeping (cudarc's events).
    #[cfg(feature = "cuda")]
    pub(crate) access: Option<Box<dyn crate::backend::foreign::ForeignAccess>>,
}

/// An array over described foreign memory on `device`, written (and so
/// waited for) in the order of `stream` when one is named. The device
/// checks the memory is its own (CUDA asks the driver) unless the source
/// says its producer told.
pub(crate) fn build(
    device: &Device,
    described: Described,
    dtype: DType,
    stream: Option<&Stream>,
    source: Source,
) -> Result<Array> {
    device.check_dtype(dtype)?;
    if let Some(s) = stream {
        if s.device() != device {
            return Err(ArrayError::Foreign(format!(
                "the stream is of {}, the array of {}",
                s.device().label(),
                device.label()
            ))
            .into());
        }
    }
    if described.len > 0 && !source.device_known {
        device
            .backend()
            .check_foreign(described.base, described.len)
            .map_err(|e| ArrayError::Foreign(e.to_string()))?;
    }
    #[allow(unused_mut)]
    let mut mem = ForeignMem::new(source.owner, source.lease, source.read_only);
    #[cfg(feature = "cuda")]
    {
        mem.access = source.access;
    }
    let memory = Memory {
        addr: described.base,
        len: described.len,
        owner: Owner::Foreign(Box::new(mem)),
    };
    let place = match stream {
        Some(s) => Place::Queued(s.clone()),
        None => Place::Ready(device.clone()),
    };
    Ok(Array {
        storage: SharedStorage::new(memory, place),
        shape: described.shape,
        strides: described.strides,
        offset: described.offset,
        dtype,
    })
}

/// A use of borrowed memory in progress (see [`Lease`]): left when dropped.
pub(crate) struct LeaseUse<'a>(&'a Lease);

impl Drop for LeaseUse<'_> {
    fn drop(&mut self) {
        self.0.leave();
    }
}

impl Array {
    /// The foreign memory this array views, if another library owns it.
    #[inline]
    pub(crate) fn foreign_mem(&self) -> Option<&ForeignMem> {
        self.storage.mem.foreign()
    }

    /// The stream a foreign array's owner named for it: calls without a
    /// stream whose first input has one run there.
    #[inline]
    pub(crate) fn foreign_stream(&self) -> Option<&Stream> {
        self.foreign_mem()?;
        self.producer()
    }

    /// Starts a use of the array's memory: nothing to hold for memory that
    /// is not borrowed, a [`LeaseUse`] for borrowed memory, an error once
    /// its borrow has ended.
    pub(crate) fn enter(&self) -> Result<Option<LeaseUse<'_>>, ArrayError> {
        match self.foreign_mem().and_then(|m| m.lease.as_deref()) {
            None => Ok(None),
            Some(lease) if lease.enter() => Ok(Some(LeaseUse(lease))),
            Some(_) => Err(ArrayError::Revoked),
        }
    }

    /// Runs `f`, which reads the array's memory on `stream`, inside its
    /// owner's bookkeeping if the owner keeps any (cudarc: on a cudarc
    /// stream only).
    pub(crate) fn with_owner<R>(
        &self,
        stream: &Stream,
        f: impl FnOnce() -> Result<R>,
    ) -> Result<R> {
        #[cfg(feature = "cuda")]
        if let Some(hook) = self.foreign_mem().and_then(|m| m.access.as_deref()) {
            let cudarc = stream
                .handle()
                .cuda()
                .and_then(|s| s.cudarc())
                .ok_or_else(|| {
                    ArrayError::Foreign("cudarc memory is read on cudarc streams only".into())
                })?;
            let mut f = Some(f);
            let mut out = None;
            around(&[(false, hook)], cudarc, &mut || {
                out = Some(f.take().expect("run once")()?);
                Ok(())
            })?;
            return Ok(out.expect("ran"));
        }
        let _ = stream;
        f()
    }

    /// Whether kernels may write the array's memory.
    pub fn is_writable(&self) -> bool {
        self.foreign_mem().is_none_or(|m| !m.read_only)
    }

    /// Whether the array views memory that another library owns.
    pub fn is_foreign(&self) -> bool {
        self.foreign_mem().is_some()
    }

    /// Whether the array views borrowed memory whose borrow has ended: any
    /// use of it is an error.
    pub fn is_revoked(&self) -> bool {
        self.foreign_mem()
            .and_then(|m| m.lease.as_deref())
            .is_some_and(Lease::revoked)
    }

    /// The byte addresses the array's elements lie in: `[lo, hi)`.
    pub(crate) fn byte_span(&self) -> (u64, u64) {
        let span = element_span(&self.shape, &self.strides).unwrap_or((0, 0));
        if span.0 == span.1 {
            return (0, 0);
        }
        bytes_at(self.data_addr(), self.dtype, span)
    }

    /// Whether the elements of `self` and `other` may share bytes.
    pub(crate) fn overlaps(&self, other: &Array) -> bool {
        bytes_overlap(self.byte_span(), other.byte_span())
    }
}

/// Runs `run` inside `hooks[0]`'s bookkeeping (`(write, hook)`), inside
/// `hooks[1]`'s, and so on: each owner sees the work `run` queues on
/// `stream`.
#[cfg(feature = "cuda")]
pub(crate) fn around(
    hooks: &[(bool, &dyn crate::backend::foreign::ForeignAccess)],
    stream: &Arc<cudarc::driver::CudaStream>,
    run: &mut dyn FnMut() -> Result<()>,
) -> Result<()> {
    match hooks.split_first() {
        None => run(),
        Some((&(write, hook), rest)) => {
            hook.around(stream, write, &mut || around(rest, stream, run))
        }
    }
}

/// The leases of a call's foreign arguments, entered: held until the
/// launch is queued.
pub(crate) type LeaseUses<'a> = SmallVec<[LeaseUse<'a>; 4]>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_of_positive_negative_and_broadcast_strides() {
        assert_eq!(element_span(&[2, 3], &[3, 1]).unwrap(), (0, 6));
        assert_eq!(element_span(&[2, 3], &[-3, 1]).unwrap(), (-3, 3));
        assert_eq!(element_span(&[4], &[0]).unwrap(), (0, 1));
        assert_eq!(element_span(&[0, 3], &[3, 1]).unwrap(), (0, 0));
        assert!(element_span(&[3, 1 << 40], &[isize::MAX / 2, 1]).is_err());
    }

    #[test]
    fn descriptions_are_checked() {
        let ok = describe(0x1000, DType::F32, &[2, 3], None).unwrap();
        assert_eq!((ok.base, ok.len, ok.offset), (0x1000, 24, 0));
        let neg = describe(0x1000, DType::F32, &[3], Some(&[-1])).unwrap();
        assert_eq!((neg.base, neg.len, neg.offset), (0x1000 - 8, 12, 2));
        let e = |r: Result<Described>| r.err().unwrap().to_string();
        assert!(e(describe(0x1002, DType::F32, &[2], None)).contains("not aligned"));
        assert!(e(describe(0, DType::F32, &[2], None)).contains("null"));
        assert!(e(describe(0x1000, DType::F32, &[2], Some(&[1, 1]))).contains("strides"));
        assert!(e(describe(
            0x1000,
            DType::F32,
            &[2, 2],
            Some(&[isize::MAX, 1])
        ))
        .contains("overflow"));
        assert!(e(describe(0x4, DType::F32, &[3], Some(&[-4]))).contains("below"));
        assert!(describe(0x1004, DType::Complex64, &[1], None).is_ok());
    }
}
