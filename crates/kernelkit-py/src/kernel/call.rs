//! One call of a kernel, from its Python arguments to its outputs: a
//! repeated torch layout first (`crate::torch::repeat`), then the torch
//! path (`crate::torch::path`), else the general one (every kind of array,
//! stream and device). `crate::torch` draws the order.

use std::sync::Arc;

use numpy::{PyArrayDescrMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::PyList;
use smallvec::SmallVec;

use super::route::{self, Route};
use super::{Frame, OutputSpec, Parts, Plan, PyKernel, Values};
use crate::args;
use crate::array_args::Source;
use crate::arrays;
use crate::dlpack_outputs::PyArray;
use crate::donation::{self, Aliasing, Names};
use crate::errors::{self, IntoPy};
use crate::torch;
use kernelkit::Array;

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
    /// `donate=`: a dict of output names to input names, or absent.
    pub(crate) donate: Option<&'a Bound<'py, PyAny>>,
    pub(crate) allow_overlap: bool,
    /// A tuned kernel's choice of the launch configuration (its
    /// threadgroup, grid and template values in place of `grid`,
    /// `threadgroup` and `template`), made from the arguments as this
    /// call converts them (`crate::tune`); `None` for a kernel's own call.
    pub(crate) tune: Option<&'a dyn Tune>,
}

/// A launch configuration a tuned kernel chose for a call: its template
/// values, grid and threadgroup, in place of the call's own.
pub(crate) struct Launch {
    pub(crate) template: args::Template,
    pub(crate) grid: [u64; 3],
    pub(crate) threadgroup: [u64; 3],
}

/// A tuned kernel's choice for a call: the launch its memo keeps whole for
/// the call's signature (shared: a warm call copies no list of values),
/// or one made for this call (a grid function's grid).
pub(crate) enum Chosen {
    Kept(Arc<Launch>),
    Made(Launch),
}

impl std::ops::Deref for Chosen {
    type Target = Launch;

    fn deref(&self) -> &Launch {
        match self {
            Chosen::Kept(launch) => launch,
            Chosen::Made(launch) => launch,
        }
    }
}

/// A tuned kernel's part in a call: the template values, grid and
/// threadgroup of the configuration chosen for the call's converted
/// inputs, outputs and stream (`crate::tune::hook`).
pub(crate) trait Tune {
    /// The general path's: chooses (tuning the key if no tier has it).
    fn launch_of(
        &self,
        kernel: &PyKernel,
        inputs: &[Array],
        outputs: &[OutputSpec],
        stream: &kernelkit::Stream,
        init_value: Option<f64>,
    ) -> PyResult<Chosen>;

    /// The same for a call the one-pass torch route takes, from its
    /// tensors (`inputs`, and `outputs`: `out=`'s when `out_given`, else
    /// the donated inputs), read in place through `shim`; `None` when the
    /// tuned kernel does not remember the call (or anything would be an
    /// error): the call is then taken the slow way.
    fn torch_launch_of(
        &self,
        kernel: &PyKernel,
        shim: &crate::ffi::torch_shim::Shim,
        inputs: &[Bound<'_, PyAny>],
        outputs: &[Bound<'_, PyAny>],
        out_given: bool,
    ) -> Option<Chosen>;

    /// The same for a call the torch path takes, from its tensors as it
    /// read them, on the GPU `place`; `None` when the tuned kernel does not
    /// remember the call (the general path then chooses).
    fn torch_read_launch_of(
        &self,
        kernel: &PyKernel,
        inputs: &[&torch::Tensor],
        outputs: &[&torch::Tensor],
        place: crate::device::Place,
    ) -> Option<PyResult<Chosen>>;

    /// The tuned kernel's kept launches: each the launch of the chosen
    /// configuration, under the call's own grid and template values
    /// ([`Tune::call_shape`]) with threadgroup `[0, 0, 0]`.
    fn kept(&self) -> &crate::rebound::Rebound;

    /// The call's own grid (`[0, 0, 0]` when no configuration takes it)
    /// and template values, which key [`Tune::kept`]; `None` where reading
    /// them fails (the slow route raises the error).
    fn call_shape(&self, kernel: &PyKernel) -> Option<([u64; 3], args::Template)>;
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
    pub(crate) fn scalars(
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
    pub(crate) fn run<'py>(&self, a: CallArgs<'_, 'py>) -> PyResult<Bound<'py, PyList>> {
        if let Some(done) = self.repeat(&a) {
            return done;
        }
        self.general(a)
    }

    /// A call not taken in one pass (`repeat`): every kind of array,
    /// stream and device.
    pub(crate) fn general<'py>(&self, a: CallArgs<'_, 'py>) -> PyResult<Bound<'py, PyList>> {
        let py = a.py;
        let kernel = self.name();
        route::note(Route::General);
        let items = args::items(a.inputs, kernel, &"inputs")?;
        let sources = self.sources(&items, "input")?;
        let out = a
            .out
            .filter(|o| !o.is_none())
            .map(|o| args::items(o, kernel, &"out"))
            .transpose()?;
        let aliasing = self.aliasing(a.donate, a.allow_overlap)?;
        let out = self.donated_outputs(out, &items, &aliasing)?;
        self.check_donated(&sources, &aliasing)?;
        let plain = a.device.is_none_or(|d| d.is_none()) && a.init_value.is_none() && !a.verbose;
        if plain {
            if let Some(list) = self.torch_call(
                py,
                &sources,
                out.as_ref(),
                a.output_shapes,
                a.output_dtypes,
                (a.template, a.grid, a.threadgroup),
                a.tune,
                a.stream,
                &aliasing,
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
        if stream.device().kind() == kernelkit::DeviceKind::Cuda {
            for (o, i) in aliasing
                .donated
                .iter()
                .map(|&(o, i)| (usize::from(o), usize::from(i)))
            {
                if matches!(sources[i], Source::NumPy(_)) {
                    return Err(self.donation_refused(
                        o,
                        i,
                        "it is a NumPy array and the call runs on a GPU, so kernelkit would \
                         copy it there and write the copy",
                    ));
                }
            }
        }
        let inputs = self.arrays(&sources, "input", &stream, torch_stream.as_ref())?;
        let given = self.given_outputs(a.output_shapes, a.output_dtypes)?;
        if let Some(specs) = &given {
            self.check_donated_specs(specs, &inputs, &aliasing)?;
        }
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
        let (template, grid, threadgroup) = match a.tune {
            Some(tune) => match tune.launch_of(self, &inputs, &outputs, &stream, a.init_value)? {
                Chosen::Kept(launch) => {
                    let (grid, threadgroup) = (launch.grid, launch.threadgroup);
                    (Values::Kept(launch), grid, threadgroup)
                }
                Chosen::Made(launch) => (
                    Values::Parsed(launch.template),
                    launch.grid,
                    launch.threadgroup,
                ),
            },
            None => (
                Values::Parsed(self.template.parse(a.template, kernel)?),
                self.grid.get(a.grid, kernel, "grid")?,
                self.threadgroup.get(a.threadgroup, kernel, "threadgroup")?,
            ),
        };
        let parts = Parts {
            inputs,
            outputs,
            targets,
            template,
            grid,
            threadgroup,
            init_value: a.init_value,
            shared_memory: self.shared_memory,
            stream,
            aliasing,
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

    /// `donate=` and `allow_overlap=` as positions (the map remembered, see
    /// `crate::donation`).
    pub(crate) fn aliasing(
        &self,
        donate: Option<&Bound<'_, PyAny>>,
        allow_overlap: bool,
    ) -> PyResult<Aliasing> {
        let spec = self.kernel.spec();
        let names = Names {
            kernel: self.name(),
            inputs: spec.input_names(),
            outputs: spec.output_names(),
        };
        let mut parsed = false;
        let donated = self.donation.parse(donate, &names, &mut parsed)?;
        if parsed {
            route::note(Route::Parsed);
        }
        Ok(Aliasing {
            allow_overlap,
            donated,
        })
    }

    /// A `DonationError` for donated output `o` and input `i`.
    #[cold]
    pub(crate) fn donation_refused(&self, o: usize, i: usize, reason: &str) -> PyErr {
        let spec = self.kernel.spec();
        donation::refused(
            self.name(),
            &spec.output_names()[o],
            &spec.input_names()[i],
            reason,
        )
    }

    /// The arrays a call's outputs are written into once donations are
    /// counted: each donated output is its input's own object (in `out=`,
    /// its place must hold that object or `None`); the others come from
    /// `out=`, which a call that donates only some outputs must give.
    pub(crate) fn donated_outputs<'py>(
        &self,
        out: Option<SmallVec<[Bound<'py, PyAny>; 4]>>,
        inputs: &[Bound<'py, PyAny>],
        aliasing: &Aliasing,
    ) -> PyResult<Option<SmallVec<[Bound<'py, PyAny>; 4]>>> {
        if aliasing.donated.is_empty() {
            return Ok(out);
        }
        let spec = self.kernel.spec();
        let n = spec.output_names().len();
        if let Some(&(o, i)) = aliasing
            .donated
            .iter()
            .find(|(_, i)| usize::from(*i) >= inputs.len())
        {
            let _ = o;
            return Err(errors::call(format!(
                "kernel `{}`: input `{}` is donated, but the call gives {} input(s)",
                self.name(),
                spec.input_names()[usize::from(i)],
                inputs.len()
            )));
        }
        let mut out = match out {
            Some(out) => out,
            None if aliasing.donated.len() == n => SmallVec::new(),
            None => {
                let rest: Vec<String> = (0..n)
                    .filter(|&o| aliasing.input_of(o).is_none())
                    .map(|o| format!("`{}`", spec.output_names()[o]))
                    .collect();
                return Err(errors::call(format!(
                    "kernel `{}`: output(s) {} are not donated: give out= for every output \
                     (a donated output's place holding its input or None)",
                    self.name(),
                    rest.join(", ")
                )));
            }
        };
        if out.is_empty() {
            for o in 0..n {
                let i = aliasing.input_of(o).expect("every output is donated");
                out.push(inputs[i].clone());
            }
            return Ok(Some(out));
        }
        if out.len() != n {
            // The count's error is `plan`'s to word.
            return Ok(Some(out));
        }
        for &(o, i) in &aliasing.donated {
            let (o, i) = (usize::from(o), usize::from(i));
            if !out[o].is_none() && !out[o].is(&inputs[i]) {
                return Err(self.donation_refused(
                    o,
                    i,
                    "out= holds another array in its place (give the input itself, or None)",
                ));
            }
            out[o] = inputs[i].clone();
        }
        Ok(Some(out))
    }

    /// Refuses donated inputs kernelkit would not write in place: a
    /// Python scalar, a read-only NumPy array, a NumPy array it would
    /// copy first (byte-swapped, strides not whole elements, not
    /// row-contiguous). The checks of every kind of array's layout and
    /// writability follow in the library's own (`Call::donate`).
    fn check_donated(&self, sources: &[Source<'_>], aliasing: &Aliasing) -> PyResult<()> {
        for &(o, i) in &aliasing.donated {
            let (o, i) = (usize::from(o), usize::from(i));
            let reason = match &sources[i] {
                Source::Scalar(..) => "it is a Python scalar, which has no buffer",
                Source::NumPy(a) => {
                    let size = a.dtype().itemsize() as isize;
                    if !crate::ffi::numpy::is_writeable(a) {
                        "it is read-only"
                    } else if a.dtype().is_native_byteorder() == Some(false)
                        || a.strides().iter().any(|&b| b % size != 0)
                    {
                        "kernelkit would copy it first (its byte order or strides are not the \
                         machine's elements)"
                    } else if !a.is_c_contiguous() {
                        if self.kernel.spec().ensure_row_contiguous() {
                            "it is not row-contiguous, so kernelkit would copy it first \
                             (ensure_row_contiguous) and write the copy"
                        } else {
                            "it is not row-contiguous; a kernel writes an output as a dense array"
                        }
                    } else {
                        continue;
                    }
                }
                _ => continue,
            };
            return Err(self.donation_refused(o, i, reason));
        }
        Ok(())
    }

    /// Refuses `output_shapes`/`output_dtypes` that are not a donated
    /// output's input's shape and dtype.
    pub(crate) fn check_donated_specs(
        &self,
        specs: &[OutputSpec],
        inputs: &[Array],
        aliasing: &Aliasing,
    ) -> PyResult<()> {
        for &(o, i) in &aliasing.donated {
            let (o, i) = (usize::from(o), usize::from(i));
            let (Some((shape, dtype)), Some(input)) = (specs.get(o), inputs.get(i)) else {
                continue;
            };
            let same_shape = shape.len() == input.ndim()
                && shape
                    .iter()
                    .zip(input.shape())
                    .all(|(&a, &b)| a == b as i64);
            if !same_shape || *dtype != input.dtype() {
                return Err(self.donation_refused(
                    o,
                    i,
                    &format!(
                        "the output is asked as {:?} {} but the input is {:?} {}",
                        shape.as_slice(),
                        dtype,
                        input.shape(),
                        input.dtype()
                    ),
                ));
            }
        }
        Ok(())
    }
}
