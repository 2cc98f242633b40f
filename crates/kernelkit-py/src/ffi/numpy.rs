//! NumPy arrays' own fields and memory, read and written from Rust.
//!
//! Every function takes the array as a `Bound`, so the object is alive and
//! the GIL is held (the module is `gil_used`): no Python code resizes or
//! frees an array's buffer while one of these reads it. The byte spans are
//! checked against the array's shape and strides here, not trusted from
//! the caller.

use kernelkit::interop::{foreign_array, ForeignLayout, ForeignOwner};
use kernelkit::{Array, DType, Device};
use numpy::npyffi::{self, NPY_ARRAY_WRITEABLE, PY_ARRAY_API};
use numpy::{PyArrayDescr, PyArrayDescrMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::prelude::*;

/// The address of `array`'s first element and whether NumPy lets it be
/// written (its `WRITEABLE` flag).
#[inline]
fn fields(array: &Bound<'_, PyUntypedArray>) -> (u64, bool) {
    // SAFETY: `as_array_ptr` is the live array object (`Bound`) and the GIL
    // is held, so its fields are initialised and not being changed; two
    // plain words are copied out.
    unsafe {
        let raw = &*array.as_array_ptr();
        (
            raw.fields.data as u64,
            raw.fields.flags & NPY_ARRAY_WRITEABLE != 0,
        )
    }
}

/// Whether NumPy lets `array` be written (its `WRITEABLE` flag).
pub(crate) fn is_writeable(array: &Bound<'_, PyUntypedArray>) -> bool {
    fields(array).1
}

/// A kernelkit array over `array`'s host memory, in place, as elements of
/// `dtype` with `strides` (in elements). `None` when `dtype` and `strides`
/// do not describe `array` (its item size and byte strides): the layout
/// is the array's own, never the caller's word. A read-only array is a
/// read-only kernelkit array.
pub(crate) fn host_array(
    array: &Bound<'_, PyUntypedArray>,
    device: &Device,
    dtype: DType,
    strides: &[isize],
) -> Option<kernelkit::Result<Array>> {
    let size = dtype.size();
    let bytes = array.strides();
    if array.dtype().itemsize() != size
        || bytes.len() != strides.len()
        || bytes
            .iter()
            .zip(strides)
            .any(|(&b, &s)| b != s * size as isize)
    {
        return None;
    }
    let (data, writeable) = fields(array);
    let shape = array.shape();
    let layout = ForeignLayout {
        data: if shape.contains(&0) { 0 } else { data },
        dtype,
        shape,
        strides: Some(strides),
        stream: None,
        read_only: !writeable,
        device_known: false,
    };
    // SAFETY: the layout is the array's own (data, shape, strides and item
    // size read from the object just now, checked above), memory NumPy
    // holds on the host, the CPU device's, alive while the owner keeps the
    // array object (NumPy keeps a view's base alive). CPU launches finish
    // before they return, and the GIL is taken again only then, so no
    // Python code writes the memory while a kernel reads it except through
    // the call's own outputs.
    Some(unsafe { foreign_array(device, layout, ForeignOwner::keep(array.clone().unbind())) })
}

/// How many bytes from element 0 the elements of `array` reach: the
/// farthest element's end (negative strides reach back, not forward).
fn forward_reach(array: &Bound<'_, PyUntypedArray>) -> usize {
    let size = array.dtype().itemsize();
    if array.shape().contains(&0) {
        return 0;
    }
    array
        .shape()
        .iter()
        .zip(array.strides())
        .map(|(&d, &s)| (d - 1) * s.max(0) as usize)
        .sum::<usize>()
        + size
}

/// The `len` bytes of `array`'s memory from its first element; `None` when
/// they would reach past its farthest element.
pub(crate) fn bytes_from_first<'a>(
    array: &'a Bound<'_, PyUntypedArray>,
    len: usize,
) -> Option<&'a [u8]> {
    if len == 0 {
        return Some(&[]);
    }
    if len > forward_reach(array) {
        return None;
    }
    // SAFETY: the array object is alive for `'a` (borrowed) and holds its
    // buffer (NumPy keeps the owner alive through `base`); `len` bytes from
    // element 0 lie inside it (checked just above against its own shape
    // and strides). The GIL is held, so no Python code resizes or frees the
    // buffer while it is read; bytes have no alignment requirement.
    Some(unsafe { std::slice::from_raw_parts(fields(array).0 as *const u8, len) })
}

/// Runs `write` on every byte of a writeable C-contiguous `array`; `None`,
/// having run nothing, for any other array. The bytes are lent to `write`
/// alone, for the time it runs.
pub(crate) fn write_bytes<R>(
    array: &Bound<'_, PyUntypedArray>,
    write: impl FnOnce(&mut [u8]) -> R,
) -> Option<R> {
    let (data, writeable) = fields(array);
    if !writeable || !array.is_c_contiguous() {
        return None;
    }
    let len = array.len() * array.dtype().itemsize();
    if len == 0 {
        return Some(write(&mut []));
    }
    // SAFETY: a C-contiguous array's `len` bytes from element 0 are its
    // whole buffer, which NumPy lets be written (flag checked above); the
    // array is alive while borrowed and the GIL is held, so no Python code
    // reads or frees it while `write` runs, and no other slice over it is
    // made meanwhile (the GIL stays with this thread).
    let bytes = unsafe { std::slice::from_raw_parts_mut(data as *mut u8, len) };
    Some(write(bytes))
}

/// A new, uninitialised C-contiguous NumPy array of `shape` and `descr`.
pub(crate) fn empty<'py>(
    py: Python<'py>,
    descr: Bound<'py, PyArrayDescr>,
    shape: &[usize],
) -> PyResult<Bound<'py, PyUntypedArray>> {
    let mut dims: Vec<npyffi::npy_intp> = shape.iter().map(|&d| d as npyffi::npy_intp).collect();
    // SAFETY: `PyArray_NewFromDescr` with no data and no strides allocates
    // a C-contiguous array of `dims`; it steals the descriptor reference
    // that `into_dtype_ptr` hands over, and returns a new reference or
    // NULL with an exception set (turned into an error). `dims` outlives
    // the call. NumPy's C API was loaded when `descr` was made.
    let array = unsafe {
        let ptr = PY_ARRAY_API.PyArray_NewFromDescr(
            py,
            npyffi::get_type_object(py, npyffi::NpyTypes::PyArray_Type),
            descr.into_dtype_ptr(),
            dims.len() as std::os::raw::c_int,
            dims.as_mut_ptr(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            0,
            std::ptr::null_mut(),
        );
        Bound::from_owned_ptr_or_err(py, ptr)?
    };
    Ok(array.cast_into::<PyUntypedArray>()?)
}
