//! `kernelkit.Array`: an output kernelkit allocated, for callers whose
//! arrays came through DLPack (JAX and other array-API libraries). It is
//! handed to the caller's library through `__dlpack__`, without a copy.
//!
//! kernelkit's streams do not synchronise with the legacy default stream,
//! so the export follows the protocol's `stream=`: the consumer's stream
//! (1, the legacy default stream, when it says `None`) is made to wait for
//! the array's producer with an event, never with a host wait; `-1` asks
//! for no ordering.

use kernelkit::interop::dlpack;
use kernelkit::{Array, DeviceKind, Stream};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::errors::{self, IntoPy};
use crate::streams;

/// An array kernelkit allocated (see the module docs): `shape`, `dtype`,
/// `device`, and the DLPack protocol (`np.from_dlpack(a)`,
/// `torch.from_dlpack(a)`, `jax.dlpack.from_dlpack(a)`); `__array__` copies
/// it into a NumPy array.
#[pyclass(frozen, module = "kernelkit", name = "Array")]
pub(crate) struct PyArray {
    pub(crate) array: Array,
    /// The stream that writes it (the call's).
    pub(crate) producer: Option<Stream>,
}

#[pymethods]
impl PyArray {
    /// The extents.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.array.shape())
    }

    /// The dtype's name (`"float32"`, ...).
    #[getter]
    fn dtype(&self) -> &'static str {
        self.array.dtype().name()
    }

    /// The device's name (`"cpu"`, `"cuda:0"`).
    #[getter]
    fn device(&self) -> String {
        self.array.device().label().to_string()
    }

    /// `(device_type, device_id)` as DLPack numbers them.
    fn __dlpack_device__(&self) -> (i32, i32) {
        let device = self.array.device();
        match device.kind() {
            DeviceKind::Cuda => (dlpack::device_type::CUDA, device.id().ordinal as i32),
            _ => (dlpack::device_type::CPU, 0),
        }
    }

    /// A DLPack capsule of the array (no copy), ordered before the
    /// consumer's `stream` (see the module docs).
    #[pyo3(signature = (*, stream = None, max_version = None, dl_device = None, copy = None))]
    fn __dlpack__<'py>(
        &self,
        py: Python<'py>,
        stream: Option<i64>,
        max_version: Option<(u32, u32)>,
        dl_device: Option<(i32, i32)>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if copy == Some(true) {
            return Err(pyo3::exceptions::PyBufferError::new_err(
                "kernelkit.Array exports its memory without copies (copy=True is not supported)",
            ));
        }
        if let Some(d) = dl_device.filter(|d| *d != self.__dlpack_device__()) {
            return Err(pyo3::exceptions::PyBufferError::new_err(format!(
                "kernelkit.Array is on {}, not DLPack device {d:?}",
                self.array.device().label()
            )));
        }
        self.order_before(py, stream)?;
        let versioned = max_version.is_some_and(|(major, _)| major >= 1);
        crate::ffi::dlpack::capsule(py, &self.array, versioned).py_err()?
    }

    /// CUDA's array interface (version 3), for CUDA arrays: the memory in
    /// place, and in `stream` the raw handle of the stream that writes it,
    /// which the consumer waits for. An `AttributeError` on the CPU, so
    /// that `hasattr` tells.
    #[getter]
    fn __cuda_array_interface__<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
        let a = &self.array;
        if a.device().kind() != DeviceKind::Cuda {
            return Err(pyo3::exceptions::PyAttributeError::new_err(
                "__cuda_array_interface__: the array is in host memory",
            ));
        }
        let first = crate::ffi::dlpack::first_element(a).py_err()?;
        let d = pyo3::types::PyDict::new(py);
        d.set_item("version", 3)?;
        d.set_item("shape", PyTuple::new(py, a.shape())?)?;
        d.set_item("typestr", typestr(a.dtype()))?;
        d.set_item("data", (first, !a.is_writable()))?;
        let size = a.dtype().size() as isize;
        let strides: Vec<isize> = a.strides().iter().map(|&s| s * size).collect();
        d.set_item("strides", PyTuple::new(py, strides)?)?;
        let stream = self
            .producer
            .as_ref()
            .and_then(Stream::raw_cuda)
            .map(|raw| if raw == 0 { 1 } else { raw });
        d.set_item("stream", stream)?;
        Ok(d)
    }

    /// A NumPy copy of the array (waits for its stream).
    #[pyo3(signature = (dtype = None, copy = None))]
    fn __array__<'py>(
        &self,
        py: Python<'py>,
        dtype: Option<&Bound<'py, PyAny>>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let _ = copy; // Always a copy: the memory may be a GPU's.
        let array = self.array.clone();
        let bytes = py.detach(|| array.to_bytes()).py_err()?;
        let shape = self.array.shape().to_vec();
        let out = crate::arrays::to_numpy(py, &bytes, &shape, self.array.dtype())?;
        match dtype.filter(|d| !d.is_none()) {
            Some(d) => out.call_method1("astype", (d,)),
            None => Ok(out),
        }
    }

    fn __repr__(&self) -> String {
        format!(
            "kernelkit.Array(shape={:?}, dtype={}, device={})",
            self.array.shape(),
            self.array.dtype(),
            self.array.device().label()
        )
    }
}

impl PyArray {
    /// Orders the consumer's stream after the array's producer (see the
    /// module docs).
    fn order_before(&self, py: Python<'_>, stream: Option<i64>) -> PyResult<()> {
        let device = self.array.device().clone();
        if device.kind() != DeviceKind::Cuda {
            if let Some(s) = stream.filter(|&s| s != -1) {
                return Err(errors::call(format!(
                    "__dlpack__: stream={s} for an array of {} (the CPU has no streams)",
                    device.label()
                )));
            }
            return Ok(());
        }
        let raw =
            match stream {
                Some(-1) => return Ok(()),
                None => 1,
                Some(0) => return Err(errors::call(
                    "__dlpack__: stream=0 is ambiguous (DLPack: 1 for the legacy default stream, \
                     2 for the per-thread one)",
                )),
                Some(s) => u64::try_from(s)
                    .map_err(|_| errors::call(format!("__dlpack__: stream={s} is not a stream")))?,
            };
        let Some(producer) = self.producer.clone() else {
            return Ok(());
        };
        py.detach(|| -> PyResult<()> {
            let consumer = if raw == streams::PER_THREAD {
                streams::wrap_once(&device, raw)?
            } else {
                streams::wrap(&device, raw)?
            };
            consumer.wait_for(&producer).py_err()
        })
    }
}

/// NumPy's type string of a dtype (little-endian), for the CUDA array
/// interface; bfloat16 has none in NumPy and is given as two raw bytes.
fn typestr(dtype: kernelkit::DType) -> &'static str {
    use kernelkit::DType::*;
    match dtype {
        Bool => "|b1",
        U8 => "|u1",
        U16 => "<u2",
        U32 => "<u4",
        U64 => "<u8",
        I8 => "|i1",
        I16 => "<i2",
        I32 => "<i4",
        I64 => "<i8",
        F16 => "<f2",
        BF16 => "<V2",
        F32 => "<f4",
        F64 => "<f8",
        Complex64 => "<c8",
    }
}
