//! `kernelkit.autotune`'s callable: a kernel with launch configurations to
//! choose from, called with the kernel's own signature.
//!
//! A call runs the kernel's own routes, the routes the same untuned call
//! takes (`kernelkit._testing.call_routes()`), with the tuned kernel's part
//! in them ([`hook`]): each route, once it has read or converted the
//! arguments, asks for the configuration from what it read, through this
//! object's memo ([`memo`]: the bytes of what the tuning key depends on,
//! compared with the remembered ones); on a miss the general path asks the
//! library ([`choose`]: `Tuning::best`, which times the configurations
//! once per key unless a cache tier has the record).
//!
//! - a call no torch route takes (NumPy arrays, CuPy, scalars) goes to the
//!   kernel's general path, which applies the configuration's parsed
//!   threadgroup, grid and template values;
//! - a call on torch tensors tries the kernel's one-pass route (`out=`),
//!   then its torch path: both look first for the launch this object kept
//!   under the call's own grid, template values and tensors' layouts (as
//!   the untuned call looks for its own), else find the configuration from
//!   the tensors' layouts and the kernel's launch for it, and keep that
//!   launch under the call's arguments.
//!
//! The grid is the configuration's fixed one, or the grid function's for
//! this call, else the call's. `best` reads the call's arguments from
//! their objects ([`PyTuned::choice`]). The package's `Autotuned`
//! (`kernelkit/_autotune.py`) is, from Python 3.12, a `functools.partial`
//! over this object's vectorcall entry ([`entry`]), as a kernel is over
//! the kernel's.

use std::sync::Arc;

use kernelkit::{TemplateArg, TuneConfig, Tuning};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyList, PyTuple};
use smallvec::SmallVec;

use crate::args::{self, DimsMemo, OutputSpec, OutputsMemo, TemplateMemo};
use crate::array_args::Source;
use crate::arrays::Named;
use crate::device::place_of;
use crate::errors;
use crate::kernel::route::{self, Route};
use crate::kernel::{CallArgs, PyKernel};
use crate::rebound::Rebound;

mod choose;
mod entry;
mod hook;
mod memo;

pub(crate) use entry::_tuned_entry;
use memo::{Entry, Memo, Sig};

/// One configuration as the kernel is called with it.
struct Applied {
    /// The configuration as the user gave it (a copy): what `best`
    /// returns and the grid function is given.
    config: Py<PyDict>,
    /// The fixed grid, a 3-tuple.
    grid: Option<Py<PyAny>>,
    /// The template values, as `(name, value)` tuples.
    template: Vec<Py<PyAny>>,
    /// The same, parsed, and the threadgroup and fixed grid's extents:
    /// what the general path's choice ([`hook`]) applies.
    values: args::Template,
    threadgroup_dims: [u64; 3],
    grid_dims: Option<[u64; 3]>,
}

/// A kernel with launch configurations to choose from (see the module).
#[pyclass(frozen, module = "kernelkit", name = "_Tuned")]
pub(crate) struct PyTuned {
    /// The kernel as given (the package's `Kernel`, or the extension's).
    kernel: Py<PyAny>,
    native: Py<PyKernel>,
    tuning: Tuning,
    configs: Vec<Applied>,
    grid_fn: Option<Py<PyAny>>,
    key_fn: Option<Py<PyAny>>,
    /// Whether a configuration runs with the call's grid (none fixed, no
    /// grid function): the call's grid is then part of the memo's key.
    takes_call_grid: bool,
    /// The calls' own template values, outputs and grid, parsed through
    /// memos of this object's (the kernel's keep what it is called with).
    template: TemplateMemo,
    outputs: OutputsMemo,
    grid: DimsMemo,
    /// The grid function's last result, parsed.
    fn_grid: DimsMemo,
    memo: Memo,
    /// The launches of chosen configurations, kept under the calls' own
    /// arguments by the torch routes (see `hook`).
    kept: Rebound,
}

/// A tuned call's arguments that choose its configuration.
pub(crate) struct Given<'a, 'py> {
    pub(crate) inputs: &'a Bound<'py, PyAny>,
    pub(crate) grid: Option<&'a Bound<'py, PyAny>>,
    pub(crate) output_shapes: Option<&'a Bound<'py, PyAny>>,
    pub(crate) output_dtypes: Option<&'a Bound<'py, PyAny>>,
    pub(crate) template: Option<&'a Bound<'py, PyAny>>,
    pub(crate) init_value: Option<f64>,
    pub(crate) stream: Option<&'a Bound<'py, PyAny>>,
    pub(crate) device: Option<&'a Bound<'py, PyAny>>,
    pub(crate) out: Option<&'a Bound<'py, PyAny>>,
}

/// A template value from Python: a bool, an int or a dtype.
fn template_value(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<TemplateArg> {
    if obj.is_instance_of::<PyBool>() {
        return Ok(TemplateArg::Bool(obj.extract()?));
    }
    if let Ok(v) = obj.extract::<i64>() {
        return i32::try_from(v).map(TemplateArg::Int).map_err(|_| {
            errors::call(format!(
                "autotune: template value `{name}` = {v} does not fit a 32-bit int"
            ))
        });
    }
    Ok(TemplateArg::DType(args::dtype(
        obj,
        "autotune",
        &format!("template value `{name}`"),
    )?))
}

/// A 3-tuple of `dims`.
fn tuple3(py: Python<'_>, dims: [u64; 3]) -> PyResult<Py<PyAny>> {
    Ok(PyTuple::new(py, dims)?.into_any().unbind())
}

/// One configuration as Python gives it: the dict, its threadgroup,
/// template pairs and fixed grid.
type ConfigArg<'py> = (
    Bound<'py, PyDict>,
    Bound<'py, PyAny>,
    Vec<(Bound<'py, PyAny>, Bound<'py, PyAny>)>,
    Option<Bound<'py, PyAny>>,
);

impl PyTuned {
    fn name(&self) -> &str {
        self.native.get().name()
    }

    /// The configuration and template of a call (see [`memo`]).
    fn choice(&self, py: Python<'_>, g: &Given<'_, '_>) -> PyResult<(usize, Option<Py<PyAny>>)> {
        let kernel = self.native.get();
        let name = kernel.name();
        let spec = kernel.kernel.spec();
        let items = args::items(g.inputs, name, &"inputs")?;
        let mut sources: SmallVec<[Source<'_>; 4]> = SmallVec::new();
        let mut sig = Sig::new();
        let mut known = true;
        for (index, obj) in items.iter().enumerate() {
            let named = Named {
                kernel: name,
                role: "input",
                names: spec.input_names(),
                index,
            };
            let source = Source::of(obj, &named)?;
            known &= memo::push_source(&mut sig, &source);
            sources.push(source);
        }
        let key = match &self.key_fn {
            Some(f) => {
                let key = f.bind(py).call1((g.inputs,))?.repr()?.to_string();
                memo::push_key(&mut sig, &key);
                Some(key)
            }
            None => None,
        };
        let given = kernel.given_outputs_in(&self.outputs, g.output_shapes, g.output_dtypes)?;
        let out = g.out.map(|o| args::items(o, name, &"out")).transpose()?;
        match (&given, &out) {
            (Some(specs), _) => memo::push_outputs(&mut sig, specs),
            (None, Some(out)) => {
                for (index, obj) in out.iter().enumerate() {
                    if obj.is_none() {
                        sig.push(b'-');
                        continue;
                    }
                    let named = Named {
                        kernel: name,
                        role: "output",
                        names: spec.output_names(),
                        index,
                    };
                    known &= memo::push_source(&mut sig, &Source::of(obj, &named)?);
                }
            }
            (None, None) => return Err(choose::no_outputs(name)),
        }
        let template = memo::push_template(&mut sig, &self.template, g.template, name)?;
        let call_grid = match g.grid.filter(|_| self.takes_call_grid) {
            Some(grid) => Some(self.grid.get(grid, name, "grid")?),
            None => None,
        };
        memo::push_dims(&mut sig, call_grid);
        let device = g.device.map(|d| place_of(d, &"device")).transpose()?;
        memo::push_device(&mut sig, device, g.stream);
        if known {
            if let Some(found) = self.memo.find(py, &sig) {
                return Ok(found);
            }
        }
        self.cold(py, g, sig, known, &sources, given, out, template, key)
    }

    /// A call not in the memo: the library chooses, and the choice is
    /// remembered.
    #[cold]
    #[allow(clippy::too_many_arguments)]
    fn cold(
        &self,
        py: Python<'_>,
        g: &Given<'_, '_>,
        sig: Sig,
        known: bool,
        sources: &[Source<'_>],
        given: Option<SmallVec<[OutputSpec; 2]>>,
        out: Option<SmallVec<[Bound<'_, PyAny>; 4]>>,
        template: args::Template,
        key: Option<String>,
    ) -> PyResult<(usize, Option<Py<PyAny>>)> {
        let kernel = self.native.get();
        let name = kernel.name();
        let outputs = match (given, out) {
            (Some(specs), _) => specs,
            (None, Some(out)) => {
                // The shapes and dtypes of the `out=` arrays.
                let mut specs = SmallVec::new();
                for (i, o) in out.iter().enumerate() {
                    let named = Named {
                        kernel: name,
                        role: "output",
                        names: kernel.kernel.spec().output_names(),
                        index: i,
                    };
                    specs.push((
                        args::shape(&o.getattr("shape")?, name, &named)?,
                        args::dtype(&o.getattr("dtype")?, name, &named)?,
                    ));
                }
                specs
            }
            (None, None) => return Err(choose::no_outputs(name)),
        };
        let call_grid = g
            .grid
            .map(|grid| args::dims3(grid, name, "grid"))
            .transpose()?;
        let grids = self.grids(py, g.inputs, call_grid)?;
        let (stream, arrays) = choose::arrays_of(py, kernel, sources, g.stream, g.device)?;
        let index = choose::choose(
            py,
            &self.tuning,
            &kernel.kernel,
            &arrays,
            &stream,
            choose::Cold {
                grids,
                outputs: &outputs,
                template: &template,
                init_value: g.init_value,
                key,
            },
        )?;
        // The call's own template values, then the configuration's.
        let mut combined: Vec<Bound<'_, PyAny>> = Vec::new();
        if let Some(t) = g.template {
            for (n, v) in args::pairs(t, name)? {
                combined.push(PyTuple::new(py, [n, v])?.into_any());
            }
        }
        for pair in &self.configs[index].template {
            combined.push(pair.bind(py).clone());
        }
        let combined = if combined.is_empty() {
            None
        } else {
            Some(PyList::new(py, combined)?.into_any().unbind())
        };
        if known {
            self.memo.keep(Entry {
                sig,
                _held: g.stream.iter().map(|s| (*s).clone().unbind()).collect(),
                index,
                template: combined.as_ref().map(|t| t.clone_ref(py)),
                launch: None,
            });
        }
        Ok((index, combined))
    }

    /// Each configuration's grid for a call on `inputs` (`None`: the
    /// call's, `call_grid`): fixed, or the grid function's.
    fn grids(
        &self,
        py: Python<'_>,
        inputs: &Bound<'_, PyAny>,
        call_grid: Option<[u64; 3]>,
    ) -> PyResult<Vec<Option<[u64; 3]>>> {
        let name = self.name();
        let mut grids = Vec::with_capacity(self.configs.len());
        for c in &self.configs {
            grids.push(match (c.grid_dims, &self.grid_fn) {
                (Some(fixed), _) => Some(fixed),
                (None, Some(f)) => {
                    let grid = f.bind(py).call1((c.config.bind(py), inputs))?;
                    Some(args::dims3(&padded(&grid, name)?, name, "grid")?)
                }
                (None, None) => call_grid,
            });
        }
        Ok(grids)
    }

    /// The error of a call without a grid whose configuration `index`
    /// takes the call's.
    #[cold]
    fn no_grid(&self, index: usize) -> PyErr {
        errors::argument_type(format!(
            "kernel `{}`: missing the required keyword argument `grid` (configuration {index} \
             fixes none and autotune has no grid function)",
            self.name()
        ))
    }
}

/// An optional argument, unless given as `None`.
fn some<'a, 'py>(o: Option<&'a Bound<'py, PyAny>>) -> Option<&'a Bound<'py, PyAny>> {
    o.filter(|v| !v.is_none())
}

/// A grid function's result as 3 extents: a list or tuple of 3 as it is
/// (the kernel's grid memo reads it), a shorter one padded with 1s.
fn padded<'py>(grid: &Bound<'py, PyAny>, kernel: &str) -> PyResult<Bound<'py, PyAny>> {
    if grid.cast::<PyTuple>().is_ok_and(|t| t.len() == 3) {
        return Ok(grid.clone());
    }
    let items = args::items(grid, kernel, &"the grid function's grid")?;
    if items.len() >= 3 {
        return Ok(grid.clone());
    }
    let py = grid.py();
    let one = 1u64.into_pyobject(py)?.into_any();
    let mut dims = items;
    while dims.len() < 3 {
        dims.push(one.clone());
    }
    Ok(PyTuple::new(py, dims)?.into_any())
}

#[pymethods]
impl PyTuned {
    /// `kernel`: the kernel as given, `native` the extension's; `configs`:
    /// per configuration `(dict, threadgroup, [(name, value), ...], grid
    /// or None)`; `grid(config, inputs)` and `key(inputs)` or `None`.
    #[new]
    #[pyo3(signature = (kernel, native, configs, grid=None, key=None))]
    fn new(
        py: Python<'_>,
        kernel: Py<PyAny>,
        native: Py<PyKernel>,
        configs: Vec<ConfigArg<'_>>,
        grid: Option<Py<PyAny>>,
        key: Option<Py<PyAny>>,
    ) -> PyResult<PyTuned> {
        let grid = grid.filter(|g| !g.is_none(py));
        let key = key.filter(|k| !k.is_none(py));
        let mut list = Vec::with_capacity(configs.len());
        let mut applied = Vec::with_capacity(configs.len());
        for (dict, threadgroup, template, fixed) in &configs {
            let threadgroup = args::dims3(threadgroup, "autotune", "threadgroup")?;
            let mut config = TuneConfig::new(threadgroup);
            let fixed = match fixed.as_ref().filter(|g| !g.is_none()) {
                Some(g) => {
                    let dims = args::dims3(g, "autotune", "grid")?;
                    config = config.grid(dims);
                    Some(tuple3(py, dims)?)
                }
                None => None,
            };
            let mut pairs = Vec::with_capacity(template.len());
            let mut values = args::Template::new();
            for (name, value) in template {
                let text: String = name.extract()?;
                let parsed = template_value(value, &text)?;
                config = config.template(text.clone(), parsed);
                pairs.push(PyTuple::new(py, [name, value])?.into_any().unbind());
                values.push((Arc::from(text.as_str()), parsed));
            }
            let grid_dims = config.fixed_grid();
            list.push(config);
            applied.push(Applied {
                config: dict.clone().unbind(),
                grid: fixed,
                template: pairs,
                values,
                threadgroup_dims: threadgroup,
                grid_dims,
            });
        }
        let takes_call_grid = grid.is_none() && applied.iter().any(|a| a.grid.is_none());
        Ok(PyTuned {
            kernel,
            native,
            tuning: choose::tuning(list, key.is_some()),
            configs: applied,
            grid_fn: grid,
            key_fn: key,
            takes_call_grid,
            template: TemplateMemo::default(),
            outputs: OutputsMemo::default(),
            grid: DimsMemo::default(),
            fn_grid: DimsMemo::default(),
            memo: Memo::default(),
            kept: Rebound::default(),
        })
    }

    /// Runs the kernel with the configuration chosen for this call
    /// (tuning its key first if no cache tier has a record): the kernel's
    /// call signature; `threadgroup` is the configuration's, `grid` the
    /// configuration's or the grid function's when there is one.
    #[pyo3(signature = (*, inputs = None, grid = None, threadgroup = None, output_shapes = None, output_dtypes = None, template = None, init_value = None, verbose = None, stream = None, device = None, out = None, donate = None, allow_overlap = None))]
    #[allow(clippy::too_many_arguments)] // the kernel's signature
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
        let _ = threadgroup; // the configuration's
        let kernel = self.native.get();
        let inputs = self.inputs(inputs)?;
        let (init_value, verbose) = kernel.scalars(init_value, verbose)?;
        let allow_overlap = args::flag(allow_overlap, kernel.name(), "allow_overlap", false)?;
        let given = Given {
            inputs,
            grid: some(grid),
            output_shapes: some(output_shapes),
            output_dtypes: some(output_dtypes),
            template: some(template),
            init_value,
            stream: some(stream),
            device: some(device),
            out: some(out),
        };
        let none = py.None().into_bound(py);
        let hook = hook::Hook {
            tuned: self,
            given: &given,
        };
        kernel.run(CallArgs {
            py,
            inputs,
            grid: &none,
            threadgroup: &none,
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
            tune: Some(&hook),
        })
    }

    /// The same as [`Self::call`] (Python before 3.12 calls the object).
    #[pyo3(signature = (*, inputs = None, grid = None, threadgroup = None, output_shapes = None, output_dtypes = None, template = None, init_value = None, verbose = None, stream = None, device = None, out = None, donate = None, allow_overlap = None))]
    #[allow(clippy::too_many_arguments)] // the kernel's signature
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
        self.call(
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
        )
    }

    /// The configuration chosen for a call with these arguments (a copy
    /// of the one given), without running the kernel (tuning its key
    /// first if no cache tier has a record).
    #[pyo3(signature = (*, inputs = None, grid = None, threadgroup = None, output_shapes = None, output_dtypes = None, template = None, init_value = None, verbose = None, stream = None, device = None, out = None, donate = None, allow_overlap = None))]
    #[allow(clippy::too_many_arguments)] // the kernel's signature
    fn best<'py>(
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
    ) -> PyResult<Bound<'py, PyDict>> {
        let _ = (threadgroup, verbose, donate, allow_overlap);
        let kernel = self.native.get();
        let (init_value, _) = kernel.scalars(init_value, None)?;
        let given = Given {
            inputs: self.inputs(inputs)?,
            grid: some(grid),
            output_shapes: some(output_shapes),
            output_dtypes: some(output_dtypes),
            template: some(template),
            init_value,
            stream: some(stream),
            device: some(device),
            out: some(out),
        };
        let (index, _) = self.choice(py, &given)?;
        self.configs[index].config.bind(py).copy()
    }

    /// The configurations, as given (copies).
    #[getter]
    fn configs<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let copies = self
            .configs
            .iter()
            .map(|c| c.config.bind(py).copy())
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, copies)
    }

    /// The kernel tuned, as given.
    #[getter]
    fn kernel(&self, py: Python<'_>) -> Py<PyAny> {
        self.kernel.clone_ref(py)
    }

    /// The extension's kernel.
    #[getter]
    fn native(&self, py: Python<'_>) -> Py<PyKernel> {
        self.native.clone_ref(py)
    }

    /// The kernel's name.
    #[getter(name)]
    fn py_name(&self) -> &str {
        self.name()
    }

    /// The kernel's input names.
    #[getter]
    fn input_names(&self) -> Vec<String> {
        self.native.get().kernel.spec().input_names().to_vec()
    }

    /// The kernel's output names.
    #[getter]
    fn output_names(&self) -> Vec<String> {
        self.native.get().kernel.spec().output_names().to_vec()
    }

    /// Each configuration's canonical text (what tuning records name).
    fn config_ids(&self) -> Vec<String> {
        self.tuning
            .configs()
            .iter()
            .map(|c| c.id().to_string())
            .collect()
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "autotune({}, {} configs)",
            self.kernel.bind(py).repr()?,
            self.configs.len()
        ))
    }
}

impl PyTuned {
    /// `inputs=`, required.
    fn inputs<'a, 'py>(
        &self,
        inputs: Option<&'a Bound<'py, PyAny>>,
    ) -> PyResult<&'a Bound<'py, PyAny>> {
        inputs.filter(|i| !i.is_none()).ok_or_else(|| {
            errors::argument_type(format!(
                "kernel `{}`: missing the required keyword argument `inputs`",
                self.name()
            ))
        })
    }
}
