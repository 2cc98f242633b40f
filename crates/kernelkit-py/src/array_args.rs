//! What each array argument of a call is, and the kernelkit array over its
//! memory.
//!
//! An argument is looked at once ([`Source::of`]), cheapest test first:
//! a Python scalar, a NumPy array, a torch tensor (read through its
//! methods, `crate::torch`), an object with `__cuda_array_interface__`
//! (CuPy), one with `__dlpack__`. The first array decides the call's
//! *frame*: the device it runs on when `device=`/`stream=` do not say, the
//! stream (torch's or CuPy's current one), and the kind of array its
//! outputs are.
//!
//! Every array is then a kernelkit array over the caller's memory, no copy
//! ([`Source::array`]), except NumPy arrays given to a CUDA device (host
//! memory: copied, `crate::arrays`) and Python scalars (0-d arrays).

use kernelkit::interop::ForeignLayout;
use kernelkit::{Array, Device, Stream};
use numpy::prelude::PyArrayDescrMethods;
use numpy::{PyUntypedArray, PyUntypedArrayMethods};
use pyo3::intern;
use pyo3::prelude::*;

use crate::array_protocols::{self, Interface};
use crate::arrays::{self, Named};
use crate::device::Place;
use crate::dtypes::describe;
use crate::errors::{self, IntoPy};
use crate::torch::{self, Tensor};

/// The kind of array a call's outputs are.
#[derive(Debug)]
pub(crate) enum Frame {
    /// NumPy arrays (also for calls on scalars only).
    NumPy,
    /// torch tensors from `torch.empty`.
    Torch,
    /// CuPy arrays from `cupy.empty`.
    CuPy,
    /// Arrays of another library, through DLPack: the library module whose
    /// `from_dlpack` makes them (`None`: `kernelkit.Array`s).
    Dlpack(Option<Py<PyAny>>),
}

/// One array argument, looked at.
pub(crate) enum Source<'py> {
    /// A Python scalar: a 0-d array of this dtype and bytes.
    Scalar(kernelkit::DType, [u8; 8]),
    NumPy(Bound<'py, PyUntypedArray>),
    Torch(Bound<'py, PyAny>, Tensor),
    Cai(Bound<'py, PyAny>, Interface, bool),
    Dlpack(Bound<'py, PyAny>, Place),
}

impl<'py> Source<'py> {
    /// What `obj` is; a type error naming it when it is no array.
    pub(crate) fn of(obj: &Bound<'py, PyAny>, name: &Named<'_>) -> PyResult<Source<'py>> {
        // torch's hot path first: a `torch.Tensor` itself (or an
        // `nn.Parameter`), once torch was seen, is known by its type's
        // address.
        if torch::is_plain_tensor(obj) {
            let (obj, read) = torch::resolved(obj, name)?;
            return Ok(Source::Torch(obj, read));
        }
        if let Some((dtype, bytes)) = arrays::python_scalar(obj, name)? {
            return Ok(Source::Scalar(dtype, bytes));
        }
        let py = obj.py();
        if arrays::numpy_loaded(py) {
            if let Ok(a) = obj.cast::<PyUntypedArray>() {
                return Ok(Source::NumPy(a.clone()));
            }
            if arrays::is_numpy_scalar(obj)? {
                let a = py.import("numpy")?.getattr("asarray")?.call1((obj,))?;
                return Ok(Source::NumPy(a.cast_into::<PyUntypedArray>()?));
            }
        }
        if torch::is_tensor(obj) {
            let (obj, read) = torch::resolved(obj, name)?;
            return Ok(Source::Torch(obj, read));
        }
        if let Ok(iface) = obj.getattr(intern!(py, "__cuda_array_interface__")) {
            let read = array_protocols::read_interface(obj, &iface, name)?;
            let cupy = obj
                .get_type()
                .module()
                .is_ok_and(|m| m.to_cow().is_ok_and(|m| m.starts_with("cupy")));
            return Ok(Source::Cai(obj.clone(), read, cupy));
        }
        if obj.hasattr(intern!(py, "__dlpack__"))? {
            let place = array_protocols::dlpack_place(obj, name)?;
            return Ok(Source::Dlpack(obj.clone(), place));
        }
        Err(errors::argument_type(format!(
            "kernel `{}`: {} is a {}; expected a NumPy array, a torch tensor, a CuPy array, \
             an object with __cuda_array_interface__ or __dlpack__, or a Python scalar",
            name.kernel,
            name,
            describe(obj)
        )))
    }

    /// Where the array lives (`None` for scalars, which go anywhere).
    pub(crate) fn place(&self) -> Option<Place> {
        match self {
            Source::Scalar(..) => None,
            Source::NumPy(_) => Some(Place::Cpu),
            Source::Torch(_, t) => Some(t.place),
            Source::Cai(_, i, _) => Some(Place::Cuda(i.ordinal.unwrap_or(0))),
            Source::Dlpack(_, p) => Some(*p),
        }
    }

    /// The kind of outputs a call whose first array this is makes.
    pub(crate) fn frame(&self) -> Option<Frame> {
        Some(match self {
            Source::Scalar(..) => return None,
            Source::NumPy(_) => Frame::NumPy,
            Source::Torch(..) => Frame::Torch,
            Source::Cai(_, _, true) => Frame::CuPy,
            Source::Cai(obj, _, false) | Source::Dlpack(obj, _) => {
                Frame::Dlpack(from_dlpack_module(obj))
            }
        })
    }

    /// The kernelkit array over this argument's memory on `device`, for a
    /// call on `stream`; `torch_stream` is torch's current stream of the
    /// device when the call has torch tensors. `output`: it is written.
    pub(crate) fn array(
        &self,
        device: &Device,
        stream: &Stream,
        torch_stream: Option<&Stream>,
        output: bool,
        name: &Named<'_>,
    ) -> PyResult<Array> {
        match self {
            Source::Scalar(dtype, bytes) => {
                if output {
                    return Err(errors::argument_type(format!(
                        "kernel `{}`: out= for {} is a Python scalar",
                        name.kernel, name
                    )));
                }
                Array::from_bytes(device, &bytes[..dtype.size()], [], *dtype).py_err()
            }
            Source::NumPy(a) => {
                if output {
                    // Written in place or refused, never into a copy the
                    // caller would not see.
                    // (A call on a GPU refused it already: it is on the CPU.)
                    arrays::out_array(a.as_any(), name)?;
                    let size = a.dtype().itemsize() as isize;
                    if a.strides().iter().any(|&b| b % size != 0) {
                        return Err(errors::call(format!(
                            "kernel `{}`: out= for {name} is a NumPy array whose strides are \
                             not whole elements, which a kernel cannot write in place",
                            name.kernel
                        )));
                    }
                    return arrays::numpy_host(a, device, name);
                }
                if device.kind() == kernelkit::DeviceKind::Cuda {
                    // Host memory on a GPU: copied (see `arrays`).
                    return arrays::input(a.as_any(), device, name);
                }
                arrays::numpy_host(a, device, name)
            }
            Source::Torch(obj, t) => {
                let producer = match t.place {
                    Place::Cpu => None,
                    Place::Cuda(_) => torch_stream,
                };
                // torch said where the tensor lives (`get_device()`): when
                // that is the call's device the driver need not be asked
                // again (a driver call per tensor per call); otherwise it is,
                // and answers with the typed error.
                let device_known = t.place == Place::of(device);
                let layout = ForeignLayout {
                    data: t.data,
                    dtype: t.dtype,
                    shape: &t.shape,
                    strides: Some(&t.strides),
                    stream: producer,
                    read_only: false,
                    device_known,
                };
                // `data_ptr()`, `shape` and `stride()` describe the tensor's
                // memory on its device, which torch names (`get_device()`;
                // the driver is asked when that is not the call's device).
                // torch writes and frees it in the order of its current
                // stream, `producer`.
                crate::ffi::foreign::declared_array(device, layout, obj)
                    .py_err_of(name.kernel, name)
            }
            Source::Cai(obj, iface, _) => {
                let producer = match iface.stream {
                    Some(raw) if device.kind() == kernelkit::DeviceKind::Cuda => {
                        Some(crate::streams::wrap(device, raw)?)
                    }
                    _ => None,
                };
                array_protocols::interface_array(obj, iface, device, producer.as_ref(), name)
            }
            Source::Dlpack(obj, _) => array_protocols::dlpack_array(obj, device, stream, name),
        }
    }
}

/// The module whose `from_dlpack` turns a `kernelkit.Array` into an array
/// of `obj`'s library: the top module of `obj`'s type (`jax.numpy` for
/// `jaxlib`'s arrays), if it has one.
fn from_dlpack_module(obj: &Bound<'_, PyAny>) -> Option<Py<PyAny>> {
    let py = obj.py();
    let module = obj.get_type().module().ok()?;
    let module = module.to_cow().ok()?.into_owned();
    let root = module.split('.').next().unwrap_or("");
    let name = match root {
        "jax" | "jaxlib" => "jax.numpy",
        other => other,
    };
    let modules = py.import("sys").ok()?.getattr("modules").ok()?;
    let m = modules.get_item(name).ok()?;
    m.hasattr("from_dlpack")
        .unwrap_or(false)
        .then(|| m.unbind())
}
