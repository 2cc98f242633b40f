//! Devices and streams as Python objects.
//!
//! A [`PyDevice`] names a device (`cpu`, `cuda:N`) and opens it on first
//! use, so `kernelkit.gpu` exists on every machine and costs nothing until
//! a call runs there. A [`PyStream`] wraps a kernelkit stream; streams made
//! by `new_stream` are also listed per thread, so that `clear_streams()`
//! (MLX's) can finish and retire the calling thread's streams.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use kernelkit::{Device, Stream};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::dtypes::describe;
use crate::errors::{self, IntoPy};

/// Which device: the CPU or a CUDA GPU by ordinal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Place {
    Cpu,
    Cuda(u32),
}

impl Place {
    /// `cpu`, `cuda`, `cuda:N`, or MLX's `gpu` / `gpu:N` (CUDA).
    pub(crate) fn parse(text: &str) -> Option<Place> {
        let text = text.trim();
        if text == "cpu" {
            return Some(Place::Cpu);
        }
        let rest = text
            .strip_prefix("cuda")
            .or_else(|| text.strip_prefix("gpu"))?;
        if rest.is_empty() {
            return Some(Place::Cuda(0));
        }
        rest.strip_prefix(':')?.parse().ok().map(Place::Cuda)
    }

    /// The place `device` is (a device that is no GPU counts as the CPU).
    pub(crate) fn of(device: &Device) -> Place {
        match device.kind() {
            kernelkit::DeviceKind::Cuda => Place::Cuda(device.id().ordinal),
            _ => Place::Cpu,
        }
    }

    pub(crate) fn label(&self) -> String {
        match self {
            Place::Cpu => "cpu".into(),
            Place::Cuda(n) => format!("cuda:{n}"),
        }
    }

    /// Opens the process-wide device. The first open of a GPU releases the
    /// GIL (it initialises the driver); later ones find it in a table.
    pub(crate) fn open(&self, py: Python<'_>) -> PyResult<Device> {
        let n = match *self {
            Place::Cpu => return Ok(Device::cpu()),
            Place::Cuda(n) => n,
        };
        let opened = || OPENED.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, d)) = opened().iter().find(|(o, _)| *o == n) {
            return Ok(d.clone());
        }
        // The package's own compile worker (see `crate::worker`).
        let config = crate::worker::config(py);
        let device = py
            .detach(|| Device::builder().config(config).cuda(n))
            .py_err()?;
        // Another thread may have opened it meanwhile: one device each.
        let mut table = opened();
        if let Some((_, d)) = table.iter().find(|(o, _)| *o == n) {
            return Ok(d.clone());
        }
        table.push((n, device.clone()));
        Ok(device)
    }
}

/// The package's CUDA devices, one per ordinal, opened by [`Place::open`].
static OPENED: Mutex<Vec<(u32, Device)>> = Mutex::new(Vec::new());

/// The package's CUDA device `ordinal` if it is open, for code that runs
/// without the GIL (kernelkit.jax's handler inside XLA): the same device,
/// caches and counters as `kk.gpu`'s.
pub(crate) fn opened_cuda(ordinal: u32) -> Option<Device> {
    let table = OPENED.lock().unwrap_or_else(|p| p.into_inner());
    table
        .iter()
        .find(|(o, _)| *o == ordinal)
        .map(|(_, d)| d.clone())
}

/// A device: `Device("cpu")`, `Device("cuda")`, `Device("cuda:1")` or
/// `Device("cuda", 1)`. Opened on first use; equal when they name the same
/// device.
#[pyclass(frozen, module = "kernelkit", name = "Device")]
pub(crate) struct PyDevice {
    pub(crate) place: Place,
    opened: OnceLock<Device>,
}

impl PyDevice {
    pub(crate) fn at(place: Place) -> PyDevice {
        PyDevice {
            place,
            opened: OnceLock::new(),
        }
    }

    /// The kernelkit device, opened once.
    pub(crate) fn device(&self, py: Python<'_>) -> PyResult<Device> {
        if let Some(d) = self.opened.get() {
            return Ok(d.clone());
        }
        let device = self.place.open(py)?;
        Ok(self.opened.get_or_init(|| device).clone())
    }
}

#[pymethods]
impl PyDevice {
    #[new]
    #[pyo3(signature = (kind, index = None))]
    fn new(kind: &str, index: Option<u32>) -> PyResult<PyDevice> {
        let place = match (Place::parse(kind), index) {
            (Some(p), None) => p,
            (Some(Place::Cuda(0)), Some(n)) if !kind.contains(':') => Place::Cuda(n),
            (Some(Place::Cpu), Some(0)) => Place::Cpu,
            _ => {
                return Err(errors::call(format!(
                    "device `{}`{}: expected `cpu`, `cuda`, `cuda:N`, or (`cuda`, N)",
                    kind.escape_debug(),
                    index
                        .map(|i| format!(" with index {i}"))
                        .unwrap_or_default()
                )))
            }
        };
        Ok(PyDevice::at(place))
    }

    /// `"cpu"` or `"cuda"`.
    #[getter]
    fn r#type(&self) -> &'static str {
        match self.place {
            Place::Cpu => "cpu",
            Place::Cuda(_) => "cuda",
        }
    }

    /// The ordinal (0 for the CPU).
    #[getter]
    fn index(&self) -> u32 {
        match self.place {
            Place::Cpu => 0,
            Place::Cuda(n) => n,
        }
    }

    /// A description for people (model, cores, compiler); opens the device.
    fn description(&self, py: Python<'_>) -> PyResult<String> {
        Ok(self.device(py)?.description())
    }

    /// The kernel cache's counters for this device (see `cache_stats`).
    fn cache_stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        stats_dict(py, &self.device(py)?)
    }

    /// Waits for all work queued on the device's default stream.
    fn synchronize(&self, py: Python<'_>) -> PyResult<()> {
        let device = self.device(py)?;
        py.detach(|| device.default_stream().synchronize()).py_err()
    }

    fn __repr__(&self) -> String {
        format!("Device('{}')", self.place.label())
    }

    fn __str__(&self) -> String {
        self.place.label()
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        match other.cast::<PyDevice>() {
            Ok(d) => d.get().place == self.place,
            Err(_) => other
                .extract::<String>()
                .ok()
                .and_then(|s| Place::parse(&s))
                .is_some_and(|p| p == self.place),
        }
    }

    /// The hash of the device's name, since a device equals its name.
    fn __hash__(&self, py: Python<'_>) -> PyResult<isize> {
        pyo3::types::PyString::new(py, &self.place.label()).hash()
    }
}

/// A stream's state, shared by its Python object and the creating thread's
/// list (which holds it weakly).
struct StreamState {
    stream: Stream,
    place: Place,
    cleared: AtomicBool,
}

/// An ordered queue of work on one device (`kernelkit.new_stream(device)`).
/// Work on one stream runs in submission order; each thread may own
/// streams and submit at once. On the CPU, a call finishes before it
/// returns.
#[pyclass(frozen, module = "kernelkit", name = "Stream")]
pub(crate) struct PyStream {
    state: Arc<StreamState>,
}

impl PyStream {
    /// The kernelkit stream, unless `clear_streams()` retired it.
    pub(crate) fn stream(&self) -> PyResult<&Stream> {
        if self.state.cleared.load(Ordering::Acquire) {
            return Err(errors::call(format!(
                "{:?} was cleared by clear_streams() and cannot run work",
                self.state.stream
            )));
        }
        Ok(&self.state.stream)
    }

    pub(crate) fn place(&self) -> Place {
        self.state.place
    }
}

#[pymethods]
impl PyStream {
    /// The stream's device.
    #[getter]
    fn device(&self) -> PyDevice {
        PyDevice::at(self.state.place)
    }

    /// Waits until all work submitted to this stream so far has finished.
    fn synchronize(&self, py: Python<'_>) -> PyResult<()> {
        let stream = self.stream()?.clone();
        py.detach(|| stream.synchronize()).py_err()
    }

    fn __repr__(&self) -> String {
        format!("{:?}", self.state.stream)
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .cast::<PyStream>()
            .is_ok_and(|s| s.get().state.stream == self.state.stream)
    }

    fn __hash__(&self) -> u64 {
        Arc::as_ptr(&self.state) as usize as u64
    }
}

thread_local! {
    /// Streams this thread made with `new_stream`, for `clear_streams`.
    static CREATED: RefCell<Vec<Weak<StreamState>>> = const { RefCell::new(Vec::new()) };
}

/// A device argument: a `Device`, or a name (`"cpu"`, `"cuda:1"`, `"gpu"`).
pub(crate) fn place_of(obj: &Bound<'_, PyAny>, what: &dyn std::fmt::Display) -> PyResult<Place> {
    if let Ok(d) = obj.cast::<PyDevice>() {
        return Ok(d.get().place);
    }
    if let Ok(s) = obj.extract::<String>() {
        return Place::parse(&s).ok_or_else(|| {
            errors::call(format!(
                "{what}: device `{}` is not one of `cpu`, `cuda`, `cuda:N`",
                s.escape_debug()
            ))
        });
    }
    Err(errors::argument_type(format!(
        "{what}: expected a kernelkit.Device or a device name, got {}",
        describe(obj)
    )))
}

/// A new stream on `device`.
#[pyfunction]
pub(crate) fn new_stream(py: Python<'_>, device: &Bound<'_, PyAny>) -> PyResult<PyStream> {
    let place = place_of(device, &"new_stream")?;
    let opened = match device.cast::<PyDevice>() {
        Ok(d) => d.get().device(py)?,
        Err(_) => place.open(py)?,
    };
    let stream = opened.new_stream().py_err()?;
    let state = Arc::new(StreamState {
        stream,
        place,
        cleared: AtomicBool::new(false),
    });
    CREATED.with(|created| {
        let mut created = created.borrow_mut();
        if created.len() >= 64 {
            created.retain(|w| w.strong_count() > 0);
        }
        created.push(Arc::downgrade(&state));
    });
    Ok(PyStream { state })
}

/// Finishes the work of every stream this thread made with `new_stream`
/// and retires them (MLX's `clear_streams`): using one afterwards is an
/// error.
#[pyfunction]
pub(crate) fn clear_streams(py: Python<'_>) -> PyResult<()> {
    let created = CREATED.with(|c| std::mem::take(&mut *c.borrow_mut()));
    let streams: Vec<Stream> = created
        .iter()
        .filter_map(Weak::upgrade)
        .map(|s| {
            s.cleared.store(true, Ordering::Release);
            s.stream.clone()
        })
        .collect();
    py.detach(|| streams.iter().try_for_each(Stream::synchronize))
        .py_err()
}

/// What the kernel cache and the artifact store of `device` have done:
/// `hits`, `misses`, `compiles` (one per distinct kernel variant, however
/// many threads asked), `failures`, `compile_ns`, `disk_hits`,
/// `disk_misses`, `disk_writes`, `disk_errors`, the fleet tier's
/// `remote_hits`, `remote_misses`, `remote_writes`, `remote_errors`,
/// `remote_rejected`, `remote_wait_ns`, `loaded_modules` (loaded now),
/// the bounded module cache's `loaded`, `unloaded` and `reloads`, and
/// `pending_unloads` (CUDA modules let go that wait, still loaded, for
/// the work queued before them), and autotuning's `tunes`, `tune_hits`
/// and `tune_launches`.
#[pyfunction]
pub(crate) fn cache_stats<'py>(
    py: Python<'py>,
    device: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyDict>> {
    let opened = match device.cast::<PyDevice>() {
        Ok(d) => d.get().device(py)?,
        Err(_) => place_of(device, &"cache_stats")?.open(py)?,
    };
    stats_dict(py, &opened)
}

fn stats_dict<'py>(py: Python<'py>, device: &Device) -> PyResult<Bound<'py, PyDict>> {
    let s = device.cache_stats();
    let dict = PyDict::new(py);
    for (key, value) in [
        ("hits", s.hits),
        ("misses", s.misses),
        ("compiles", s.compiles),
        ("failures", s.failures),
        ("compile_ns", s.compile_ns),
        ("disk_hits", s.disk_hits),
        ("disk_misses", s.disk_misses),
        ("disk_writes", s.disk_writes),
        ("disk_errors", s.disk_errors),
        ("remote_hits", s.remote_hits),
        ("remote_misses", s.remote_misses),
        ("remote_writes", s.remote_writes),
        ("remote_errors", s.remote_errors),
        ("remote_rejected", s.remote_rejected),
        ("remote_wait_ns", s.remote_wait_ns),
        ("loaded_modules", device.loaded_modules() as u64),
        ("loaded", s.loaded),
        ("unloaded", s.unloaded),
        ("reloads", s.reloads),
        ("pending_unloads", s.pending_unloads),
        ("tunes", s.tunes),
        ("tune_hits", s.tune_hits),
        ("tune_launches", s.tune_launches),
        ("ptx_loads", s.ptx_loads),
    ] {
        dict.set_item(key, value)?;
    }
    Ok(dict)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_names() {
        assert_eq!(Place::parse("cpu"), Some(Place::Cpu));
        assert_eq!(Place::parse("cuda"), Some(Place::Cuda(0)));
        assert_eq!(Place::parse("gpu"), Some(Place::Cuda(0)));
        assert_eq!(Place::parse("cuda:3"), Some(Place::Cuda(3)));
        assert_eq!(Place::parse("cuda:"), None);
        assert_eq!(Place::parse("cuda3"), None);
        assert_eq!(Place::parse("cuda:-1"), None);
        assert_eq!(Place::parse("tpu"), None);
    }
}
