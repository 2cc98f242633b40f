//! The callable `metal_kernel` and `cuda_kernel` return (`constructors.rs`).
//!
//! The kernel is built (names validated, body scanned) once, when
//! `metal_kernel` is called; each call converts its arguments, releases the
//! GIL, and runs kernelkit's call path: variant memo, kernel cache (one
//! compile per distinct variant, however many threads ask), launch, and
//! the read-back of the outputs. A call on torch tensors of a layout the
//! kernel saw lately reads them and launches what the first call of that
//! layout prepared (`crate::rebound`).
//!
//! Here: the callable, its arguments' memos, and how a call's arrays,
//! stream and outputs are found. `call`: one call, start to end; `call_entry`:
//! the call entry for vectorcall. The torch routes a call tries first (a
//! warm `out=` call in one pass, the torch tensors' shortcut) are
//! `crate::torch`'s, which draws the order of all of them.

use std::sync::OnceLock;

use kernelkit::{Array, BodyLanguage, Call, Device, Kernel, Stream};
use pyo3::prelude::*;
use pyo3::types::PyList;
use smallvec::SmallVec;

use crate::args::{self, DimsMemo, OutputSpec, OutputsMemo, Template, TemplateMemo};
use crate::array_args::{Frame, Source};
use crate::arrays::{self, Named};
use crate::device::{place_of, Place, PyStream};
use crate::donation::{Aliasing, DonationMemo};
use crate::errors;
use crate::rebound::Rebound;
use crate::{streams, torch};
use numpy::PyUntypedArrayMethods;
use pyo3::intern;
use route::Route;

mod call;
pub(crate) mod call_entry;
pub(crate) mod route;

pub(crate) use call::{CallArgs, Chosen, Launch, Tune};
pub(crate) use call_entry::_call_entry;

/// A compiled-on-demand custom kernel, called like MLX's:
/// `kernel(inputs=[...], grid=..., threadgroup=..., output_shapes=[...],
/// output_dtypes=[...], template=[...])` returns a list of NumPy arrays.
#[pyclass(frozen, module = "kernelkit", name = "Kernel")]
pub(crate) struct PyKernel {
    /// The kernel; its body's language (`metal_kernel`'s Metal or
    /// `cuda_kernel`'s CUDA C++) sets the default device: Metal bodies run
    /// where the inputs live (NumPy arrays: the CPU), CUDA ones on `cuda:0`,
    /// unless `device=` or `stream=` says.
    pub(crate) kernel: Kernel,
    /// `cuda_kernel`'s dynamic shared memory per threadgroup, in bytes.
    pub(crate) shared_memory: u32,
    pub(crate) template: TemplateMemo,
    pub(crate) grid: DimsMemo,
    pub(crate) threadgroup: DimsMemo,
    /// The last `output_shapes`/`output_dtypes` parsed.
    outputs: OutputsMemo,
    /// The last `donate=` map parsed.
    pub(crate) donation: DonationMemo,
    /// The device a call uses when it names none, opened on first use.
    default_device: OnceLock<Device>,
    /// Launches prepared for the last layouts of torch calls.
    pub(crate) rebound: Rebound,
}

/// "kernel `name`", formatted only for an error.
struct KernelName<'a>(&'a str);

impl std::fmt::Display for KernelName<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "kernel `{}`", self.0)
    }
}

/// One call's converted arguments.
pub(crate) struct Parts {
    pub(crate) inputs: SmallVec<[Array; 4]>,
    pub(crate) outputs: SmallVec<[OutputSpec; 2]>,
    /// The arrays the outputs are written into, when the caller's kind of
    /// array holds them (empty: kernelkit allocates them).
    pub(crate) targets: SmallVec<[Array; 2]>,
    pub(crate) template: Values,
    pub(crate) grid: [u64; 3],
    pub(crate) threadgroup: [u64; 3],
    pub(crate) init_value: Option<f64>,
    pub(crate) shared_memory: u32,
    pub(crate) stream: Stream,
    /// Donated outputs and `allow_overlap=`.
    pub(crate) aliasing: Aliasing,
}

impl Parts {
    /// The kernelkit call these parts describe.
    pub(crate) fn call<'a>(&'a self, kernel: &'a Kernel) -> Call<'a> {
        let mut call = kernel
            .call(self.inputs.iter())
            .grid(self.grid)
            .threadgroup(self.threadgroup)
            .on(&self.stream);
        if self.targets.is_empty() {
            for (shape, dtype) in &self.outputs {
                call = call.output(shape.iter().copied(), *dtype);
            }
        } else {
            let spec = kernel.spec();
            for (i, target) in self.targets.iter().enumerate() {
                call = match self.aliasing.input_of(i) {
                    // The target is an array over the same input: the
                    // donation names the input's own array.
                    Some(j) => call.donate(
                        spec.output_names()[i].as_str(),
                        spec.input_names()[j].as_str(),
                    ),
                    None => call.output_into(target),
                };
            }
            if self.aliasing.allow_overlap {
                call = call.allow_overlap(true);
            }
        }
        for (name, value) in self.template.iter() {
            call = call.template(&**name, *value);
        }
        if let Some(v) = self.init_value {
            call = call.init_value(v);
        }
        if self.shared_memory > 0 {
            call = call.shared_memory(self.shared_memory);
        }
        call
    }
}

/// A call's template values: its own, parsed (or a tuned kernel's made
/// for the call), or those of the launch a tuned kernel's memo keeps
/// (shared: nothing copied).
pub(crate) enum Values {
    Parsed(Template),
    Kept(std::sync::Arc<Launch>),
}

impl std::ops::Deref for Values {
    type Target = [(std::sync::Arc<str>, kernelkit::TemplateArg)];

    fn deref(&self) -> &Self::Target {
        match self {
            Values::Parsed(t) => t,
            Values::Kept(launch) => &launch.template,
        }
    }
}

/// Where a call's outputs come from and how they are returned.
enum Plan<'py> {
    /// Written in place into the caller's kind of arrays (new ones, or
    /// `out=`), which are returned. `numpy`: bool outputs are made 0/1.
    Into {
        objects: SmallVec<[Bound<'py, PyAny>; 2]>,
        numpy: bool,
    },
    /// kernelkit allocates them and they are read back into NumPy arrays
    /// (host memory for a GPU's outputs): new ones, or the `out=` ones.
    ReadBack(Option<SmallVec<[Bound<'py, PyAny>; 4]>>),
    /// kernelkit allocates them and hands them over as `kernelkit.Array`s,
    /// through this module's `from_dlpack` when there is one.
    Export(Option<Py<PyAny>>),
}

/// A tensor made for an output, and its layout.
pub(crate) type Made<'py> = (Bound<'py, PyAny>, torch::Tensor);

/// A call's output shapes and dtypes, the arrays they are written into
/// (none: kernelkit allocates them), and how they are returned.
type Planned<'py> = (SmallVec<[OutputSpec; 2]>, SmallVec<[Array; 2]>, Plan<'py>);

/// The shapes and dtypes of outputs written into `targets`.
pub(crate) fn specs_of(targets: &[Array]) -> SmallVec<[OutputSpec; 2]> {
    targets
        .iter()
        .map(|t| (t.shape().iter().map(|&d| d as i64).collect(), t.dtype()))
        .collect()
}

/// Extents as `usize`, or `None` when kernelkit will refuse them (an
/// extent below 1, a size past `isize::MAX` bytes): its check then words
/// the error.
pub(crate) fn extents(shape: &[i64], dtype: kernelkit::DType) -> Option<SmallVec<[usize; 4]>> {
    let extents: SmallVec<[usize; 4]> = shape
        .iter()
        .map(|&d| usize::try_from(d).ok().filter(|&d| d > 0))
        .collect::<Option<_>>()?;
    extents
        .iter()
        .try_fold(dtype.size(), |acc, &d| acc.checked_mul(d))
        .filter(|&bytes| bytes <= isize::MAX as usize)?;
    Some(extents)
}

impl PyKernel {
    pub(crate) fn new(kernel: Kernel, shared_memory: u32) -> PyKernel {
        PyKernel {
            kernel,
            shared_memory,
            template: TemplateMemo::default(),
            grid: DimsMemo::default(),
            threadgroup: DimsMemo::default(),
            outputs: OutputsMemo::default(),
            donation: DonationMemo::default(),
            default_device: OnceLock::new(),
            rebound: Rebound::default(),
        }
    }

    pub(crate) fn name(&self) -> &str {
        self.kernel.name()
    }

    /// The stream a call runs on, and torch's current stream of its device
    /// when the call has torch tensors (their producer).
    ///
    /// `stream=` says, when given: a `kernelkit.Stream`, a device (its
    /// default stream), or a framework's stream (an object with
    /// `cuda_stream`, as torch's, or `ptr`, as CuPy's). Otherwise the
    /// device is `device=`'s, else the first array's, else the kernel's
    /// default, and the stream is torch's current stream of that device
    /// for torch tensors, CuPy's current stream for CuPy arrays, and the
    /// device's default kernelkit stream for everything else.
    pub(crate) fn stream(
        &self,
        py: Python<'_>,
        stream: Option<&Bound<'_, PyAny>>,
        device: Option<&Bound<'_, PyAny>>,
        first: Option<&Source<'_>>,
        frame: &Frame,
    ) -> PyResult<(Stream, Option<Stream>)> {
        let stream = stream.filter(|s| !s.is_none());
        let device = device.filter(|d| !d.is_none());
        let what = KernelName(self.name());
        let wanted = device.map(|d| place_of(d, &what)).transpose()?;
        // NumPy arrays go to any device (a GPU gets a copy): the kernel's
        // default device decides for them.
        let data = first
            .filter(|s| !matches!(s, Source::NumPy(_)))
            .and_then(Source::place);
        let torch_of = |place: Place| -> PyResult<Option<Stream>> {
            match (frame, place) {
                (Frame::Torch, Place::Cuda(n)) => {
                    let raw = torch::current_stream(py, n)?;
                    Ok(Some(streams::wrap(&place.open(py)?, raw)?))
                }
                _ => Ok(None),
            }
        };
        let Some(s) = stream else {
            let place = wanted.or(data);
            let device = match place {
                Some(p) => p.open(py)?,
                None => self.default_device(py)?,
            };
            let place = Place::of(&device);
            return match (frame, place) {
                (Frame::Torch, Place::Cuda(_)) => {
                    let s = torch_of(place)?.expect("a CUDA place");
                    Ok((s.clone(), Some(s)))
                }
                (Frame::CuPy, Place::Cuda(n)) => {
                    let raw = streams::cupy_current(py, n)?;
                    Ok((streams::wrap(&device, raw)?, None))
                }
                _ => Ok((device.default_stream().clone(), None)),
            };
        };
        let (stream, place) = if let Ok(s) = s.cast::<PyStream>() {
            (s.get().stream()?.clone(), s.get().place())
        } else if let Some(raw) = framework_stream(s)? {
            let place = wanted.or(data).unwrap_or(Place::Cuda(0));
            (streams::wrap(&place.open(py)?, raw)?, place)
        } else {
            // MLX's `stream=` may name a device: its default stream.
            let place = place_of(s, &format_args!("{what}: stream= (a stream or a device)"))?;
            (place.open(py)?.default_stream().clone(), place)
        };
        if let Some(w) = wanted.filter(|w| *w != place) {
            return Err(errors::call(format!(
                "{what}: stream= is on {} but device= is {}",
                place.label(),
                w.label()
            )));
        }
        Ok((stream, torch_of(place)?))
    }

    fn default_device(&self, py: Python<'_>) -> PyResult<Device> {
        if let Some(d) = self.default_device.get() {
            return Ok(d.clone());
        }
        let place = match self.kernel.spec().language() {
            BodyLanguage::Cuda => Place::Cuda(0),
            _ => Place::Cpu,
        };
        let device = place.open(py)?;
        Ok(self.default_device.get_or_init(|| device).clone())
    }

    /// What each item of `items` is (`role`: `input` or `output`).
    fn sources<'py>(
        &self,
        items: &[Bound<'py, PyAny>],
        role: &'static str,
    ) -> PyResult<SmallVec<[Source<'py>; 4]>> {
        let spec = self.kernel.spec();
        let names = if role == "input" {
            spec.input_names()
        } else {
            spec.output_names()
        };
        let mut sources = SmallVec::new();
        for (index, obj) in items.iter().enumerate() {
            let named = Named {
                kernel: self.name(),
                role,
                names,
                index,
            };
            sources.push(Source::of(obj, &named)?);
        }
        Ok(sources)
    }

    /// The kernelkit arrays over `sources` (`role`: `input` or `output`).
    pub(crate) fn arrays(
        &self,
        sources: &[Source<'_>],
        role: &'static str,
        stream: &Stream,
        torch_stream: Option<&Stream>,
    ) -> PyResult<SmallVec<[Array; 4]>> {
        let spec = self.kernel.spec();
        let names = if role == "input" {
            spec.input_names()
        } else {
            spec.output_names()
        };
        let device = stream.device();
        let here = Place::of(device);
        let mut arrays = SmallVec::new();
        for (index, source) in sources.iter().enumerate() {
            let named = Named {
                kernel: self.name(),
                role,
                names,
                index,
            };
            // Host arrays reach a GPU by a copy; every other array must be
            // on the call's device (a CPU kernel must never be handed a
            // GPU's address).
            if let Some(p) = source.place().filter(|&p| p != here) {
                if !(matches!(source, Source::NumPy(_)) && role == "input") {
                    return Err(errors::call(format!(
                        "kernel `{}`: {named} is on {} but the call runs on {}",
                        self.name(),
                        p.label(),
                        here.label()
                    )));
                }
            }
            arrays.push(source.array(device, stream, torch_stream, role == "output", &named)?);
        }
        Ok(arrays)
    }

    /// Output shapes and dtypes from `output_shapes=`/`output_dtypes=`, if
    /// given.
    pub(crate) fn given_outputs(
        &self,
        shapes: Option<&Bound<'_, PyAny>>,
        dtypes: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Option<SmallVec<[OutputSpec; 2]>>> {
        self.given_outputs_in(&self.outputs, shapes, dtypes)
    }

    /// [`Self::given_outputs`] through `memo` (a tuned kernel keeps its
    /// own, so that the kernel's keeps what its calls give).
    pub(crate) fn given_outputs_in(
        &self,
        memo: &OutputsMemo,
        shapes: Option<&Bound<'_, PyAny>>,
        dtypes: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Option<SmallVec<[OutputSpec; 2]>>> {
        let kernel = self.name();
        let names = self.kernel.spec().output_names();
        let label = |index: usize| Named {
            kernel,
            role: "output",
            names,
            index,
        };
        let shapes = shapes
            .filter(|s| !s.is_none())
            .map(|s| args::items(s, kernel, &"output_shapes"))
            .transpose()?;
        let dtypes = dtypes
            .filter(|d| !d.is_none())
            .map(|d| args::items(d, kernel, &"output_dtypes"))
            .transpose()?;
        match (&shapes, &dtypes) {
            (Some(s), Some(d)) => {
                if let Some(specs) = memo.find(s, d) {
                    return Ok(Some(specs));
                }
                route::note(Route::Parsed);
                if s.len() != d.len() {
                    return Err(errors::call(format!(
                        "kernel `{kernel}`: {} output_shapes but {} output_dtypes",
                        s.len(),
                        d.len()
                    )));
                }
                let mut specs = SmallVec::new();
                for (i, (shape, dtype)) in s.iter().zip(d).enumerate() {
                    let name = label(i);
                    specs.push((
                        args::shape(shape, kernel, &name)?,
                        args::dtype(dtype, kernel, &name)?,
                    ));
                }
                memo.keep(s, d, &specs);
                Ok(Some(specs))
            }
            (None, None) => Ok(None),
            _ => Err(errors::argument_type(format!(
                "kernel `{kernel}`: output_shapes and output_dtypes go together"
            ))),
        }
    }

    /// Checks `out=` arrays' shapes and dtypes against the ones asked for.
    fn check_out(
        &self,
        given: Option<&SmallVec<[OutputSpec; 2]>>,
        specs: &[OutputSpec],
    ) -> PyResult<()> {
        let kernel = self.name();
        let names = self.kernel.spec().output_names();
        let Some(given) = given else {
            return Ok(());
        };
        for (i, (g, o)) in given.iter().zip(specs).enumerate() {
            if g != o {
                let label = Named {
                    kernel,
                    role: "output",
                    names,
                    index: i,
                };
                return Err(errors::call(format!(
                    "kernel `{kernel}`: {label} is asked as {:?} {} but out= holds {:?} {}",
                    g.0.as_slice(),
                    g.1,
                    o.0.as_slice(),
                    o.1
                )));
            }
        }
        if given.len() != specs.len() {
            return Err(errors::call(format!(
                "kernel `{kernel}`: {} output_shapes for {} out= arrays",
                given.len(),
                specs.len()
            )));
        }
        Ok(())
    }

    /// The outputs' shapes and dtypes, the arrays they are written into
    /// (none: kernelkit allocates), and how they are returned.
    #[allow(clippy::too_many_arguments)]
    fn plan<'py>(
        &self,
        py: Python<'py>,
        given: Option<SmallVec<[OutputSpec; 2]>>,
        out: Option<SmallVec<[Bound<'py, PyAny>; 4]>>,
        frame: &Frame,
        stream: &Stream,
        torch_stream: Option<&Stream>,
        like: Option<torch::Like<'_, 'py>>,
    ) -> PyResult<Planned<'py>> {
        let kernel = self.name();
        let names = self.kernel.spec().output_names();
        let label = |index: usize| Named {
            kernel,
            role: "output",
            names,
            index,
        };
        let on_gpu = stream.device().kind() == kernelkit::DeviceKind::Cuda;
        if let Some(out) = out {
            if out.len() != names.len() {
                return Err(errors::call(format!(
                    "kernel `{kernel}`: out= has {} array(s) for {} output(s) ({})",
                    out.len(),
                    names.len(),
                    names.join(", ")
                )));
            }
            let sources = self.sources(&out, "output")?;
            let numpy = sources.iter().all(|s| matches!(s, Source::NumPy(_)));
            // NumPy arrays a GPU writes, or whose layout a kernel cannot
            // write in place: written through a read-back.
            let read_back = numpy
                && (on_gpu
                    || sources.iter().any(|s| match s {
                        Source::NumPy(a) => !a.is_c_contiguous(),
                        _ => false,
                    }));
            if read_back {
                let mut specs: SmallVec<[OutputSpec; 2]> = SmallVec::new();
                for (i, obj) in out.iter().enumerate() {
                    let (shape, dtype) = arrays::out_array(obj, &label(i))?;
                    specs.push((shape.into_iter().collect(), dtype));
                }
                self.check_out(given.as_ref(), &specs)?;
                return Ok((specs, SmallVec::new(), Plan::ReadBack(Some(out))));
            }
            if numpy {
                for (i, obj) in out.iter().enumerate() {
                    arrays::out_array(obj, &label(i))?;
                }
            }
            for (i, source) in sources.iter().enumerate() {
                if let Source::Torch(obj, _) = source {
                    torch::check_writable(obj, &label(i))?;
                }
            }
            let targets: SmallVec<[Array; 2]> = self
                .arrays(&sources, "output", stream, torch_stream)?
                .into_iter()
                .collect();
            let specs = specs_of(&targets);
            self.check_out(given.as_ref(), &specs)?;
            let objects = out.into_iter().collect();
            return Ok((specs, targets, Plan::Into { objects, numpy }));
        }
        let specs = given.ok_or_else(|| {
            errors::argument_type(format!(
                "kernel `{kernel}`: output_shapes and output_dtypes are required (or out=)"
            ))
        })?;
        // Shapes kernelkit will refuse: let it word the error.
        let Some(shapes) = specs
            .iter()
            .map(|(s, d)| extents(s, *d))
            .collect::<Option<SmallVec<[SmallVec<[usize; 4]>; 2]>>>()
        else {
            return Ok((specs, SmallVec::new(), Plan::ReadBack(None)));
        };
        let here = Place::of(stream.device());
        let mut objects: SmallVec<[Bound<'py, PyAny>; 2]> = SmallVec::new();
        let sources: SmallVec<[Source<'py>; 4]> = match frame {
            Frame::NumPy if on_gpu => return Ok((specs, SmallVec::new(), Plan::ReadBack(None))),
            Frame::NumPy => {
                for (shape, (_, dtype)) in shapes.iter().zip(&specs) {
                    objects.push(arrays::numpy_empty(py, shape, *dtype)?.into_any());
                }
                self.sources(&objects, "output")?
            }
            Frame::Torch => {
                let mut sources = SmallVec::new();
                for (made, layout) in self.torch_outputs(py, &shapes, &specs, here, like)? {
                    sources.push(Source::Torch(made.clone(), layout));
                    objects.push(made);
                }
                sources
            }
            Frame::CuPy => {
                let alloc = py.import("kernelkit._alloc")?.getattr("cupy_empty")?;
                let ordinal = match here {
                    Place::Cuda(n) => n,
                    Place::Cpu => 0,
                };
                for (shape, (_, dtype)) in shapes.iter().zip(&specs) {
                    objects.push(alloc.call1((
                        pyo3::types::PyTuple::new(py, shape)?,
                        dtype.name(),
                        ordinal,
                    ))?);
                }
                self.sources(&objects, "output")?
            }
            Frame::Dlpack(module) => {
                let module = module.as_ref().map(|m| m.clone_ref(py));
                return Ok((specs, SmallVec::new(), Plan::Export(module)));
            }
        };
        let targets = self
            .arrays(&sources, "output", stream, torch_stream)?
            .into_iter()
            .collect();
        let numpy = matches!(frame, Frame::NumPy);
        Ok((specs, targets, Plan::Into { objects, numpy }))
    }
}

/// A framework's stream object's raw handle: torch's `cuda_stream`, CuPy's
/// `ptr` (an `int` either way); `None` for other objects.
pub(crate) fn framework_stream(obj: &Bound<'_, PyAny>) -> PyResult<Option<u64>> {
    let py = obj.py();
    for attr in [intern!(py, "cuda_stream"), intern!(py, "ptr")] {
        if let Ok(v) = obj.getattr(attr) {
            if let Ok(raw) = v.extract::<u64>() {
                return Ok(Some(raw));
            }
        }
    }
    Ok(None)
}

#[pymethods]
impl PyKernel {
    /// Runs the kernel; returns the outputs, in the order of
    /// `output_names`, as arrays of the inputs' kind: NumPy arrays for
    /// NumPy inputs, torch tensors (from `torch.empty`, on the inputs'
    /// device) for torch tensors, CuPy arrays for CuPy arrays, and for
    /// other DLPack arrays their library's (`from_dlpack`) or a
    /// `kernelkit.Array`; the `out=` arrays themselves when given.
    ///
    /// The GIL is released while the kernel is compiled (once per variant),
    /// loaded and launched, and while outputs are read back.
    #[pyo3(signature = (*, inputs = None, grid = None, threadgroup = None, output_shapes = None, output_dtypes = None, template = None, init_value = None, verbose = None, stream = None, device = None, out = None, donate = None, allow_overlap = None))]
    #[allow(clippy::too_many_arguments)] // MLX's signature, plus device=, out=, donate=, allow_overlap=.
    fn __call__<'py>(
        &self,
        py: Python<'py>,
        inputs: Option<&Bound<'py, PyAny>>,
        grid: Option<&Bound<'py, PyAny>>,
        threadgroup: Option<&Bound<'py, PyAny>>,
        output_shapes: Option<&Bound<'py, PyAny>>,
        output_dtypes: Option<&Bound<'py, PyAny>>,
        template: Option<&Bound<'py, PyAny>>,
        init_value: Option<&Bound<'py, PyAny>>,
        verbose: Option<&Bound<'py, PyAny>>,
        stream: Option<&Bound<'py, PyAny>>,
        device: Option<&Bound<'py, PyAny>>,
        out: Option<&Bound<'py, PyAny>>,
        donate: Option<&Bound<'py, PyAny>>,
        allow_overlap: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyList>> {
        route::note(Route::Method);
        let [inputs, grid, threadgroup] = self.required([inputs, grid, threadgroup])?;
        let (init_value, verbose) = self.scalars(init_value, verbose)?;
        let allow_overlap = args::flag(allow_overlap, self.name(), "allow_overlap", false)?;
        self.run(CallArgs {
            py,
            inputs,
            grid,
            threadgroup,
            output_shapes,
            output_dtypes,
            template,
            init_value,
            verbose,
            stream,
            device,
            out,
            donate,
            allow_overlap,
            tune: None,
        })
    }

    /// The same as calling the kernel. Python calls a method through
    /// vectorcall, its keyword names in a tuple, where calling an object of
    /// this type builds a dict of them first (PyO3 gives `__call__` only
    /// the tuple-and-dict slot): the `Kernel` the package returns on
    /// Python 3.12 and later (`kernelkit/_kernel.py`) calls this.
    #[pyo3(signature = (*, inputs = None, grid = None, threadgroup = None, output_shapes = None, output_dtypes = None, template = None, init_value = None, verbose = None, stream = None, device = None, out = None, donate = None, allow_overlap = None))]
    #[allow(clippy::too_many_arguments)] // MLX's signature, plus device=, out=, donate=, allow_overlap=.
    fn call<'py>(
        &self,
        py: Python<'py>,
        inputs: Option<&Bound<'py, PyAny>>,
        grid: Option<&Bound<'py, PyAny>>,
        threadgroup: Option<&Bound<'py, PyAny>>,
        output_shapes: Option<&Bound<'py, PyAny>>,
        output_dtypes: Option<&Bound<'py, PyAny>>,
        template: Option<&Bound<'py, PyAny>>,
        init_value: Option<&Bound<'py, PyAny>>,
        verbose: Option<&Bound<'py, PyAny>>,
        stream: Option<&Bound<'py, PyAny>>,
        device: Option<&Bound<'py, PyAny>>,
        out: Option<&Bound<'py, PyAny>>,
        donate: Option<&Bound<'py, PyAny>>,
        allow_overlap: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyList>> {
        route::note(Route::Method);
        let [inputs, grid, threadgroup] = self.required([inputs, grid, threadgroup])?;
        let (init_value, verbose) = self.scalars(init_value, verbose)?;
        let allow_overlap = args::flag(allow_overlap, self.name(), "allow_overlap", false)?;
        self.run(CallArgs {
            py,
            inputs,
            grid,
            threadgroup,
            output_shapes,
            output_dtypes,
            template,
            init_value,
            verbose,
            stream,
            device,
            out,
            donate,
            allow_overlap,
            tune: None,
        })
    }

    /// How many launches this kernel keeps prepared for the layouts of its
    /// last torch calls (for tests).
    #[getter(_rebound_launches)]
    fn rebound_launches(&self) -> usize {
        self.rebound.len()
    }

    /// The kernel's name.
    #[getter(name)]
    fn py_name(&self) -> &str {
        self.name()
    }

    /// The input names, in call order.
    #[getter]
    fn input_names(&self) -> Vec<String> {
        self.kernel.spec().input_names().to_vec()
    }

    /// The output names, in call order.
    #[getter]
    fn output_names(&self) -> Vec<String> {
        self.kernel.spec().output_names().to_vec()
    }

    /// The kernel itself: it holds nothing a call changes (its caches are
    /// shared by design), so a copied model shares it.
    fn __copy__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// The kernel itself (see `__copy__`).
    fn __deepcopy__(slf: Py<Self>, _memo: &Bound<'_, PyAny>) -> Py<Self> {
        slf
    }

    fn __repr__(&self) -> String {
        let spec = self.kernel.spec();
        format!(
            "<kernelkit.Kernel '{}' ({}) inputs={:?} outputs={:?}>",
            spec.name(),
            match spec.language() {
                BodyLanguage::Cuda => "cuda_kernel",
                _ => "metal_kernel",
            },
            spec.input_names(),
            spec.output_names()
        )
    }
}
