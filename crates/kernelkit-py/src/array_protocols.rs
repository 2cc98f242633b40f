//! Arrays of any library through `__cuda_array_interface__` (CuPy, Numba,
//! ...) and `__dlpack__` (JAX, and every array-API library), without
//! copies (the DLPack capsules themselves are read in `crate::ffi::dlpack`).
//!
//! Streams follow each protocol: a `__cuda_array_interface__` names the
//! stream whose work writes the memory (kernelkit waits for it, with an
//! event, unless it is the call's own); `__dlpack__(stream=S)` asks the
//! producer to order its work before stream `S`, the call's stream (0 is
//! never sent: 1 is the legacy default stream, 2 the per-thread one).

use kernelkit::interop::{dlpack, ForeignLayout};
use kernelkit::{Array, DType, Device, Stream};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
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
    // The interface describes memory its object owns on this device (the
    // driver is asked which device it is); its writes are ordered by
    // `producer` (the interface's stream), and it frees the memory in the
    // order of its current stream, the call's.
    crate::ffi::foreign::declared_array(device, layout, obj).py_err_of(name.kernel, name)
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
    if let Some(imported) = crate::ffi::dlpack::import(&capsule, device, stream) {
        return imported?.py_err_of(name.kernel, name);
    }
    Err(errors::argument_type(
        "__dlpack__() returned no DLPack capsule (named dltensor or dltensor_versioned)",
    ))
}
