//! Host memory for CPU arrays: 64-byte aligned, zeroed, freed on drop.

use std::alloc::{alloc_zeroed, dealloc, Layout};

use crate::backend::{ArgRef, Memory, Owner};

/// Owns one host allocation.
pub(crate) struct HostMem {
    ptr: *mut u8,
    layout: Layout,
}

// SAFETY: the allocation is plain bytes owned by this value; kernels and
// copies access it through the `Memory`'s address, and callers order those
// accesses (launches run to completion before returning).
unsafe impl Send for HostMem {}
// SAFETY: as above; `HostMem` itself exposes no interior access.
unsafe impl Sync for HostMem {}

impl Drop for HostMem {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from `alloc_zeroed` with this `layout`.
        unsafe { dealloc(self.ptr, self.layout) }
    }
}

/// `len` zeroed bytes, or `None` when the allocator cannot provide them (a
/// size over what the address space or the system allows is a user's
/// mistake to report, not a reason to abort the process).
pub(in crate::backend) fn alloc(len: usize) -> Option<Memory> {
    let layout = Layout::from_size_align(len.max(1), 64).ok()?;
    // SAFETY: the layout has a non-zero size.
    let ptr = unsafe { alloc_zeroed(layout) };
    if ptr.is_null() {
        return None;
    }
    Some(Memory {
        addr: ptr as u64,
        len,
        owner: Owner::Host(HostMem { ptr, layout }),
    })
}

fn bytes(buf: &Memory) -> *mut u8 {
    buf.addr as *mut u8
}

pub(in crate::backend) fn write(buf: &Memory, offset: usize, data: &[u8]) {
    assert!(offset + data.len() <= buf.len);
    // SAFETY: in bounds (checked above); the source is a distinct host slice.
    unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), bytes(buf).add(offset), data.len()) }
}

/// A copy of `len` bytes at `offset`, or `None` when the system cannot
/// provide the memory for it (a huge output is an error, not an abort).
pub(in crate::backend) fn read(buf: &Memory, offset: usize, len: usize) -> Option<Vec<u8>> {
    assert!(offset + len <= buf.len);
    let mut out = Vec::new();
    out.try_reserve_exact(len).ok()?;
    // SAFETY: in bounds (checked above) of host memory this backend owns,
    // which nothing writes during the copy (launches run to completion).
    let src = unsafe { std::slice::from_raw_parts(bytes(buf).add(offset), len) };
    out.extend_from_slice(src);
    Some(out)
}

pub(in crate::backend) fn fill(buf: &Memory, pattern: &[u8]) {
    if pattern.is_empty() {
        return;
    }
    // SAFETY: the buffer is `len` bytes of host memory this backend owns.
    let dst = unsafe { std::slice::from_raw_parts_mut(bytes(buf), buf.len) };
    for chunk in dst.chunks_mut(pattern.len()) {
        chunk.copy_from_slice(&pattern[..chunk.len()]);
    }
}

/// Copies a strided view into `dst`, row-major.
pub(in crate::backend) fn gather(src: &ArgRef<'_>, dst: &Memory) {
    let size = src.dtype.size();
    let n = src.size();
    assert!(n * size <= dst.len);
    let ndim = src.shape.len();
    let mut index = vec![0usize; ndim];
    let base = src.addr as *const u8;
    for i in 0..n {
        let pos: isize = index
            .iter()
            .zip(src.strides.iter())
            .map(|(&k, &s)| k as isize * s)
            .sum();
        // SAFETY: `pos` addresses an element of the view, which lies inside
        // the source buffer (views are checked when made); the destination
        // slot `i` is inside `dst` (asserted above).
        unsafe {
            std::ptr::copy_nonoverlapping(
                base.offset(pos * size as isize),
                bytes(dst).add(i * size),
                size,
            );
        }
        for axis in (0..ndim).rev() {
            index[axis] += 1;
            if index[axis] < src.shape[axis] {
                break;
            }
            index[axis] = 0;
        }
    }
}
