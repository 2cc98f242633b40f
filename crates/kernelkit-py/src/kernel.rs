//! The callable `metal_kernel` and `cuda_kernel` return (`constructors.rs`).
//!
//! The kernel is built (names validated, body scanned) once, when
//! `metal_kernel` is called; each call converts its arguments, releases the
//! GIL, and runs kernelkit's call path: variant memo, kernel cache (one
//! compile per distinct variant, however many threads ask), launch, and
//! the read-back of the outputs. A call on torch tensors of a layout the
//! kernel saw lately reads them and launches what the first call of that
//! layout prepared (`crate::rebound`).

use std::sync::OnceLock;

use kernelkit::{Array, Call, Device, Kernel, Stream};
use pyo3::prelude::*;
use pyo3::types::PyList;
use smallvec::SmallVec;

use crate::args::{self, DimsMemo, OutputSpec, OutputsMemo, Template, TemplateMemo};
use crate::arrays::{self, Named};
use crate::device::{place_of, Place, PyStream};
use crate::errors::{self, IntoPy};
use crate::export::PyArray;
use crate::rebound::{Entry, Key, Rebound};
use crate::sources::{Frame, Source};
use crate::{streams, torch};
use numpy::{PyUntypedArray, PyUntypedArrayMethods};
use pyo3::intern;

/// Which MLX function made the kernel: it sets the default device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Flavor {
    /// `metal_kernel`: portable bodies; runs where the inputs live
    /// (NumPy arrays: the CPU) unless `device=` or `stream=` says.
    Metal,
    /// `cuda_kernel`: CUDA C++ bodies; runs on `cuda:0` unless told.
    Cuda,
}

/// A compiled-on-demand custom kernel, called like MLX's:
/// `kernel(inputs=[...], grid=..., threadgroup=..., output_shapes=[...],
/// output_dtypes=[...], template=[...])` returns a list of NumPy arrays.
#[pyclass(frozen, module = "kernelkit", name = "Kernel")]
pub(crate) struct PyKernel {
    kernel: Kernel,
    flavor: Flavor,
    /// `cuda_kernel`'s dynamic shared memory per threadgroup, in bytes.
    shared_memory: u32,
    template: TemplateMemo,
    grid: DimsMemo,
    threadgroup: DimsMemo,
    /// The last `output_shapes`/`output_dtypes` parsed.
    outputs: OutputsMemo,
    /// The device a call uses when it names none, opened on first use.
    default_device: OnceLock<Device>,
    /// Launches prepared for the last layouts of torch calls.
    rebound: Rebound,
}

/// "kernel `name`", formatted only for an error.
struct KernelName<'a>(&'a str);

impl std::fmt::Display for KernelName<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "kernel `{}`", self.0)
    }
}

/// One call's converted arguments.
struct Parts {
    inputs: SmallVec<[Array; 4]>,
    outputs: SmallVec<[OutputSpec; 2]>,
    /// The arrays the outputs are written into, when the caller's kind of
    /// array holds them (empty: kernelkit allocates them).
    targets: SmallVec<[Array; 2]>,
    template: Template,
    grid: [u64; 3],
    threadgroup: [u64; 3],
    init_value: Option<f64>,
    shared_memory: u32,
    stream: Stream,
}

impl Parts {
    /// The kernelkit call these parts describe.
    fn call<'a>(&'a self, kernel: &'a Kernel) -> Call<'a> {
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
            for target in &self.targets {
                call = call.output_into(target);
            }
        }
        for (name, value) in &self.template {
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
type Made<'py> = (Bound<'py, PyAny>, torch::Tensor);

/// A call's output shapes and dtypes, the arrays they are written into
/// (none: kernelkit allocates them), and how they are returned.
type Planned<'py> = (SmallVec<[OutputSpec; 2]>, SmallVec<[Array; 2]>, Plan<'py>);

/// The shapes and dtypes of outputs written into `targets`.
fn specs_of(targets: &[Array]) -> SmallVec<[OutputSpec; 2]> {
    targets
        .iter()
        .map(|t| (t.shape().iter().map(|&d| d as i64).collect(), t.dtype()))
        .collect()
}

/// Extents as `usize`, or `None` when kernelkit will refuse them (an
/// extent below 1, a size past `isize::MAX` bytes): its check then words
/// the error.
fn extents(shape: &[i64], dtype: kernelkit::DType) -> Option<SmallVec<[usize; 4]>> {
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
    pub(crate) fn new(kernel: Kernel, flavor: Flavor, shared_memory: u32) -> PyKernel {
        PyKernel {
            kernel,
            flavor,
            shared_memory,
            template: TemplateMemo::default(),
            grid: DimsMemo::default(),
            threadgroup: DimsMemo::default(),
            outputs: OutputsMemo::default(),
            default_device: OnceLock::new(),
            rebound: Rebound::default(),
        }
    }

    fn name(&self) -> &str {
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
    fn stream(
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
            let place = place_of(s, &what)?;
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
        let place = match self.flavor {
            Flavor::Metal => Place::Cpu,
            Flavor::Cuda => Place::Cuda(0),
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
    fn arrays(
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
    fn given_outputs(
        &self,
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
                if let Some(specs) = self.outputs.find(s, d) {
                    return Ok(Some(specs));
                }
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
                self.outputs.keep(s, d, &specs);
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

impl PyKernel {
    /// New torch tensors for outputs of these shapes and `specs`' dtypes on
    /// `place`. Made here, so known but for their addresses: one call each,
    /// not the five of reading a tensor.
    fn torch_outputs<'py>(
        &self,
        py: Python<'py>,
        shapes: &[SmallVec<[usize; 4]>],
        specs: &[OutputSpec],
        place: Place,
        like: Option<torch::Like<'_, 'py>>,
    ) -> PyResult<SmallVec<[Made<'py>; 2]>> {
        let names = self.kernel.spec().output_names();
        let mut made = SmallVec::new();
        for (i, (shape, (_, dtype))) in shapes.iter().zip(specs).enumerate() {
            let label = Named {
                kernel: self.name(),
                role: "output",
                names,
                index: i,
            };
            let tensor = torch::empty(py, shape, *dtype, place, like, &label)?;
            let layout = torch::Tensor::made(&tensor, shape, *dtype, place)?;
            made.push((tensor, layout));
        }
        Ok(made)
    }

    /// A call whose arrays are all `torch.Tensor`s on one GPU, on torch's
    /// current stream there, with neither a fill nor a print: run through
    /// the launch prepared for its layout (`crate::rebound`), which the
    /// first call of a layout prepares. `None`, having done nothing, for
    /// any other call.
    #[allow(clippy::too_many_arguments)]
    fn torch_call<'py>(
        &self,
        py: Python<'py>,
        sources: &[Source<'py>],
        out: Option<&SmallVec<[Bound<'py, PyAny>; 4]>>,
        output_shapes: Option<&Bound<'py, PyAny>>,
        output_dtypes: Option<&Bound<'py, PyAny>>,
        template: Option<&Bound<'py, PyAny>>,
        grid: &Bound<'py, PyAny>,
        threadgroup: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyList>>> {
        let kernel = self.name();
        let names = self.kernel.spec().output_names();
        let mut ordinal = None;
        let mut inputs: SmallVec<[&torch::Tensor; 4]> = SmallVec::new();
        for source in sources {
            let Source::Torch(obj, t) = source else {
                return Ok(None);
            };
            match t.place {
                Place::Cuda(n) if torch::is_exact_tensor(obj) && ordinal.is_none_or(|o| o == n) => {
                    ordinal = Some(n);
                    inputs.push(t);
                }
                _ => return Ok(None),
            }
        }
        let Some(n) = ordinal else {
            return Ok(None);
        };
        let here = Place::Cuda(n);
        let label = |index: usize| Named {
            kernel,
            role: "output",
            names,
            index,
        };
        // The outputs: the `out=` tensors, read; or new ones, made last,
        // once nothing can send the call to the general path.
        let given = self.given_outputs(output_shapes, output_dtypes)?;
        let (objects, made): (
            SmallVec<[Bound<'py, PyAny>; 2]>,
            SmallVec<[torch::Tensor; 2]>,
        ) = match (out, given) {
            (Some(out), None) => {
                if out.len() != names.len() {
                    return Ok(None);
                }
                let mut read = SmallVec::new();
                for (i, o) in out.iter().enumerate() {
                    if !torch::is_exact_tensor(o) {
                        return Ok(None);
                    }
                    let t = torch::read(o, &label(i))?;
                    if t.place != here {
                        return Ok(None);
                    }
                    read.push(t);
                }
                (out.iter().cloned().collect(), read)
            }
            (None, Some(specs)) => {
                let Some(shapes) = specs
                    .iter()
                    .map(|(s, d)| extents(s, *d))
                    .collect::<Option<SmallVec<[SmallVec<[usize; 4]>; 2]>>>()
                else {
                    return Ok(None);
                };
                let like = sources.iter().find_map(|s| match s {
                    Source::Torch(obj, t) => Some((obj, t)),
                    _ => None,
                });
                self.torch_outputs(py, &shapes, &specs, here, like)?
                    .into_iter()
                    .unzip()
            }
            _ => return Ok(None),
        };
        let outputs: SmallVec<[&torch::Tensor; 2]> = made.iter().collect();
        let key = Key {
            ordinal: n,
            stream: torch::current_stream(py, n)?,
            grid: self.grid.get(grid, kernel, "grid")?,
            threadgroup: self.threadgroup.get(threadgroup, kernel, "threadgroup")?,
            template: &self.template.parse(template, kernel)?,
            inputs: &inputs,
            outputs: &outputs,
        };
        let in_addrs: SmallVec<[u64; 4]> = inputs.iter().map(|t| t.data).collect();
        let out_addrs: SmallVec<[u64; 2]> = outputs.iter().map(|t| t.data).collect();
        if let Some(entry) = self.rebound.find(&key) {
            // SAFETY: the tensors have the layouts the launch was prepared
            // for (`Entry::fits`), on its GPU (torch's `get_device()`),
            // and torch orders their use on its current stream there, the
            // launch's; the list of them keeps them alive through the call.
            py.detach(|| unsafe { entry.launch.run(&in_addrs, &out_addrs) })
                .py_err()?;
            return Ok(Some(PyList::new(py, objects)?));
        }
        // A new layout: the general path's arrays, checks and variant;
        // its launch is kept, prepared, for the next call of this layout.
        tracing::debug!("kernel `{kernel}`: a new torch layout, prepared");
        let stream = streams::wrap(&here.open(py)?, key.stream)?;
        let out_sources: SmallVec<[Source<'py>; 4]> = objects
            .iter()
            .zip(&made)
            .map(|(o, t)| Source::Torch(o.clone(), t.clone()))
            .collect();
        let targets: SmallVec<[Array; 2]> = self
            .arrays(&out_sources, "output", &stream, Some(&stream))?
            .into_iter()
            .collect();
        let parts = Parts {
            inputs: self.arrays(sources, "input", &stream, Some(&stream))?,
            outputs: specs_of(&targets),
            targets,
            template: key.template.clone(),
            grid: key.grid,
            threadgroup: key.threadgroup,
            init_value: None,
            shared_memory: self.shared_memory,
            stream,
        };
        let prepared = py
            .detach(|| {
                let call = parts.call(&self.kernel);
                match call.rebindable()? {
                    // SAFETY: the addresses are those of the arrays the
                    // launch was just prepared with, alive in `parts`.
                    Some(launch) => {
                        unsafe { launch.run(&in_addrs, &out_addrs) }.map(|()| Some(launch))
                    }
                    None => call.launch().map(|_| None),
                }
            })
            .py_err()?;
        if let Some(launch) = prepared {
            self.rebound.keep(Entry::new(&key, launch));
        }
        Ok(Some(PyList::new(py, objects)?))
    }
}

/// A framework's stream object's raw handle: torch's `cuda_stream`, CuPy's
/// `ptr` (an `int` either way); `None` for other objects.
fn framework_stream(obj: &Bound<'_, PyAny>) -> PyResult<Option<u64>> {
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
    #[pyo3(signature = (*, inputs, grid, threadgroup, output_shapes = None, output_dtypes = None, template = None, init_value = None, verbose = false, stream = None, device = None, out = None))]
    #[allow(clippy::too_many_arguments)] // MLX's signature, plus device= and out=.
    fn __call__<'py>(
        &self,
        py: Python<'py>,
        inputs: &Bound<'py, PyAny>,
        grid: &Bound<'py, PyAny>,
        threadgroup: &Bound<'py, PyAny>,
        output_shapes: Option<&Bound<'py, PyAny>>,
        output_dtypes: Option<&Bound<'py, PyAny>>,
        template: Option<&Bound<'py, PyAny>>,
        init_value: Option<f64>,
        verbose: bool,
        stream: Option<&Bound<'py, PyAny>>,
        device: Option<&Bound<'py, PyAny>>,
        out: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let kernel = self.name();
        let items = args::items(inputs, kernel, &"inputs")?;
        let sources = self.sources(&items, "input")?;
        let out = out
            .filter(|o| !o.is_none())
            .map(|o| args::items(o, kernel, &"out"))
            .transpose()?;
        let plain = stream.is_none_or(|s| s.is_none())
            && device.is_none_or(|d| d.is_none())
            && init_value.is_none()
            && !verbose;
        if plain {
            if let Some(list) = self.torch_call(
                py,
                &sources,
                out.as_ref(),
                output_shapes,
                output_dtypes,
                template,
                grid,
                threadgroup,
            )? {
                return Ok(list);
            }
        }
        let out_first = match &out {
            Some(items) if sources.iter().all(|s| s.place().is_none()) => {
                self.sources(&items[..items.len().min(1)], "output")?
            }
            _ => SmallVec::new(),
        };
        let first = sources
            .iter()
            .chain(out_first.iter())
            .find(|s| s.place().is_some());
        let frame = first.and_then(Source::frame).unwrap_or(Frame::NumPy);
        let (stream, torch_stream) = self.stream(py, stream, device, first, &frame)?;
        let inputs = self.arrays(&sources, "input", &stream, torch_stream.as_ref())?;
        let given = self.given_outputs(output_shapes, output_dtypes)?;
        // The first input that is a `torch.Tensor` itself: outputs of its
        // dtype and device are made with its `new_empty`.
        // (Only when outputs are made: not for `out=`.)
        let like = match (&out, &frame) {
            (None, Frame::Torch) => sources.iter().find_map(|s| match s {
                Source::Torch(obj, t) if torch::is_exact_tensor(obj) => Some((obj, t)),
                _ => None,
            }),
            _ => None,
        };
        let (outputs, targets, plan) =
            self.plan(py, given, out, &frame, &stream, torch_stream.as_ref(), like)?;
        let parts = Parts {
            inputs,
            outputs,
            targets,
            template: self.template.parse(template, kernel)?,
            grid: self.grid.get(grid, kernel, "grid")?,
            threadgroup: self.threadgroup.get(threadgroup, kernel, "threadgroup")?,
            init_value,
            shared_memory: self.shared_memory,
            stream,
        };
        if verbose {
            let generated = parts
                .call(&self.kernel)
                .generate(parts.stream.device().dialect())
                .py_err()?;
            py.import("builtins")?
                .getattr("print")?
                .call1((generated.source.to_string(),))?;
        }
        match plan {
            Plan::Into { objects, numpy } => {
                py.detach(|| parts.call(&self.kernel).launch().map(drop))
                    .py_err()?;
                if numpy {
                    for o in &objects {
                        if let Ok(a) = o.cast::<PyUntypedArray>() {
                            arrays::normalize_bools(a);
                        }
                    }
                }
                PyList::new(py, objects)
            }
            Plan::ReadBack(out) => {
                let bytes = py
                    .detach(|| {
                        let outputs = parts.call(&self.kernel).launch()?;
                        arrays::read_outputs(&outputs)
                    })
                    .py_err()?;
                let results = PyList::empty(py);
                for (i, (bytes, (shape, dtype))) in bytes.iter().zip(&parts.outputs).enumerate() {
                    let shape: SmallVec<[usize; 4]> = shape.iter().map(|&d| d as usize).collect();
                    match &out {
                        Some(out) => {
                            arrays::write_out(&out[i], bytes, &shape, *dtype)?;
                            results.append(&out[i])?;
                        }
                        None => results.append(arrays::to_numpy(py, bytes, &shape, *dtype)?)?,
                    }
                }
                Ok(results)
            }
            Plan::Export(module) => {
                let outputs = py.detach(|| parts.call(&self.kernel).launch()).py_err()?;
                let results = PyList::empty(py);
                for array in outputs.iter() {
                    let exported = Bound::new(
                        py,
                        PyArray {
                            array: array.clone(),
                            producer: Some(parts.stream.clone()),
                        },
                    )?;
                    match &module {
                        Some(m) => results.append(
                            m.bind(py)
                                .call_method1(intern!(py, "from_dlpack"), (exported,))?,
                        )?,
                        None => results.append(exported)?,
                    }
                }
                Ok(results)
            }
        }
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

    fn __repr__(&self) -> String {
        let spec = self.kernel.spec();
        format!(
            "<kernelkit.Kernel '{}' ({}) inputs={:?} outputs={:?}>",
            spec.name(),
            match self.flavor {
                Flavor::Metal => "metal_kernel",
                Flavor::Cuda => "cuda_kernel",
            },
            spec.input_names(),
            spec.output_names()
        )
    }
}
