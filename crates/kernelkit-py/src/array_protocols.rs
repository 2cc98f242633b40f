//! Arrays of any library through `__cuda_array_interface__` (CuPy, Numba,
//! ...) and `__dlpack__` (JAX, and every array-API library), without
//! copies; and the capsules of the DLPack outputs this crate exports.
//!
//! Streams follow each protocol: a `__cuda_array_interface__` names the
//! stream whose work writes the memory (kernelkit waits for it, with an
//! event, unless it is the call's own); `__dlpack__(stream=S)` asks the
//! producer to order its work before stream `S`, the call's stream (0 is
//! never sent: 1 is the legacy default stream, 2 the per-thread one).

use std::ffi::{c_void, CStr};

use kernelkit::interop::{dlpack, foreign_array, ForeignLayout, ForeignOwner};
use kernelkit::{Array, DType, Device, Stream};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use pyo3::{ffi, intern};
use smallvec::SmallVec;

use crate::arrays::Named;
use crate::device::Place;
use crate::errors::{self, IntoPy};

/// A `__cuda_array_interface__`, read.
pub(crate) struct Interface {
    pub data: u64,
    pub read_only: bool,
    pub dtype: DType,
    pub shape: SmallVec<[usize; 4]>,
    /// In elements; `None` for row-major.
    pub strides: Option<SmallVec<[isize; 4]>>,
    /// The stream that writes the memory (`None`: complete now).
    pub stream: Option<u64>,
    /// The CUDA device, when the object says (`obj.device.id`, CuPy's).
    pub ordinal: Option<u32>,
}

/// The kernelkit dtype of a NumPy type string (`<f4`, `|b1`, ...).
pub(crate) fn dtype_of_typestr(typestr: &str) -> Option<DType> {
    let bytes = typestr.as_bytes();
    if bytes.len() < 3 || bytes[0] == b'>' {
        return None;
    }
    let size: usize = typestr[2..].parse().ok()?;
    crate::dtypes::dtype_of_kind(bytes[1], size)
}

/// Reads `obj.__cuda_array_interface__` (`iface`); `what` names it.
pub(crate) fn read_interface(
    obj: &Bound<'_, PyAny>,
    iface: &Bound<'_, PyAny>,
    what: &dyn std::fmt::Display,
) -> PyResult<Interface> {
    let py = obj.py();
    let bad = |m: String| errors::argument_type(format!("{what}: __cuda_array_interface__ {m}"));
    let dict = iface
        .cast::<PyDict>()
        .map_err(|_| bad("is not a dict".into()))?;
    let get = |key: &str| dict.get_item(key).ok().flatten().filter(|v| !v.is_none());
    if get("mask").is_some() {
        return Err(bad("has a mask, which kernelkit does not read".into()));
    }
    let data = get("data").ok_or_else(|| bad("has no data".into()))?;
    let (ptr, read_only): (u64, bool) = data
        .extract()
        .map_err(|_| bad("data is not (pointer, read_only)".into()))?;
    let typestr: String = get("typestr")
        .ok_or_else(|| bad("has no typestr".into()))?
        .extract()?;
    let dtype = dtype_of_typestr(&typestr).ok_or_else(|| {
        bad(format!(
            "typestr {typestr:?} is not a kernelkit dtype (bool, (u)int8..64, float16, \
             float32, float64, complex64, little-endian)"
        ))
    })?;
    let shape: SmallVec<[usize; 4]> = get("shape")
        .ok_or_else(|| bad("has no shape".into()))?
        .extract::<Vec<usize>>()?
        .into_iter()
        .collect();
    let strides = match get("strides") {
        None => None,
        Some(s) => {
            let mut elems = SmallVec::new();
            for b in s.extract::<Vec<isize>>()? {
                if b % dtype.size() as isize != 0 {
                    return Err(bad(format!(
                        "strides {b} bytes is not a whole number of {dtype} elements"
                    )));
                }
                elems.push(b / dtype.size() as isize);
            }
            Some(elems)
        }
    };
    let stream = get("stream").map(|s| s.extract::<u64>()).transpose()?;
    let ordinal = obj
        .getattr(intern!(py, "device"))
        .and_then(|d| d.getattr(intern!(py, "id")))
        .and_then(|id| id.extract::<u32>())
        .ok();
    Ok(Interface {
        data: ptr,
        read_only,
        dtype,
        shape,
        strides,
        stream,
        ordinal,
    })
}

/// An array over the memory a `__cuda_array_interface__` describes, kept
/// alive by `obj`, written by `producer` (the interface's stream) if any.
pub(crate) fn interface_array(
    obj: &Bound<'_, PyAny>,
    iface: &Interface,
    device: &Device,
    producer: Option<&Stream>,
    name: &Named<'_>,
) -> PyResult<Array> {
    let layout = ForeignLayout {
        data: iface.data,
        dtype: iface.dtype,
        shape: &iface.shape,
        strides: iface.strides.as_deref(),
        stream: producer,
        read_only: iface.read_only,
        device_known: false,
    };
    // SAFETY: the interface describes memory its object owns on this
    // device (the driver is asked which device it is); the owner keeps the
    // object, so the memory, alive while kernelkit holds the array. Its
    // writes are ordered by `producer` (the interface's stream), and it
    // frees the memory in the order of its current stream, the call's.
    unsafe { foreign_array(device, layout, ForeignOwner::keep(obj.clone().unbind())) }
        .py_err_of(name.kernel, name)
}

/// Where a `__dlpack__` object's memory lives (`__dlpack_device__()`).
pub(crate) fn dlpack_place(
    obj: &Bound<'_, PyAny>,
    what: &dyn std::fmt::Display,
) -> PyResult<Place> {
    let py = obj.py();
    let (kind, id): (i32, i32) = obj
        .call_method0(intern!(py, "__dlpack_device__"))?
        .extract()
        .map_err(|_| {
            errors::argument_type(format!(
                "{what}: __dlpack_device__() is not a (device_type, device_id) pair"
            ))
        })?;
    use dlpack::device_type::*;
    match kind {
        CPU | CUDA_HOST => Ok(Place::Cpu),
        CUDA | CUDA_MANAGED => Ok(Place::Cuda(u32::try_from(id).unwrap_or(0))),
        _ => Err(errors::argument_type(format!(
            "{what} is on DLPack device type {kind} (id {id}); kernelkit takes CPU and CUDA memory"
        ))),
    }
}

const VERSIONED: &CStr = c"dltensor_versioned";
const LEGACY: &CStr = c"dltensor";
const USED_VERSIONED: &CStr = c"used_dltensor_versioned";
const USED_LEGACY: &CStr = c"used_dltensor";

/// The `stream=` a consumer on `stream` sends to `__dlpack__`: the raw
/// handle, never 0 (1 is the legacy default stream), or `None` on the CPU.
fn consumer_stream(stream: &Stream) -> Option<u64> {
    stream.raw_cuda().map(|raw| if raw == 0 { 1 } else { raw })
}

/// An array over a `__dlpack__` object's memory on `device`, its producer
/// asked to order its work before `stream` (the call's). No copy.
pub(crate) fn dlpack_array(
    obj: &Bound<'_, PyAny>,
    device: &Device,
    stream: &Stream,
    name: &Named<'_>,
) -> PyResult<Array> {
    let py = obj.py();
    let kwargs = PyDict::new(py);
    if let Some(s) = consumer_stream(stream) {
        kwargs.set_item(intern!(py, "stream"), s)?;
    }
    let method = obj.getattr(intern!(py, "__dlpack__"))?;
    let versioned = PyDict::new(py);
    versioned.update(kwargs.as_mapping())?;
    versioned.set_item(intern!(py, "max_version"), PyTuple::new(py, [1u32, 1])?)?;
    // Producers older than DLPack 1.0 take no `max_version`.
    let capsule = match method.call((), Some(&versioned)) {
        Ok(c) => c,
        Err(e) if e.is_instance_of::<pyo3::exceptions::PyTypeError>(py) => {
            method.call((), Some(&kwargs))?
        }
        Err(e) => return Err(e),
    };
    let ptr = capsule.as_ptr();
    // SAFETY: the capsule API on a live object (GIL held); `IsValid`
    // checks the type and name before the pointer is read.
    unsafe {
        if ffi::PyCapsule_IsValid(ptr, VERSIONED.as_ptr()) == 1 {
            let tensor = ffi::PyCapsule_GetPointer(ptr, VERSIONED.as_ptr())
                .cast::<dlpack::DLManagedTensorVersioned>();
            // The producer's tensor: valid until its deleter, which the
            // array now owns (called once, from any thread, as DLPack
            // allows); its writes are ordered before `stream` by the
            // exchange above.
            let array = dlpack::import_versioned(device, tensor, Some(stream))
                .py_err_of(name.kernel, name)?;
            rename(ptr, USED_VERSIONED)?;
            return Ok(array);
        }
        if ffi::PyCapsule_IsValid(ptr, LEGACY.as_ptr()) == 1 {
            let tensor =
                ffi::PyCapsule_GetPointer(ptr, LEGACY.as_ptr()).cast::<dlpack::DLManagedTensor>();
            // As above, for the legacy struct.
            let array =
                dlpack::import(device, tensor, Some(stream)).py_err_of(name.kernel, name)?;
            rename(ptr, USED_LEGACY)?;
            return Ok(array);
        }
    }
    Err(errors::argument_type(
        "__dlpack__() returned no DLPack capsule (named dltensor or dltensor_versioned)",
    ))
}

/// Marks a consumed capsule (so that its destructor leaves the tensor to
/// the array that owns it now).
///
/// # Safety
///
/// `capsule` is a live capsule.
unsafe fn rename(capsule: *mut ffi::PyObject, name: &'static CStr) -> PyResult<()> {
    // SAFETY: the caller's contract; the name is a static string.
    if unsafe { ffi::PyCapsule_SetName(capsule, name.as_ptr()) } != 0 {
        return Python::attach(|py| Err(PyErr::fetch(py)));
    }
    Ok(())
}

/// A capsule holding `tensor` (`versioned`: a `DLManagedTensorVersioned`),
/// whose destructor calls the tensor's deleter unless a consumer took it.
pub(crate) fn capsule(
    py: Python<'_>,
    tensor: *mut c_void,
    versioned: bool,
) -> PyResult<Bound<'_, PyAny>> {
    let (name, destructor): (&CStr, ffi::PyCapsule_Destructor) = if versioned {
        (VERSIONED, drop_versioned)
    } else {
        (LEGACY, drop_legacy)
    };
    // SAFETY: creates a capsule around a tensor this module exported; the
    // name is static; NULL (an error) becomes the raised exception.
    unsafe {
        Bound::from_owned_ptr_or_err(
            py,
            ffi::PyCapsule_New(tensor, name.as_ptr(), Some(destructor)),
        )
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
