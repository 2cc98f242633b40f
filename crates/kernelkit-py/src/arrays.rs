//! Python values in and out of kernelkit arrays: NumPy arrays, NumPy and
//! Python scalars.
//!
//! On the CPU a NumPy array is a kernelkit array over its own memory
//! ([`numpy_host`]; a copy only for a byte order or strides kernelkit cannot
//! read, and never for an output). Host memory cannot be a GPU's argument:
//! a call on a CUDA device copies each NumPy input into an array on the
//! device ([`input`]), and its NumPy outputs are read back
//! ([`read_outputs`]) into new arrays ([`to_numpy`]) or the caller's
//! `out=` arrays ([`write_out`]). This module is the only one that copies.
//!
//! Strided NumPy inputs keep their layout where kernelkit's views can
//! express it (see [`crate::strided_copy`]), so `ensure_row_contiguous=False`
//! bodies see real strides; kernelkit itself makes the contiguous copy that
//! `ensure_row_contiguous=True` asks for.

use std::sync::atomic::{AtomicBool, Ordering};

use kernelkit::{Array, DType, Device};
use numpy::{PyArrayDescr, PyArrayDescrMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyComplex, PyFloat, PyInt};
use smallvec::SmallVec;

use crate::dtypes::describe;
use crate::errors::{self, IntoPy};
use crate::ffi;
use crate::strided_copy::plan_view;

/// Names for messages: the kernel and the argument, shown as ``input `x` ``
/// (or `input #3` past the declared names). Formatted only when an error
/// is worded, so a call allocates nothing for it.
pub(crate) struct Named<'a> {
    pub kernel: &'a str,
    /// `input` or `output`.
    pub role: &'static str,
    /// The declared names of that role.
    pub names: &'a [String],
    pub index: usize,
}

impl std::fmt::Display for Named<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.names.get(self.index) {
            Some(n) => write!(f, "{} `{n}`", self.role),
            None => write!(f, "{} #{}", self.role, self.index),
        }
    }
}

/// Set once NumPy is seen imported: until then no object can be a NumPy
/// array, and asking rust-numpy would import NumPy (tens of milliseconds,
/// and a panic inside rust-numpy if it is not installed).
static NUMPY_LOADED: AtomicBool = AtomicBool::new(false);

pub(crate) fn numpy_loaded(py: Python<'_>) -> bool {
    if NUMPY_LOADED.load(Ordering::Relaxed) {
        return true;
    }
    let loaded = py
        .import("sys")
        .and_then(|sys| sys.getattr("modules"))
        .and_then(|m| m.contains("numpy"))
        .unwrap_or(false);
    if loaded {
        NUMPY_LOADED.store(true, Ordering::Relaxed);
    }
    loaded
}

/// Whether `obj` is a NumPy scalar (`np.float32(1)`); NumPy is loaded.
pub(crate) fn is_numpy_scalar(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    static GENERIC: pyo3::sync::PyOnceLock<Py<pyo3::types::PyType>> = pyo3::sync::PyOnceLock::new();
    let py = obj.py();
    let generic = GENERIC.get_or_try_init(py, || -> PyResult<_> {
        Ok(py
            .import("numpy")?
            .getattr("generic")?
            .cast_into::<pyo3::types::PyType>()?
            .unbind())
    })?;
    obj.is_instance(generic.bind(py))
}

/// Imports NumPy (for outputs): an error, not a panic, where it is missing.
fn require_numpy(py: Python<'_>) -> PyResult<()> {
    if !numpy_loaded(py) {
        py.import("numpy")?;
        NUMPY_LOADED.store(true, Ordering::Relaxed);
    }
    Ok(())
}

/// `obj` (a NumPy array, a NumPy scalar, or a Python bool, int, float or
/// complex) as a kernelkit array on `device`.
///
/// Python scalars become 0-d arrays as in MLX: `bool` → bool, `int` →
/// int32 (int64 beyond its range), `float` → float32, `complex` →
/// complex64.
pub(crate) fn input(obj: &Bound<'_, PyAny>, device: &Device, name: &Named<'_>) -> PyResult<Array> {
    if let Some((dtype, bytes)) = python_scalar(obj, name)? {
        return Array::from_bytes(device, &bytes[..dtype.size()], [], dtype).py_err();
    }
    let py = obj.py();
    if numpy_loaded(py) {
        if let Ok(array) = obj.cast::<PyUntypedArray>() {
            return numpy_input(array, device, name);
        }
        let numpy = py.import("numpy")?;
        if obj.is_instance(&numpy.getattr("generic")?)? {
            let array = numpy.getattr("asarray")?.call1((obj,))?;
            return numpy_input(array.cast::<PyUntypedArray>()?, device, name);
        }
    }
    Err(errors::argument_type(format!(
        "kernel `{}`: {} is a {}; expected a NumPy array or a Python scalar \
         (PyTorch, CuPy and DLPack arrays come with zero-copy interop)",
        name.kernel,
        name,
        describe(obj)
    )))
}

/// A Python bool, int, float or complex as (dtype, little-endian bytes).
pub(crate) fn python_scalar(
    obj: &Bound<'_, PyAny>,
    name: &Named<'_>,
) -> PyResult<Option<(DType, [u8; 8])>> {
    let mut bytes = [0u8; 8];
    // `bool` first: it is a subclass of `int`.
    if let Ok(b) = obj.cast::<PyBool>() {
        bytes[0] = b.is_true() as u8;
        return Ok(Some((DType::Bool, bytes)));
    }
    if obj.is_instance_of::<PyInt>() {
        let Ok(v) = obj.extract::<i64>() else {
            return Err(errors::call(format!(
                "kernel `{}`: {} is the int {}, which does not fit int64",
                name.kernel,
                name,
                obj.str()?
            )));
        };
        return Ok(Some(match i32::try_from(v) {
            Ok(v) => {
                bytes[..4].copy_from_slice(&v.to_le_bytes());
                (DType::I32, bytes)
            }
            Err(_) => (DType::I64, v.to_le_bytes()),
        }));
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        bytes[..4].copy_from_slice(&(f.value() as f32).to_le_bytes());
        return Ok(Some((DType::F32, bytes)));
    }
    if let Ok(c) = obj.cast::<PyComplex>() {
        bytes[..4].copy_from_slice(&(c.real() as f32).to_le_bytes());
        bytes[4..].copy_from_slice(&(c.imag() as f32).to_le_bytes());
        return Ok(Some((DType::Complex64, bytes)));
    }
    Ok(None)
}

/// The kernelkit dtype of a NumPy dtype, if kernelkit has it.
fn dtype_of_descr(descr: &Bound<'_, PyArrayDescr>) -> PyResult<Option<DType>> {
    if let Some(dtype) = crate::dtypes::dtype_of_kind(descr.kind(), descr.itemsize()) {
        return Ok(Some(dtype));
    }
    // ml_dtypes' bfloat16 is a NumPy "void"-kind type of two bytes.
    let bf16 = descr.kind() == b'V'
        && descr.itemsize() == 2
        && descr.typeobj().name()?.to_cow()? == "bfloat16";
    Ok(bf16.then_some(DType::BF16))
}

/// A NumPy array as a kernelkit array of the CPU `device` over its own
/// memory: no copy (a copy only for a byte order or strides kernelkit
/// cannot read). The array keeps the NumPy array alive; a read-only NumPy
/// array is a read-only kernelkit array (refused as an output).
pub(crate) fn numpy_host(
    array: &Bound<'_, PyUntypedArray>,
    device: &Device,
    name: &Named<'_>,
) -> PyResult<Array> {
    let descr = array.dtype();
    let Some(dtype) = dtype_of_descr(&descr)? else {
        return Err(unsupported_dtype(&descr, name));
    };
    if descr.is_native_byteorder() == Some(false) {
        let native = descr.call_method1("newbyteorder", ("=",))?;
        let converted = array.call_method1("astype", (native,))?;
        return numpy_host(converted.cast::<PyUntypedArray>()?, device, name);
    }
    let size = dtype.size() as isize;
    let mut strides: SmallVec<[isize; 4]> = SmallVec::new();
    for &b in array.strides() {
        if b % size != 0 {
            let contiguous = array
                .py()
                .import("numpy")?
                .getattr("ascontiguousarray")?
                .call1((array,))?;
            return numpy_host(contiguous.cast::<PyUntypedArray>()?, device, name);
        }
        strides.push(b / size);
    }
    ffi::numpy::host_array(array, device, dtype, &strides)
        .ok_or_else(|| {
            errors::raise(
                errors::Kind::Array,
                format!(
                    "kernel `{}`: {} changed its layout while read",
                    name.kernel, name
                ),
            )
        })?
        .py_err_of(name.kernel, name)
}

/// A new, uninitialised C-contiguous NumPy array of `shape` and `dtype`.
pub(crate) fn numpy_empty<'py>(
    py: Python<'py>,
    shape: &[usize],
    dtype: DType,
) -> PyResult<Bound<'py, PyUntypedArray>> {
    ffi::numpy::empty(py, numpy_dtype(py, dtype)?, shape)
}

/// Makes every byte of a bool NumPy array (C-contiguous, on the host, that
/// a kernel wrote) 0 or 1: a kernel may store any non-zero byte as `true`.
pub(crate) fn normalize_bools(array: &Bound<'_, PyUntypedArray>) {
    if !array.is_c_contiguous() || array.dtype().kind() != b'b' || array.is_empty() {
        return;
    }
    ffi::numpy::write_bytes(array, |bytes| {
        for b in bytes {
            *b = (*b != 0) as u8;
        }
    });
}

fn unsupported_dtype(descr: &Bound<'_, PyArrayDescr>, name: &Named<'_>) -> PyErr {
    errors::argument_type(format!(
        "kernel `{}`: {} has NumPy dtype {}, which kernelkit does not have \
         (bool, (u)int8..64, float16, bfloat16, float32, float64, complex64)",
        name.kernel,
        name,
        descr.str().map(|s| s.to_string()).unwrap_or_default()
    ))
}

/// A NumPy array as a kernelkit array (a copy; see the module docs).
fn numpy_input(
    array: &Bound<'_, PyUntypedArray>,
    device: &Device,
    name: &Named<'_>,
) -> PyResult<Array> {
    let descr = array.dtype();
    let Some(dtype) = dtype_of_descr(&descr)? else {
        return Err(errors::argument_type(format!(
            "kernel `{}`: {} has NumPy dtype {}, which kernelkit does not have \
             (bool, (u)int8..64, float16, bfloat16, float32, float64, complex64)",
            name.kernel,
            name,
            descr.str()?
        )));
    };
    if descr.is_native_byteorder() == Some(false) {
        // Swapped bytes: NumPy converts to the machine's order.
        let native = descr.call_method1("newbyteorder", ("=",))?;
        let converted = array.call_method1("astype", (native,))?;
        return numpy_input(converted.cast::<PyUntypedArray>()?, device, name);
    }
    let shape = array.shape();
    if array.is_c_contiguous() {
        let len = array.len() * dtype.size();
        return Array::from_bytes(
            device,
            source_bytes(array, len, name)?,
            shape.iter().copied(),
            dtype,
        )
        .py_err();
    }
    let Some(plan) = plan_view(shape, array.strides(), dtype.size()) else {
        let py = array.py();
        let contiguous = py
            .import("numpy")?
            .getattr("ascontiguousarray")?
            .call1((array,))?;
        return numpy_input(contiguous.cast::<PyUntypedArray>()?, device, name);
    };
    let total: usize = plan.block.iter().product();
    let mut block = vec![0u8; total * dtype.size()];
    let span = plan.span * dtype.size();
    block[..span].copy_from_slice(source_bytes(array, span, name)?);
    let base = Array::from_bytes(device, &block, plan.block.iter().copied(), dtype).py_err()?;
    let mut view = base
        .slice(&plan.slices)
        .py_err()?
        .permute(&plan.perm)
        .py_err()?;
    if plan.broadcast {
        view = view.broadcast_to(shape).py_err()?;
    }
    Ok(view)
}

/// The `len` bytes of `array`'s memory from its first element.
///
/// `len` never reaches past the array's last element: the whole array when
/// it is C-contiguous, a plan's span (which ends at its farthest element)
/// otherwise; the read checks it all the same.
fn source_bytes<'a>(
    array: &'a Bound<'_, PyUntypedArray>,
    len: usize,
    name: &Named<'_>,
) -> PyResult<&'a [u8]> {
    ffi::numpy::bytes_from_first(array, len).ok_or_else(|| {
        errors::raise(
            errors::Kind::Array,
            format!(
                "kernel `{}`: {} holds fewer than the {len} bytes its layout reaches",
                name.kernel, name
            ),
        )
    })
}

/// The NumPy dtype for `dtype` (bfloat16 through ml_dtypes, which
/// registers it with NumPy).
pub(crate) fn numpy_dtype<'py>(
    py: Python<'py>,
    dtype: DType,
) -> PyResult<Bound<'py, PyArrayDescr>> {
    require_numpy(py)?;
    Ok(match dtype {
        DType::Bool => numpy::dtype::<bool>(py),
        DType::U8 => numpy::dtype::<u8>(py),
        DType::U16 => numpy::dtype::<u16>(py),
        DType::U32 => numpy::dtype::<u32>(py),
        DType::U64 => numpy::dtype::<u64>(py),
        DType::I8 => numpy::dtype::<i8>(py),
        DType::I16 => numpy::dtype::<i16>(py),
        DType::I32 => numpy::dtype::<i32>(py),
        DType::I64 => numpy::dtype::<i64>(py),
        DType::F16 => numpy::dtype::<half::f16>(py),
        DType::F32 => numpy::dtype::<f32>(py),
        DType::F64 => numpy::dtype::<f64>(py),
        DType::Complex64 => numpy::dtype::<num_complex::Complex32>(py),
        DType::BF16 => {
            let ml_dtypes = py.import("ml_dtypes").map_err(|_| {
                errors::argument_type(
                    "bfloat16 arrays need the ml_dtypes package, which gives NumPy its bfloat16 \
                     (pip install ml_dtypes)",
                )
            })?;
            PyArrayDescr::new(py, ml_dtypes.getattr("bfloat16")?)?
        }
    })
}

/// Reads every output back to the host, waiting for its stream. Needs no
/// GIL: run it detached.
pub(crate) fn read_outputs(outputs: &[Array]) -> kernelkit::Result<Vec<Vec<u8>>> {
    outputs.iter().map(Array::to_bytes).collect()
}

/// A new C-contiguous NumPy array of `shape` and `dtype` holding `bytes`.
pub(crate) fn to_numpy<'py>(
    py: Python<'py>,
    bytes: &[u8],
    shape: &[usize],
    dtype: DType,
) -> PyResult<Bound<'py, PyAny>> {
    let array = numpy_empty(py, shape, dtype)?;
    fill(&array, bytes, dtype)?;
    Ok(array.into_any())
}

/// Copies `bytes` into a C-contiguous array of the same byte size.
fn fill(array: &Bound<'_, PyUntypedArray>, bytes: &[u8], dtype: DType) -> PyResult<()> {
    let expected = array.len() * dtype.size();
    if bytes.len() != expected
        || !array.is_c_contiguous()
        || array.dtype().itemsize() != dtype.size()
    {
        return Err(errors::raise(
            errors::Kind::Array,
            format!(
                "array: {} bytes read back for a NumPy array of {expected} bytes",
                bytes.len()
            ),
        ));
    }
    if expected == 0 {
        return Ok(());
    }
    let written = ffi::numpy::write_bytes(array, |target| {
        target.copy_from_slice(bytes);
        if dtype == DType::Bool {
            // A kernel may store any non-zero byte as `true`; NumPy's bool
            // is 0 or 1.
            for b in target.iter_mut() {
                *b = (*b != 0) as u8;
            }
        }
    });
    written.ok_or_else(|| {
        errors::raise(
            errors::Kind::Array,
            "array: a NumPy array to fill is not writeable and C-contiguous",
        )
    })
}

/// A caller's `out=` array for output `name`: a writable NumPy array.
/// Returns its shape and dtype.
pub(crate) fn out_array(obj: &Bound<'_, PyAny>, name: &Named<'_>) -> PyResult<(Vec<i64>, DType)> {
    let py = obj.py();
    let array = if numpy_loaded(py) {
        obj.cast::<PyUntypedArray>().ok()
    } else {
        None
    };
    let Some(array) = array else {
        return Err(errors::argument_type(format!(
            "kernel `{}`: out= for {} is a {}; expected a NumPy array",
            name.kernel,
            name,
            describe(obj)
        )));
    };
    if !ffi::numpy::is_writeable(array) {
        return Err(errors::call(format!(
            "kernel `{}`: out= for {} is a read-only NumPy array",
            name.kernel, name
        )));
    }
    let descr = array.dtype();
    let Some(dtype) = dtype_of_descr(&descr)? else {
        return Err(errors::argument_type(format!(
            "kernel `{}`: out= for {} has NumPy dtype {}, which kernelkit does not have",
            name.kernel,
            name,
            descr.str()?
        )));
    };
    if descr.is_native_byteorder() == Some(false) {
        return Err(errors::call(format!(
            "kernel `{}`: out= for {} is not in the machine's byte order",
            name.kernel, name
        )));
    }
    Ok((array.shape().iter().map(|&d| d as i64).collect(), dtype))
}

/// Writes an output's bytes into the caller's `out=` array (checked by
/// [`out_array`]): directly when it is C-contiguous, else through NumPy's
/// assignment, which follows its strides.
pub(crate) fn write_out(
    out: &Bound<'_, PyAny>,
    bytes: &[u8],
    shape: &[usize],
    dtype: DType,
) -> PyResult<()> {
    let array = out.cast::<PyUntypedArray>()?;
    if array.is_c_contiguous() {
        return fill(array, bytes, dtype);
    }
    let fresh = to_numpy(out.py(), bytes, shape, dtype)?;
    out.set_item(pyo3::types::PyEllipsis::get(out.py()), fresh)
}
