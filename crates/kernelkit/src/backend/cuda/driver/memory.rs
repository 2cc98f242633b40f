//! Device memory: pools, allocations, copies, fills.

use std::ffi::c_void;

use cudarc::driver::sys;

use super::{check, out, stream_synchronize, DevicePtr, RawPool, RawStream};
use crate::error::DeviceError;

/// `cuMemPoolCreate` of a pool of pinned device memory on device
/// `ordinal`, whose release threshold (`cuMemPoolSetAttribute`) keeps
/// freed memory mapped, for stream-ordered allocation.
pub(in crate::backend::cuda) fn mem_pool_create(
    ordinal: u32,
    label: &str,
) -> Result<RawPool, DeviceError> {
    // SAFETY: the props are plain data, zero meaning "default" for every
    // field not set here.
    let mut props: sys::CUmemPoolProps = unsafe { std::mem::zeroed() };
    props.allocType = sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED;
    props.handleTypes = sys::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_NONE;
    props.location.type_ = sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = i32::try_from(ordinal).unwrap_or(i32::MAX);
    // SAFETY: writes one pool handle; reads `props` during the call.
    let pool = unsafe {
        out(label, "cuMemPoolCreate", |p| {
            sys::cuMemPoolCreate(p, &props)
        })
    }?;
    let mut threshold: u64 = u64::MAX;
    // SAFETY: the release threshold attribute is a u64, read during the
    // call.
    let set = check(
        unsafe {
            sys::cuMemPoolSetAttribute(
                pool,
                sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                (&mut threshold as *mut u64).cast(),
            )
        },
        label,
        "cuMemPoolSetAttribute",
    );
    if let Err(e) = set {
        mem_pool_destroy(RawPool(pool));
        return Err(e);
    }
    Ok(RawPool(pool))
}

/// `cuMemPoolDestroy`. Its result is ignored (it runs in a `Drop`).
pub(in crate::backend::cuda) fn mem_pool_destroy(pool: RawPool) {
    // SAFETY: destroys a pool; the caller uses the handle no more.
    unsafe {
        sys::cuMemPoolDestroy(pool.0);
    }
}

/// `cuMemAllocFromPoolAsync`: `bytes` from `pool`, usable in `stream`'s
/// order.
pub(in crate::backend::cuda) fn mem_alloc_from_pool(
    bytes: usize,
    pool: RawPool,
    stream: RawStream,
    label: &str,
) -> Result<DevicePtr, DeviceError> {
    // SAFETY: writes one device address.
    unsafe {
        out(label, "cuMemAllocFromPoolAsync", |p| {
            sys::cuMemAllocFromPoolAsync(p, bytes, pool.0, stream.0)
        })
    }
}

/// `cuMemAlloc`.
pub(in crate::backend::cuda) fn mem_alloc(
    bytes: usize,
    label: &str,
) -> Result<DevicePtr, DeviceError> {
    // SAFETY: writes one device address.
    unsafe { out(label, "cuMemAlloc", |p| sys::cuMemAlloc_v2(p, bytes)) }
}

/// `cuMemFreeAsync` in `stream`'s order. Its result is ignored: a block
/// that cannot be given back stays with the driver.
pub(in crate::backend::cuda) fn mem_free_async(ptr: DevicePtr, stream: RawStream) {
    // SAFETY: frees device memory in stream order; the host never
    // dereferences it.
    unsafe {
        sys::cuMemFreeAsync(ptr, stream.0);
    }
}

/// `cuMemFree`. Its result is ignored, as [`mem_free_async`]'s.
pub(in crate::backend::cuda) fn mem_free(ptr: DevicePtr) {
    // SAFETY: frees device memory; the host never dereferences it.
    unsafe {
        sys::cuMemFree_v2(ptr);
    }
}

/// Copies `src` to device address `dst` in `stream`'s order and waits for
/// the stream (`cuMemcpyHtoDAsync`, `cuStreamSynchronize`), so the host
/// memory is no longer read when this returns.
pub(in crate::backend::cuda) fn copy_to_device(
    dst: DevicePtr,
    src: &[u8],
    stream: RawStream,
    label: &str,
) -> Result<(), DeviceError> {
    // SAFETY: reads `src.len()` bytes of the borrowed slice; the wait
    // below ends before the borrow does (from pageable memory the copy has
    // read the slice when the call returns; from pinned memory it has
    // once the stream is done).
    check(
        unsafe {
            sys::cuMemcpyHtoDAsync_v2(dst, src.as_ptr().cast::<c_void>(), src.len(), stream.0)
        },
        label,
        "cuMemcpyHtoDAsync",
    )?;
    stream_synchronize(stream, label)
}

/// Copies `dst.len()` bytes at device address `src` into `dst` in
/// `stream`'s order and waits for the stream (`cuMemcpyDtoHAsync`,
/// `cuStreamSynchronize`), so the host memory is written when this
/// returns.
pub(in crate::backend::cuda) fn copy_to_host(
    dst: &mut [u8],
    src: DevicePtr,
    stream: RawStream,
    label: &str,
) -> Result<(), DeviceError> {
    // SAFETY: writes at most `dst.len()` bytes of the borrowed slice; the
    // wait below ends before the borrow does.
    check(
        unsafe {
            sys::cuMemcpyDtoHAsync_v2(dst.as_mut_ptr().cast::<c_void>(), src, dst.len(), stream.0)
        },
        label,
        "cuMemcpyDtoHAsync",
    )?;
    stream_synchronize(stream, label)
}

/// The device fills (`cuMemsetD8Async` and friends), each setting `n`
/// elements from `dst` in `stream`'s order. Errors name them
/// `cuMemsetAsync`.
pub(in crate::backend::cuda) mod memset {
    use super::{check, sys, DeviceError, DevicePtr, RawStream};

    /// `n` bytes of `value`.
    pub(in crate::backend::cuda) fn d8(
        dst: DevicePtr,
        value: u8,
        n: usize,
        stream: RawStream,
        label: &str,
    ) -> Result<(), DeviceError> {
        // SAFETY: writes device memory only.
        check(
            unsafe { sys::cuMemsetD8Async(dst, value, n, stream.0) },
            label,
            "cuMemsetAsync",
        )
    }

    /// `n` 16-bit words of `value`.
    pub(in crate::backend::cuda) fn d16(
        dst: DevicePtr,
        value: u16,
        n: usize,
        stream: RawStream,
        label: &str,
    ) -> Result<(), DeviceError> {
        // SAFETY: writes device memory only.
        check(
            unsafe { sys::cuMemsetD16Async(dst, value, n, stream.0) },
            label,
            "cuMemsetAsync",
        )
    }

    /// `n` 32-bit words of `value`.
    pub(in crate::backend::cuda) fn d32(
        dst: DevicePtr,
        value: u32,
        n: usize,
        stream: RawStream,
        label: &str,
    ) -> Result<(), DeviceError> {
        // SAFETY: writes device memory only.
        check(
            unsafe { sys::cuMemsetD32Async(dst, value, n, stream.0) },
            label,
            "cuMemsetAsync",
        )
    }

    /// `n` 32-bit words of `value`, `pitch` bytes apart (one column of a
    /// 2-D fill).
    pub(in crate::backend::cuda) fn d32_strided(
        dst: DevicePtr,
        pitch: usize,
        value: u32,
        n: usize,
        stream: RawStream,
        label: &str,
    ) -> Result<(), DeviceError> {
        // SAFETY: writes device memory only.
        check(
            unsafe { sys::cuMemsetD2D32Async(dst, pitch, value, 1, n, stream.0) },
            label,
            "cuMemsetAsync",
        )
    }
}

/// The device ordinal that owns `ptr` (`cuPointerGetAttribute`,
/// `CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL`): `None` for an address the driver
/// does not know (host memory that was never registered).
pub(in crate::backend::cuda) fn pointer_device(
    ptr: DevicePtr,
    label: &str,
) -> Result<Option<i32>, DeviceError> {
    let mut ordinal: i32 = -1;
    // SAFETY: the attribute is an int, written during the call.
    let r = unsafe {
        sys::cuPointerGetAttribute(
            (&mut ordinal as *mut i32).cast(),
            sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
            ptr,
        )
    };
    if r == sys::CUresult::CUDA_ERROR_INVALID_VALUE {
        return Ok(None);
    }
    check(r, label, "cuPointerGetAttribute")?;
    Ok(Some(ordinal))
}
