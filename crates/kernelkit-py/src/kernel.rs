//! `metal_kernel`, `cuda_kernel` and the callable they return.
//!
//! The kernel is built (names validated, body scanned) once, when
//! `metal_kernel` is called; each call converts its arguments, releases the
//! GIL, and runs kernelkit's call path: variant memo, kernel cache (one
//! compile per distinct variant, however many threads ask), launch, and
//! the read-back of the outputs.

use std::sync::OnceLock;

use kernelkit::{Array, Call, Device, Kernel, Stream};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use smallvec::SmallVec;

use crate::args::{self, OutputSpec, Template, TemplateMemo};
use crate::arrays::{self, Named};
use crate::device::{place_of, Place, PyStream};
use crate::dtypes::describe;
use crate::errors::{self, IntoPy, Kind};

/// Which MLX function made the kernel: it sets the default device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Flavor {
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
    /// The device a call uses when it names none, opened on first use.
    default_device: OnceLock<Device>,
}

/// `metal_kernel(name, input_names, output_names, source, header="",
/// ensure_row_contiguous=True, atomic_outputs=False, compile_options=None)`.
#[pyfunction]
#[pyo3(signature = (name, input_names, output_names, source, header = String::new(), ensure_row_contiguous = true, atomic_outputs = false, compile_options = None))]
#[allow(clippy::too_many_arguments)] // MLX's signature.
pub(crate) fn metal_kernel(
    name: String,
    input_names: Vec<String>,
    output_names: Vec<String>,
    source: String,
    header: String,
    ensure_row_contiguous: bool,
    atomic_outputs: bool,
    compile_options: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyKernel> {
    check_compile_options(&name, compile_options)?;
    let kernel = Kernel::builder(name)
        .inputs(input_names)
        .outputs(output_names)
        .source(source)
        .header(header)
        .ensure_row_contiguous(ensure_row_contiguous)
        .atomic_outputs(atomic_outputs)
        .build()
        .py_err()?;
    Ok(PyKernel::new(kernel, Flavor::Metal, 0))
}

/// `cuda_kernel(name, input_names, output_names, source, header="",
/// ensure_row_contiguous=True, shared_memory=0)`.
#[pyfunction]
#[pyo3(signature = (name, input_names, output_names, source, header = String::new(), ensure_row_contiguous = true, shared_memory = 0))]
pub(crate) fn cuda_kernel(
    name: String,
    input_names: Vec<String>,
    output_names: Vec<String>,
    source: String,
    header: String,
    ensure_row_contiguous: bool,
    shared_memory: u32,
) -> PyResult<PyKernel> {
    let builder = Kernel::builder(name)
        .inputs(input_names)
        .outputs(output_names)
        .source(source)
        .header(header)
        .ensure_row_contiguous(ensure_row_contiguous);
    // SEAM(body dialect): when `KernelBuilder` gets its body-dialect option
    // (branch `compat`), mark this body as CUDA C++ here; until then it is
    // built like a `metal_kernel` body, which the CUDA backend compiles as
    // CUDA C++ anyway.
    let kernel = builder.build().py_err()?;
    Ok(PyKernel::new(kernel, Flavor::Cuda, shared_memory))
}

/// MLX's `compile_options`: a dict whose one key, `math_mode`, is `safe`,
/// `relaxed` or `fast`. kernelkit compiles every mode as `safe` (IEEE
/// special values kept), which is what `relaxed` and `fast` permit.
fn check_compile_options(kernel: &str, options: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
    let Some(options) = options.filter(|o| !o.is_none()) else {
        return Ok(());
    };
    let bad = |message: String| errors::raise(Kind::Build, format!("kernel `{kernel}`: {message}"));
    let Ok(dict) = options.cast::<PyDict>() else {
        return Err(bad(format!(
            "compile_options must be a dict, got {}",
            describe(options)
        )));
    };
    for (key, value) in dict.iter() {
        match key.extract::<String>().ok().as_deref() {
            Some("math_mode") => {
                let mode = value.extract::<String>().unwrap_or_default();
                if !["safe", "relaxed", "fast"].contains(&mode.as_str()) {
                    return Err(bad(format!(
                        "compile option math_mode is {}; expected 'safe', 'relaxed' or 'fast'",
                        describe(&value)
                    )));
                }
            }
            _ => return Err(bad(format!("unknown compile option {}", describe(&key)))),
        }
    }
    Ok(())
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
        for (shape, dtype) in &self.outputs {
            call = call.output(shape.iter().copied(), *dtype);
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

impl PyKernel {
    fn new(kernel: Kernel, flavor: Flavor, shared_memory: u32) -> PyKernel {
        PyKernel {
            kernel,
            flavor,
            shared_memory,
            template: TemplateMemo::default(),
            default_device: OnceLock::new(),
        }
    }

    fn name(&self) -> &str {
        self.kernel.name()
    }

    /// The stream a call runs on: `stream=` (a stream, or a device whose
    /// default stream it is), else the default stream of `device=`, else
    /// of the kernel's default device.
    fn stream(
        &self,
        py: Python<'_>,
        stream: Option<&Bound<'_, PyAny>>,
        device: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Stream> {
        let stream = stream.filter(|s| !s.is_none());
        let device = device.filter(|d| !d.is_none());
        let what = KernelName(self.name());
        let wanted = device.map(|d| place_of(d, &what)).transpose()?;
        let (stream, place) = match stream {
            Some(s) => match s.cast::<PyStream>() {
                Ok(s) => (s.get().stream()?.clone(), s.get().place()),
                Err(_) => {
                    let place = place_of(s, &what)?;
                    (place.open(py)?.default_stream().clone(), place)
                }
            },
            None => {
                let device = match wanted {
                    Some(place) => place.open(py)?,
                    None => self.default_device(py)?,
                };
                return Ok(device.default_stream().clone());
            }
        };
        if let Some(w) = wanted.filter(|w| *w != place) {
            return Err(errors::call(format!(
                "{what}: stream= is on {} but device= is {}",
                place.label(),
                w.label()
            )));
        }
        Ok(stream)
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

    /// `inputs=` as kernelkit arrays on `device` (copies; see `arrays`).
    fn inputs(&self, inputs: &Bound<'_, PyAny>, device: &Device) -> PyResult<SmallVec<[Array; 4]>> {
        let names = self.kernel.spec().input_names();
        let mut arrays = SmallVec::new();
        for (i, obj) in args::items(inputs, self.name(), &"inputs")?
            .iter()
            .enumerate()
        {
            let named = Named {
                kernel: self.name(),
                role: "input",
                names,
                index: i,
            };
            arrays.push(arrays::input(obj, device, &named)?);
        }
        Ok(arrays)
    }

    /// Output shapes and dtypes from `output_shapes=`/`output_dtypes=`,
    /// or from `out=` arrays (which they must then match).
    fn outputs<'py>(
        &self,
        shapes: Option<&Bound<'py, PyAny>>,
        dtypes: Option<&Bound<'py, PyAny>>,
        out: Option<&SmallVec<[Bound<'py, PyAny>; 4]>>,
    ) -> PyResult<SmallVec<[OutputSpec; 2]>> {
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
        let given: Option<SmallVec<[OutputSpec; 2]>> = match (&shapes, &dtypes) {
            (Some(s), Some(d)) => {
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
                Some(specs)
            }
            (None, None) => None,
            _ => {
                return Err(errors::argument_type(format!(
                    "kernel `{kernel}`: output_shapes and output_dtypes go together"
                )))
            }
        };
        let Some(out) = out else {
            return given.ok_or_else(|| {
                errors::argument_type(format!(
                    "kernel `{kernel}`: output_shapes and output_dtypes are required (or out=)"
                ))
            });
        };
        if out.len() != names.len() {
            return Err(errors::call(format!(
                "kernel `{kernel}`: out= has {} array(s) for {} output(s) ({})",
                out.len(),
                names.len(),
                names.join(", ")
            )));
        }
        let mut specs: SmallVec<[OutputSpec; 2]> = SmallVec::new();
        for (i, obj) in out.iter().enumerate() {
            let (shape, dtype) = arrays::out_array(obj, &label(i))?;
            specs.push((shape.into_iter().collect(), dtype));
        }
        if let Some(given) = given {
            for (i, (g, o)) in given.iter().zip(&specs).enumerate() {
                if g != o {
                    return Err(errors::call(format!(
                        "kernel `{kernel}`: {} is asked as {:?} {} but out= holds {:?} {}",
                        label(i),
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
        }
        Ok(specs)
    }
}

#[pymethods]
impl PyKernel {
    /// Runs the kernel; returns the outputs, in the order of
    /// `output_names`, as NumPy arrays (the `out=` arrays themselves when
    /// given).
    ///
    /// The GIL is released while the kernel is compiled (once per variant),
    /// loaded and launched, and while its outputs are read back.
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
        let stream = self.stream(py, stream, device)?;
        let out = out
            .filter(|o| !o.is_none())
            .map(|o| args::items(o, kernel, &"out"))
            .transpose()?;
        let parts = Parts {
            inputs: self.inputs(inputs, stream.device())?,
            outputs: self.outputs(output_shapes, output_dtypes, out.as_ref())?,
            template: self.template.parse(template, kernel)?,
            grid: args::dims3(grid, kernel, "grid")?,
            threadgroup: args::dims3(threadgroup, kernel, "threadgroup")?,
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
