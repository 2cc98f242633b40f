//! PyTorch tensors on the hot path, without DLPack and without copies.
//!
//! A tensor is read through torch's C functions where this torch has them
//! (`crate::ffi::torch_shim`: no Python objects made; a `torch.Tensor`'s
//! `TensorImpl` is found in its object's memory, `crate::ffi::tensor_impl_slot`), else
//! through its own methods (`data_ptr()`, `stride()`, `shape`, `dtype`,
//! `get_device()`): five C-level calls, no capsule, no dict. Outputs come
//! from torch's allocator (`torch.empty` on the tensors' device;
//! `new_empty` of an input of the same dtype and device), so torch in gives
//! torch out; calls run on torch's current stream of the tensors' device
//! (through the shim, else `torch._C._cuda_getCurrentRawStream`: what
//! `torch.cuda.current_stream(device).cuda_stream` returns, without
//! building a `Stream` object).
//!
//! torch is never imported here: the module's functions are looked up once
//! a tensor was seen, from `sys.modules` (where the tensor's maker put it).

use kernelkit::DType;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyList, PyTuple, PyType};
use pyo3::{intern, IntoPyObjectExt};
use smallvec::SmallVec;

use crate::device::Place;
use crate::dtypes::dtype_of;
use crate::errors;
use crate::ffi::tensor_impl_slot::Slot;
/// A tensor's layout (defined with the shim, the lower of the two modules,
/// which reads it too).
pub(crate) use crate::ffi::torch_shim::Tensor;
use crate::ffi::torch_shim::{self, Shim};

/// What is kept of the torch module.
struct Torch {
    tensor: Py<PyType>,
    /// `torch.nn.Parameter`: a subclass torch itself treats as a plain
    /// tensor (its C++ code unpacks both alike; no `__torch_function__`).
    parameter: Option<Py<PyType>>,
    empty: Py<PyAny>,
    /// `torch.empty_like`: the cheapest of torch's allocating calls (no
    /// shape to parse).
    empty_like: Option<Py<PyAny>>,
    /// `torch._C._cuda_getCurrentRawStream`, when this build has it.
    current_raw: Option<Py<PyAny>>,
    /// `torch.cuda.current_stream`, the documented fallback.
    current_stream: Option<Py<PyAny>>,
    /// torch's dtype object per kernelkit dtype (`None`: torch has none).
    dtypes: Vec<(DType, Option<Py<PyAny>>)>,
    /// torch's C functions, when present and agreeing with the methods.
    shim: Option<Shim>,
    /// `torch.is_grad_enabled` and `torch._C._increment_version` (a list
    /// of tensors in current torch, one tensor in older ones; inference
    /// tensors skipped), for tensors the shim does not read; absent in a
    /// torch without autograd.
    grad_enabled: Option<Py<PyAny>>,
    increment_version: Option<Py<PyAny>>,
}

static TORCH: PyOnceLock<Torch> = PyOnceLock::new();

/// `sys.modules`, kept: the dict the import system fills (CPython does not
/// support replacing it), read without importing `sys` at each look.
fn sys_modules(py: Python<'_>) -> Option<&Bound<'_, PyDict>> {
    static MODULES: PyOnceLock<Py<PyDict>> = PyOnceLock::new();
    let modules = MODULES
        .get_or_try_init(py, || -> PyResult<_> {
            Ok(py
                .import("sys")?
                .getattr("modules")?
                .cast_into::<PyDict>()?
                .unbind())
        })
        .ok()?;
    Some(modules.bind(py))
}

/// The torch module's parts, once torch is imported by the program.
fn torch(py: Python<'_>) -> Option<&Torch> {
    if let Some(t) = TORCH.get(py) {
        return Some(t);
    }
    // Looked for without raising (a `KeyError` costs more than the look):
    // until torch is imported this runs at every call that asks whether an
    // argument is a tensor, so `sys.modules` is kept, not looked up.
    let torch = sys_modules(py)?.get_item(intern!(py, "torch")).ok()??;
    let tensor = torch.getattr("Tensor").ok()?.cast_into::<PyType>().ok()?;
    let parameter = torch
        .getattr("nn")
        .and_then(|nn| nn.getattr("Parameter"))
        .ok()
        .and_then(|p| p.cast_into::<PyType>().ok())
        .filter(|p| p.is_subclass(&tensor).unwrap_or(false));
    let empty = torch.getattr("empty").ok()?;
    let empty_like = torch.getattr("empty_like").ok().map(Bound::unbind);
    let current_raw = torch
        .getattr("_C")
        .and_then(|c| c.getattr("_cuda_getCurrentRawStream"))
        .ok();
    let current_stream = torch
        .getattr("cuda")
        .and_then(|c| c.getattr("current_stream"))
        .ok();
    let dtypes = DType::ALL
        .iter()
        .map(|&d| (d, torch.getattr(d.name()).ok().map(Bound::unbind)))
        .collect();
    let shim = Shim::open(&torch)
        .map(|shim| shim.with_slot(locate_slot(&torch, &tensor, parameter.as_ref())))
        .filter(|shim| {
            probe(&torch)
                .is_ok_and(|p| by_methods(&p, &"the probe").is_ok_and(|t| shim.agrees(&p, &t)))
                // (A torch that cannot make one has no lazy conjugation.)
                && conj_probe(&torch).map_or(true, |p| shim.read(&p).is_none())
        });
    let grad_enabled = torch.getattr("is_grad_enabled").ok().map(Bound::unbind);
    let increment_version = torch
        .getattr("_C")
        .and_then(|c| c.getattr("_increment_version"))
        .ok()
        .map(Bound::unbind);
    let state = Torch {
        grad_enabled,
        increment_version,
        tensor: tensor.unbind(),
        parameter: parameter.map(Bound::unbind),
        empty: empty.unbind(),
        empty_like,
        current_raw: current_raw.map(Bound::unbind),
        current_stream: current_stream.map(Bound::unbind),
        dtypes,
        shim,
    };
    Some(TORCH.get_or_init(py, || state))
}

/// A strided int16 view at an offset, on the CPU, for [`Shim::agrees`].
fn probe<'py>(torch: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let kwargs = PyDict::new(torch.py());
    kwargs.set_item("dtype", torch.getattr("int16")?)?;
    torch
        .getattr("empty")?
        .call((105,), Some(&kwargs))?
        .call_method1("as_strided", ((3, 4, 4), (35, 7, 2), 7))
}

/// A lazily conjugated complex view, which the shim must leave to the
/// methods' read ([`resolved`]).
fn conj_probe<'py>(torch: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let kwargs = PyDict::new(torch.py());
    kwargs.set_item("dtype", torch.getattr("complex64")?)?;
    torch
        .getattr("empty")?
        .call((2,), Some(&kwargs))?
        .call_method0("conj")
}

/// Where `torch.Tensor`s (and `nn.Parameter`s, when a probe of one can be
/// made) keep their `TensorImpl` address ([`Slot::locate`]), probed with
/// three tensors with distinct `TensorImpl`s, two of them views.
fn locate_slot<'py>(
    torch: &Bound<'py, PyAny>,
    tensor: &Bound<'py, PyType>,
    parameter: Option<&Bound<'py, PyType>>,
) -> Option<Slot> {
    let empty = torch.getattr("empty").ok()?;
    let rows = empty.call1(((2, 3),)).and_then(|t| t.get_item(1)).ok()?;
    let mut probes = vec![probe(torch).ok()?, empty.call1((3,)).ok()?, rows];
    let mut types = vec![tensor];
    // A Parameter without gradients: one with them cannot be made from a
    // tensor made under `torch.inference_mode()`, where this may run.
    let param = parameter.and_then(|p| {
        let data = empty.call1((2,)).ok()?;
        Some((p, p.call1((data, false)).ok()?))
    });
    if let Some((p, probe)) = param {
        types.push(p);
        probes.push(probe);
    }
    Slot::locate(&types, &probes)
}

/// torch's C functions, when they are to be used (torch seen, the shim
/// found and turned on).
#[inline]
pub(crate) fn shim(py: Python<'_>) -> Option<&Shim> {
    if !torch_shim::enabled() {
        return None;
    }
    TORCH.get(py)?.shim.as_ref()
}

/// Whether `obj` is a torch tensor (a subclass too): an instance of
/// `torch.Tensor`, once the program imported torch (looked for in
/// `sys.modules` only for objects that are not NumPy arrays or scalars).
pub(crate) fn is_tensor(obj: &Bound<'_, PyAny>) -> bool {
    let py = obj.py();
    // Once torch is imported, by type: a subclass defined anywhere is a
    // tensor, whether or not a plain tensor was seen first.
    let Some(state) = TORCH.get(py).or_else(|| torch(py)) else {
        return false;
    };
    let tensor = state.tensor.bind(py);
    obj.get_type().is(tensor) || obj.is_instance(tensor).unwrap_or(false)
}

/// Whether `obj`'s type is `torch.Tensor` itself or `torch.nn.Parameter`
/// (which torch treats as a plain tensor), not another subclass, once torch
/// was seen: a pointer comparison or two.
#[inline]
pub(crate) fn is_plain_tensor(obj: &Bound<'_, PyAny>) -> bool {
    let py = obj.py();
    TORCH.get(py).is_some_and(|t| {
        let ty = obj.get_type();
        ty.is(t.tensor.bind(py)) || t.parameter.as_ref().is_some_and(|p| ty.is(p.bind(py)))
    })
}

/// Reads `t` (a tensor: [`is_tensor`]); `what` names it for errors.
#[inline]
pub(crate) fn read(t: &Bound<'_, PyAny>, what: &dyn std::fmt::Display) -> PyResult<Tensor> {
    if let Some(read) = shim(t.py()).and_then(|s| s.read(t)) {
        return Ok(read);
    }
    by_methods(t, what)
}

/// Reads `t` through its methods, which word the errors.
pub(crate) fn by_methods(t: &Bound<'_, PyAny>, what: &dyn std::fmt::Display) -> PyResult<Tensor> {
    let py = t.py();
    let dtype_obj = t.getattr(intern!(py, "dtype"))?;
    let Some(dtype) = dtype_of(&dtype_obj)? else {
        return Err(errors::argument_type(format!(
            "{what} is a torch tensor of dtype {}, which kernelkit does not have \
             (bool, (u)int8..64, float16, bfloat16, float32, float64, complex64)",
            dtype_obj.str()?
        )));
    };
    // The device's type first: an index alone does not say CUDA (`mps:0`,
    // `xpu:0`, a privateuse1 device have one too).
    let device = t.getattr(intern!(py, "device"))?;
    let kind = device.getattr(intern!(py, "type"))?;
    let place = match kind.extract::<String>()?.as_str() {
        "cpu" => Place::Cpu,
        "cuda" => {
            let index = t
                .call_method0(intern!(py, "get_device"))?
                .extract::<i64>()?;
            Place::Cuda(u32::try_from(index).map_err(|_| {
                errors::argument_type(format!(
                    "{what} is a torch tensor on {} with no device index",
                    device.str().map(|s| s.to_string()).unwrap_or_default()
                ))
            })?)
        }
        _ => {
            return Err(errors::argument_type(format!(
                "{what} is a torch tensor on {}; kernelkit takes CPU and CUDA tensors",
                device.str()?
            )))
        }
    };
    let data = t.call_method0(intern!(py, "data_ptr"))?.extract::<u64>()?;
    let shape_obj = t.getattr(intern!(py, "shape"))?;
    let shape_tuple = shape_obj.cast::<PyTuple>()?;
    let mut shape = SmallVec::new();
    for d in shape_tuple.iter() {
        shape.push(d.extract::<usize>()?);
    }
    let strides_obj = t.call_method0(intern!(py, "stride"))?;
    let mut strides = SmallVec::new();
    for s in strides_obj.cast::<PyTuple>()?.iter() {
        strides.push(s.extract::<isize>()?);
    }
    check_storage(t, &shape, &strides, dtype, what)?;
    Ok(Tensor {
        data,
        place,
        dtype,
        shape,
        strides,
    })
}

/// A typed error unless `t`'s elements lie inside its storage: a storage
/// resized to 0 (as FSDP frees parameters) or without data reports an
/// address that is no memory of the tensor's, which a kernel must never be
/// given. A torch without `untyped_storage()` is not asked.
fn check_storage(
    t: &Bound<'_, PyAny>,
    shape: &[usize],
    strides: &[isize],
    dtype: DType,
    what: &dyn std::fmt::Display,
) -> PyResult<()> {
    let py = t.py();
    let Ok(storage) = t.call_method0(intern!(py, "untyped_storage")) else {
        return Ok(());
    };
    let has_data = storage
        .call_method0(intern!(py, "data_ptr"))
        .and_then(|p| p.extract::<u64>())
        .is_ok_and(|p| p != 0);
    let bytes = storage
        .call_method0(intern!(py, "nbytes"))
        .and_then(|b| b.extract::<i64>())
        .unwrap_or(0);
    let bytes = if has_data { bytes } else { 0 };
    let offset = t
        .call_method0(intern!(py, "storage_offset"))?
        .extract::<i64>()?;
    let shape: SmallVec<[i64; 4]> = shape.iter().map(|&d| d as i64).collect();
    let strides: SmallVec<[i64; 4]> = strides.iter().map(|&s| s as i64).collect();
    if torch_shim::inside_storage(&shape, &strides, offset, bytes, dtype.size()) {
        return Ok(());
    }
    Err(errors::argument_type(format!(
        "{what} is a torch tensor whose elements are not in its storage ({bytes} bytes, \
         the tensor starting at element {offset}): a storage freed or resized in place, \
         or a tensor without data (fake or meta)"
    )))
}

/// `t` (a tensor) as a call uses it, and its layout: a lazily conjugated
/// or negated view (`x.conj()`, `x.mH`, `x.conj().imag`), whose memory is
/// not its value, resolved into a new tensor when it is an input, refused
/// as an output (a write into it would land unconjugated); a `FakeTensor`
/// (no memory: only a registered custom op's fake implementation sees
/// them) refused.
pub(crate) fn resolved<'py>(
    t: &Bound<'py, PyAny>,
    what: &crate::arrays::Named<'_>,
) -> PyResult<(Bound<'py, PyAny>, Tensor)> {
    let plain = is_plain_tensor(t);
    if !plain && is_fake(t) {
        return Err(errors::argument_type(format!(
            "kernel `{}`: {what} is a FakeTensor, which has no memory to run a kernel on \
             (register the kernel as a custom op with a fake implementation to trace it)",
            what.kernel
        )));
    }
    let py = t.py();
    if let Some(read) = shim(py).and_then(|s| s.read(t)) {
        return Ok((t.clone(), read));
    }
    let asks = |name: &Bound<'py, pyo3::types::PyString>| {
        t.call_method0(name)
            .and_then(|b| b.extract::<bool>())
            .unwrap_or(false)
    };
    let conj = asks(intern!(py, "is_conj"));
    let neg = asks(intern!(py, "is_neg"));
    if !(conj || neg) {
        let read = by_methods(t, what)?;
        return Ok((t.clone(), read));
    }
    let kind = if conj { "conjugated" } else { "negated" };
    if what.role == "output" {
        return Err(errors::argument_type(format!(
            "kernel `{}`: out= for {what} is a lazily {kind} view (its memory is not its \
             value, so a write would land un{kind}); pass a tensor without the bit \
             (`resolve_conj()`/`resolve_neg()` make one, and copy it back)",
            what.kernel
        )));
    }
    let plain = t
        .call_method0(intern!(py, "resolve_conj"))?
        .call_method0(intern!(py, "resolve_neg"))?;
    let read = by_methods(&plain, what)?;
    Ok((plain, read))
}

/// Whether `t` is a `FakeTensor` (torch's module for them imported).
fn is_fake(t: &Bound<'_, PyAny>) -> bool {
    let py = t.py();
    py.import("sys")
        .and_then(|sys| sys.getattr("modules"))
        .and_then(|m| m.get_item("torch._subclasses.fake_tensor"))
        .and_then(|m| m.getattr("FakeTensor"))
        .is_ok_and(|fake| t.is_instance(&fake).unwrap_or(false))
}

/// A typed error when `t` (a torch `out=` tensor, `what`) requires grad
/// with grad mode on: autograd cannot see a kernel's write, and torch's own
/// `out=` functions refuse such a tensor too.
pub(crate) fn check_writable(
    t: &Bound<'_, PyAny>,
    what: &crate::arrays::Named<'_>,
) -> PyResult<()> {
    let py = t.py();
    let writable = match shim(py).and_then(|s| s.may_write(t)) {
        Some(w) => w,
        None => {
            let requires = t
                .getattr(intern!(py, "requires_grad"))
                .and_then(|r| r.extract::<bool>())
                .unwrap_or(false);
            let grad_on = || {
                TORCH
                    .get(py)
                    .and_then(|s| s.grad_enabled.as_ref())
                    .and_then(|f| f.bind(py).call0().ok())
                    .and_then(|r| r.extract::<bool>().ok())
                    .unwrap_or(true)
            };
            !(requires && grad_on())
        }
    };
    if writable {
        return Ok(());
    }
    Err(errors::call(format!(
        "kernel `{}`: out= for {what} requires grad, and autograd cannot record a kernel's \
         write into it (torch's out= functions refuse it too): write under torch.no_grad(), \
         or into a tensor that does not require grad",
        what.kernel
    )))
}

/// Counts a call's writes into `written` (its torch `out=` tensors; other
/// objects are skipped) in their version counters, as torch's in-place
/// functions do: a backward through a graph that saved their old values
/// then raises autograd's error instead of a wrong gradient. Inference
/// tensors have no counter and are left as they are.
pub(crate) fn bump_versions(py: Python<'_>, written: &[Bound<'_, PyAny>]) -> PyResult<()> {
    let mut rest: SmallVec<[&Bound<'_, PyAny>; 2]> = SmallVec::new();
    let shim = shim(py);
    for t in written.iter().filter(|t| is_tensor(t)) {
        if !shim.is_some_and(|s| s.bump_version(t)) {
            rest.push(t);
        }
    }
    if rest.is_empty() {
        return Ok(());
    }
    let Some(increment) = TORCH.get(py).and_then(|s| s.increment_version.as_ref()) else {
        return Ok(());
    };
    let increment = increment.bind(py);
    match increment.call1((PyList::new(py, &rest)?,)) {
        Ok(_) => Ok(()),
        // A torch before the list form takes one tensor per call.
        Err(e) if e.is_instance_of::<pyo3::exceptions::PyTypeError>(py) => {
            for t in rest {
                let inference = t
                    .call_method0(intern!(py, "is_inference"))
                    .and_then(|i| i.extract::<bool>())
                    .unwrap_or(false);
                if !inference {
                    increment.call1((t,))?;
                }
            }
            Ok(())
        }
        Err(e) => Err(e),
    }
}

/// The strides torch gives a contiguous tensor of `shape`, in elements
/// (an axis of extent 0 counts as 1, as torch and kernelkit count it).
fn row_major(shape: &[usize]) -> SmallVec<[isize; 4]> {
    let mut strides: SmallVec<[isize; 4]> = SmallVec::from_elem(0, shape.len());
    let mut step = 1isize;
    for (s, &d) in strides.iter_mut().zip(shape).rev() {
        *s = step;
        step = step.saturating_mul(d.max(1) as isize);
    }
    strides
}

/// A call's torch input that outputs of its dtype and place are made like
/// (`empty_like`, `new_empty`): a `torch.Tensor` itself (a subclass's
/// `new_empty` may be its own), as read.
pub(crate) type Like<'a, 'py> = (&'a Bound<'py, PyAny>, &'a Tensor);

impl Tensor {
    /// Whether every stride is the row-major one, axes of extent 1
    /// included (stricter than torch's `is_contiguous`, which lets those
    /// have any stride): `empty_like` copies such a tensor's strides, so its
    /// result then has exactly the layout [`Tensor::made`] describes.
    pub(crate) fn has_row_major_strides(&self) -> bool {
        self.strides == row_major(&self.shape)
    }

    /// The layout of a tensor this module made ([`empty`]): row-contiguous,
    /// of `shape`, `dtype`, on `place`; only its address is asked of it.
    pub(crate) fn made(
        obj: &Bound<'_, PyAny>,
        shape: &[usize],
        dtype: DType,
        place: Place,
    ) -> PyResult<Tensor> {
        let data = match shim(obj.py()).and_then(|s| s.data_ptr(obj)) {
            Some(data) => data,
            None => obj
                .call_method0(intern!(obj.py(), "data_ptr"))?
                .extract::<u64>()?,
        };
        Ok(Tensor {
            data,
            place,
            dtype,
            shape: shape.iter().copied().collect(),
            strides: row_major(shape),
        })
    }
}

/// A new row-contiguous tensor of `shape` and `dtype` on `place`, from
/// torch's allocator, on torch's current stream there, by the cheapest of
/// torch's calls that makes it (`empty_like` parses least, then
/// `new_empty`, then `torch.empty` with keywords; BENCHMARKS.md has the
/// figures):
/// `torch.empty_like(like)` when `like` has row-major strides and that
/// shape, dtype and place (it keeps `like`'s strides); else
/// `like.new_empty(shape)` when `like` has that dtype and place (one
/// positional argument for torch to parse, no keyword dict to build); else
/// `torch.empty(shape, dtype=, device=)`.
pub(crate) fn empty<'py>(
    py: Python<'py>,
    shape: &[usize],
    dtype: DType,
    place: Place,
    like: Option<Like<'_, 'py>>,
    what: &dyn std::fmt::Display,
) -> PyResult<Bound<'py, PyAny>> {
    let state = torch(py).ok_or_else(|| errors::call("torch is not imported"))?;
    if let Some((tensor, t)) = like {
        if t.dtype == dtype && t.place == place {
            if let Some(empty_like) = &state.empty_like {
                if t.shape.as_slice() == shape && t.has_row_major_strides() {
                    return empty_like.bind(py).call1((tensor,));
                }
            }
            let shape = PyTuple::new(py, shape)?;
            return tensor.call_method1(intern!(py, "new_empty"), (shape,));
        }
    }
    let dtype_obj = state
        .dtypes
        .iter()
        .find(|(d, _)| *d == dtype)
        .and_then(|(_, o)| o.as_ref())
        .ok_or_else(|| {
            errors::argument_type(format!("{what}: this torch has no {dtype} tensors"))
        })?;
    let kwargs = PyDict::new(py);
    kwargs.set_item(intern!(py, "dtype"), dtype_obj.bind(py))?;
    match place {
        Place::Cpu => kwargs.set_item(intern!(py, "device"), intern!(py, "cpu"))?,
        Place::Cuda(n) => kwargs.set_item(intern!(py, "device"), n)?,
    }
    let shape = PyTuple::new(py, shape)?;
    state.empty.bind(py).call((shape,), Some(&kwargs))
}

/// torch's current CUDA stream on device `ordinal`, as a raw handle (0:
/// the legacy default stream).
pub(crate) fn current_stream(py: Python<'_>, ordinal: u32) -> PyResult<u64> {
    if let Some(raw) = shim(py).and_then(|s| s.current_stream(ordinal)) {
        return Ok(raw);
    }
    let state = torch(py).ok_or_else(|| errors::call("torch is not imported"))?;
    if let Some(f) = &state.current_raw {
        if let Ok(raw) = f.bind(py).call1((ordinal,)) {
            return raw.extract::<u64>();
        }
    }
    let Some(current) = &state.current_stream else {
        return Err(errors::call("this torch has no torch.cuda.current_stream"));
    };
    let device = ordinal.into_bound_py_any(py)?;
    current
        .bind(py)
        .call1((device,))?
        .getattr(intern!(py, "cuda_stream"))?
        .extract::<u64>()
}

/// Turns the reads through torch's C functions on or off when `on` is
/// given; answers whether tensors are read through them. For tests and
/// benchmarks, which compare both reads (`crate::testing`); not for
/// programs.
#[pyfunction]
#[pyo3(name = "torch_shim", signature = (on = None))]
pub(crate) fn _torch_shim(py: Python<'_>, on: Option<bool>) -> bool {
    if let Some(on) = on {
        torch_shim::set_enabled(on);
    }
    torch(py).is_some() && shim(py).is_some()
}

/// Whether `torch.Tensor`s are read with their `TensorImpl` address taken
/// from their object's memory (`crate::ffi::tensor_impl_slot`). For tests
/// (`crate::testing`).
#[pyfunction]
#[pyo3(name = "torch_cdata_slot")]
pub(crate) fn _torch_cdata_slot(py: Python<'_>) -> bool {
    torch(py)
        .and_then(|t| t.shim.as_ref())
        .is_some_and(Shim::has_slot)
}

/// `t`'s layout as a call reads it: `(data_ptr, device, dtype, shape,
/// strides)`, the device `"cpu"` or `"cuda:N"`. For tests
/// (`crate::testing`).
#[pyfunction]
#[pyo3(name = "torch_layout")]
#[allow(clippy::type_complexity)]
pub(crate) fn _torch_layout(
    t: &Bound<'_, PyAny>,
) -> PyResult<(u64, String, &'static str, Vec<usize>, Vec<isize>)> {
    if !is_tensor(t) {
        return Err(errors::argument_type("torch_layout takes a torch tensor"));
    }
    let read = read(t, &"the tensor")?;
    let device = match read.place {
        Place::Cpu => "cpu".to_string(),
        Place::Cuda(n) => format!("cuda:{n}"),
    };
    Ok((
        read.data,
        device,
        read.dtype.name(),
        read.shape.to_vec(),
        read.strides.to_vec(),
    ))
}
