//! DLPack capsules: the ones `__dlpack__` producers hand this crate, read
//! and marked used, and the ones this crate's `kernelkit.Array` hands out.
//!
//! A capsule is a Python object around a pointer, named for what it
//! points at (`dltensor_versioned`, `dltensor`); the name is checked
//! before the pointer is read, and a consumer renames it (`used_...`) so
//! that the capsule's destructor leaves the tensor to whoever took it.

use std::ffi::CStr;

use kernelkit::interop::dlpack;
use kernelkit::{Array, Device, Stream};
use pyo3::ffi;
use pyo3::prelude::*;

const VERSIONED: &CStr = c"dltensor_versioned";
const LEGACY: &CStr = c"dltensor";
const USED_VERSIONED: &CStr = c"used_dltensor_versioned";
const USED_LEGACY: &CStr = c"used_dltensor";

/// The array over the tensor in `capsule` (a DLPack capsule a producer
/// returned from `__dlpack__`), on `device`, its writes ordered before
/// `stream`; the capsule is marked used once the array owns the tensor.
/// `None` when `capsule` is no unused DLPack capsule.
pub(crate) fn import(
    capsule: &Bound<'_, PyAny>,
    device: &Device,
    stream: &Stream,
) -> Option<PyResult<kernelkit::Result<Array>>> {
    let ptr = capsule.as_ptr();
    // SAFETY: the capsule API on a live object (GIL held); `IsValid`
    // checks the object's type and name before its pointer is read, so the
    // pointer is the producer's tensor of that struct, valid until its
    // deleter, which the array owns once imported (called once, from any
    // thread, as DLPack allows); its writes are ordered before `stream` by
    // the `__dlpack__(stream=...)` exchange. A failed import leaves the
    // capsule unused: its destructor deletes the tensor.
    unsafe {
        if ffi::PyCapsule_IsValid(ptr, VERSIONED.as_ptr()) == 1 {
            let tensor = ffi::PyCapsule_GetPointer(ptr, VERSIONED.as_ptr())
                .cast::<dlpack::DLManagedTensorVersioned>();
            return Some(
                match dlpack::import_versioned(device, tensor, Some(stream)) {
                    Ok(array) => rename(capsule, USED_VERSIONED).map(|()| Ok(array)),
                    Err(e) => Ok(Err(e)),
                },
            );
        }
        if ffi::PyCapsule_IsValid(ptr, LEGACY.as_ptr()) == 1 {
            let tensor =
                ffi::PyCapsule_GetPointer(ptr, LEGACY.as_ptr()).cast::<dlpack::DLManagedTensor>();
            return Some(match dlpack::import(device, tensor, Some(stream)) {
                Ok(array) => rename(capsule, USED_LEGACY).map(|()| Ok(array)),
                Err(e) => Ok(Err(e)),
            });
        }
    }
    None
}

/// Marks a consumed capsule (so that its destructor leaves the tensor to
/// the array that owns it now).
fn rename(capsule: &Bound<'_, PyAny>, name: &'static CStr) -> PyResult<()> {
    // SAFETY: `capsule` is a live capsule (checked valid by the caller, the
    // GIL held); the name is a static string, as the capsule API requires.
    if unsafe { ffi::PyCapsule_SetName(capsule.as_ptr(), name.as_ptr()) } != 0 {
        return Err(PyErr::fetch(capsule.py()));
    }
    Ok(())
}

/// A capsule holding a DLPack tensor exported from `array`
/// (`versioned`: a `DLManagedTensorVersioned`), whose destructor calls the
/// tensor's deleter unless a consumer took it.
pub(crate) fn capsule<'py>(
    py: Python<'py>,
    array: &Array,
    versioned: bool,
) -> kernelkit::Result<PyResult<Bound<'py, PyAny>>> {
    let (tensor, name, destructor): (*mut std::ffi::c_void, &CStr, ffi::PyCapsule_Destructor) =
        if versioned {
            (
                dlpack::export_versioned(array)?.cast(),
                VERSIONED,
                drop_versioned,
            )
        } else {
            (dlpack::export(array)?.cast(), LEGACY, drop_legacy)
        };
    // SAFETY: creates a capsule around a tensor just exported, which the
    // capsule now owns (its destructor deletes it unless consumed); the
    // name is static; NULL (an error) becomes the raised exception.
    Ok(unsafe {
        Bound::from_owned_ptr_or_err(
            py,
            ffi::PyCapsule_New(tensor, name.as_ptr(), Some(destructor)),
        )
    })
}

/// The address of `array`'s element 0 as a DLPack export gives it (its
/// data pointer plus byte offset): what another library is told the
/// memory is.
pub(crate) fn first_element(array: &Array) -> kernelkit::Result<u64> {
    let tensor = dlpack::export_versioned(array)?;
    // SAFETY: `export_versioned` returned a live tensor that this function
    // owns; it is read once and then deleted through its own deleter.
    unsafe {
        let t = &(*tensor).dl_tensor;
        let address = t.data as u64 + t.byte_offset;
        if let Some(deleter) = (*tensor).deleter {
            deleter(tensor);
        }
        Ok(address)
    }
}

unsafe extern "C" fn drop_versioned(capsule: *mut ffi::PyObject) {
    // SAFETY: called by Python with the capsule; a consumed capsule was
    // renamed, so only an unconsumed tensor is deleted, once.
    unsafe {
        if ffi::PyCapsule_IsValid(capsule, VERSIONED.as_ptr()) == 1 {
            let t = ffi::PyCapsule_GetPointer(capsule, VERSIONED.as_ptr())
                .cast::<dlpack::DLManagedTensorVersioned>();
            if let Some(deleter) = (*t).deleter {
                deleter(t);
            }
        }
    }
}

unsafe extern "C" fn drop_legacy(capsule: *mut ffi::PyObject) {
    // SAFETY: as `drop_versioned`.
    unsafe {
        if ffi::PyCapsule_IsValid(capsule, LEGACY.as_ptr()) == 1 {
            let t = ffi::PyCapsule_GetPointer(capsule, LEGACY.as_ptr())
                .cast::<dlpack::DLManagedTensor>();
            if let Some(deleter) = (*t).deleter {
                deleter(t);
            }
        }
    }
}
