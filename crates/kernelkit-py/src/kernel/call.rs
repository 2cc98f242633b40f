//! One call of a kernel, from its Python arguments to its outputs: a
//! repeated torch layout first (`crate::torch::repeat`), then the torch
//! path (`crate::torch::path`), else the general one (every kind of array,
//! stream and device). `crate::torch` draws the order.

use numpy::PyUntypedArray;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::PyList;
use smallvec::SmallVec;

use super::{Frame, Parts, Plan, PyKernel};
use crate::args;
use crate::array_args::Source;
use crate::arrays;
use crate::dlpack_outputs::PyArray;
use crate::errors::{self, IntoPy};
use crate::torch;

/// One call's arguments, as MLX names them (and `device=`, `out=`).
pub(crate) struct CallArgs<'a, 'py> {
    pub(crate) py: Python<'py>,
    pub(crate) inputs: &'a Bound<'py, PyAny>,
    pub(crate) grid: &'a Bound<'py, PyAny>,
    pub(crate) threadgroup: &'a Bound<'py, PyAny>,
    pub(crate) output_shapes: Option<&'a Bound<'py, PyAny>>,
    pub(crate) output_dtypes: Option<&'a Bound<'py, PyAny>>,
    pub(crate) template: Option<&'a Bound<'py, PyAny>>,
    pub(crate) init_value: Option<f64>,
    pub(crate) verbose: bool,
    pub(crate) stream: Option<&'a Bound<'py, PyAny>>,
    pub(crate) device: Option<&'a Bound<'py, PyAny>>,
    pub(crate) out: Option<&'a Bound<'py, PyAny>>,
}

/// MLX's required parameters, in the order [`PyKernel::required`] takes them.
const REQUIRED: [&str; 3] = ["inputs", "grid", "threadgroup"];

impl PyKernel {
    /// MLX's three required arguments, checked here rather than by PyO3,
    /// so that a call without one (or with `None` for one) raises
    /// kernelkit's `ArgumentTypeError`, a `TypeError`, naming the kernel,
    /// as every other error of a call does.
    pub(super) fn required<'a, 'py>(
        &self,
        given: [Option<&'a Bound<'py, PyAny>>; 3],
    ) -> PyResult<[&'a Bound<'py, PyAny>; 3]> {
        if let [Some(inputs), Some(grid), Some(threadgroup)] = given {
            return Ok([inputs, grid, threadgroup]);
        }
        let missing: Vec<String> = REQUIRED
            .iter()
            .zip(given)
            .filter(|(_, value)| value.is_none())
            .map(|(name, _)| format!("`{name}`"))
            .collect();
        Err(errors::argument_type(format!(
            "kernel `{}`: missing the required keyword argument{} {}",
            self.name(),
            if missing.len() == 1 { "" } else { "s" },
            missing.join(", ")
        )))
    }

    /// `init_value` (a float, or `None`) and `verbose` (a bool), read here
    /// for the same reason as [`Self::required`].
    pub(super) fn scalars(
        &self,
        init_value: Option<&Bound<'_, PyAny>>,
        verbose: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<(Option<f64>, bool)> {
        let kernel = self.name();
        let init_value = match init_value.filter(|v| !v.is_none()) {
            None => None,
            Some(v) => Some(
                v.extract::<f64>()
                    .map_err(|_| args::wrong_type(kernel, "init_value", "a float or None", v))?,
            ),
        };
        let verbose = args::flag(verbose, kernel, "verbose", false)?;
        Ok((init_value, verbose))
    }

    /// A call (`__call__` and `call`).
    pub(super) fn run<'py>(&self, a: CallArgs<'_, 'py>) -> PyResult<Bound<'py, PyList>> {
        if let Some(done) = self.repeat(&a) {
            return done;
        }
        self.general(a)
    }

    /// A call not taken in one pass (`repeat`): every kind of array,
    /// stream and device.
    pub(super) fn general<'py>(&self, a: CallArgs<'_, 'py>) -> PyResult<Bound<'py, PyList>> {
        let py = a.py;
        let kernel = self.name();
        let items = args::items(a.inputs, kernel, &"inputs")?;
        let sources = self.sources(&items, "input")?;
        let out = a
            .out
            .filter(|o| !o.is_none())
            .map(|o| args::items(o, kernel, &"out"))
            .transpose()?;
        let plain = a.stream.is_none_or(|s| s.is_none())
            && a.device.is_none_or(|d| d.is_none())
            && a.init_value.is_none()
            && !a.verbose;
        if plain {
            if let Some(list) = self.torch_call(
                py,
                &sources,
                out.as_ref(),
                a.output_shapes,
                a.output_dtypes,
                a.template,
                a.grid,
                a.threadgroup,
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
        let (stream, torch_stream) = self.stream(py, a.stream, a.device, first, &frame)?;
        let inputs = self.arrays(&sources, "input", &stream, torch_stream.as_ref())?;
        let given = self.given_outputs(a.output_shapes, a.output_dtypes)?;
        // The first input that is a `torch.Tensor` itself (or an
        // `nn.Parameter`): outputs of its dtype and device are made with its
        // `new_empty`. (Only when outputs are made: not for `out=`.)
        let like = match (&out, &frame) {
            (None, Frame::Torch) => sources.iter().find_map(|s| match s {
                Source::Torch(obj, t) if torch::is_plain_tensor(obj) => Some((obj, t)),
                _ => None,
            }),
            _ => None,
        };
        let out_given = out.is_some();
        let (outputs, targets, plan) =
            self.plan(py, given, out, &frame, &stream, torch_stream.as_ref(), like)?;
        let parts = Parts {
            inputs,
            outputs,
            targets,
            template: self.template.parse(a.template, kernel)?,
            grid: self.grid.get(a.grid, kernel, "grid")?,
            threadgroup: self.threadgroup.get(a.threadgroup, kernel, "threadgroup")?,
            init_value: a.init_value,
            shared_memory: self.shared_memory,
            stream,
        };
        if a.verbose {
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
                if out_given {
                    torch::bump_versions(py, &objects)?;
                }
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
}
