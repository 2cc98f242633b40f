//! The native part of `kernelkit.autotune` (`python/kernelkit/_autotune.py`):
//! a [`PyTuner`] holds the configurations as a `kernelkit::Tuning` and
//! chooses one for a call's arguments through the library's engine, so
//! that the choice is timed on the call's device and stream into scratch
//! outputs, and kept in every cache tier the device has (memory, the disk
//! store, the fleet tier; bundles carry it).
//!
//! Choosing converts the call's inputs and output shapes as the kernel's
//! own call does, builds the library call, and asks `Tuning::best` (which
//! times only when no tier has a record). The grid of each configuration
//! for this call, and the user's key, are computed in Python (they are
//! Python callables of the Python inputs) and handed to the engine's grid
//! and key functions through this thread's [`CALL`] slot, set only while
//! one choice runs. The package then calls the kernel with the chosen
//! threadgroup, template values and grid: the call route is the kernel's
//! own.

use std::cell::RefCell;

use kernelkit::{TemplateArg, TuneConfig, Tuning};
use pyo3::prelude::*;
use pyo3::types::PyBool;

use crate::args;
use crate::array_args::Source;
use crate::arrays::Named;
use crate::device::{place_of, Place, PyStream};
use crate::errors::{self, IntoPy};
use crate::kernel::PyKernel;

/// What the engine's grid and key functions read during one choice.
#[derive(Default)]
struct CallSlot {
    /// Per configuration (by index), its grid for this call, if computed.
    grids: Vec<Option<[u64; 3]>>,
    /// The user's key for this call, if the tuner has a key function.
    key: String,
}

thread_local! {
    static CALL: RefCell<CallSlot> = RefCell::new(CallSlot::default());
}

/// One configuration as Python gives it: threadgroup, template pairs,
/// fixed grid.
type ConfigArg<'py> = (
    Bound<'py, PyAny>,
    Vec<(String, Bound<'py, PyAny>)>,
    Option<Bound<'py, PyAny>>,
);

/// Configurations to choose from for one kernel, and what the choice of
/// one call depends on.
#[pyclass(frozen, module = "kernelkit", name = "_Tuner")]
pub(crate) struct PyTuner {
    tuning: Tuning,
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

#[pymethods]
impl PyTuner {
    /// `configs`: a list of `(threadgroup, [(name, value), ...], grid or
    /// None)`; `keyed`: whether calls give their own key.
    #[new]
    fn new(configs: Vec<ConfigArg<'_>>, keyed: bool) -> PyResult<PyTuner> {
        let mut list = Vec::with_capacity(configs.len());
        for (threadgroup, template, grid) in &configs {
            let mut config = TuneConfig::new(args::dims3(threadgroup, "autotune", "threadgroup")?);
            if let Some(grid) = grid.as_ref().filter(|g| !g.is_none()) {
                config = config.grid(args::dims3(grid, "autotune", "grid")?);
            }
            for (name, value) in template {
                config = config.template(name.clone(), template_value(value, name)?);
            }
            list.push(config);
        }
        let ids: Vec<String> = list.iter().map(|c| c.id().to_string()).collect();
        let mut tuning = Tuning::new(list).grid_fn(move |config, _inputs| {
            let index = ids.iter().position(|id| id == config.id());
            CALL.with(|slot| {
                index
                    .and_then(|i| slot.borrow().grids.get(i).copied().flatten())
                    .unwrap_or([0, 0, 0])
            })
        });
        if keyed {
            tuning = tuning.key_fn(|_| CALL.with(|slot| slot.borrow().key.clone()));
        }
        Ok(PyTuner { tuning })
    }

    /// The index of the configuration chosen for a call of `kernel` with
    /// these arguments (tuning its key first if no cache tier has a
    /// record). `grids`: each configuration's grid for this call (`None`:
    /// the call's `grid`); `key`: the user's key, if the tuner is keyed.
    #[pyo3(signature = (kernel, *, inputs, grids, grid=None, output_shapes=None, output_dtypes=None, template=None, init_value=None, stream=None, device=None, key=None))]
    #[allow(clippy::too_many_arguments)]
    fn choose(
        &self,
        py: Python<'_>,
        kernel: PyRef<'_, PyKernel>,
        inputs: &Bound<'_, PyAny>,
        grids: Vec<Option<Bound<'_, PyAny>>>,
        grid: Option<&Bound<'_, PyAny>>,
        output_shapes: Option<&Bound<'_, PyAny>>,
        output_dtypes: Option<&Bound<'_, PyAny>>,
        template: Option<&Bound<'_, PyAny>>,
        init_value: Option<f64>,
        stream: Option<&Bound<'_, PyAny>>,
        device: Option<&Bound<'_, PyAny>>,
        key: Option<String>,
    ) -> PyResult<usize> {
        let name = kernel.name().to_string();
        let items = args::items(inputs, &name, &"inputs")?;
        let names = kernel.kernel.spec().input_names();
        let sources: Vec<Source<'_>> = items
            .iter()
            .enumerate()
            .map(|(index, obj)| {
                Source::of(
                    obj,
                    &Named {
                        kernel: &name,
                        role: "input",
                        names,
                        index,
                    },
                )
            })
            .collect::<PyResult<_>>()?;
        let stream = match (
            stream.filter(|s| !s.is_none()),
            device.filter(|d| !d.is_none()),
        ) {
            (Some(s), _) => s.cast::<PyStream>()?.get().stream()?.clone(),
            (None, Some(d)) => place_of(d, &"device")?.open(py)?.default_stream().clone(),
            (None, None) => {
                let place = sources.iter().find_map(|s| s.place()).unwrap_or(
                    match kernel.kernel.spec().language() {
                        kernelkit::BodyLanguage::Cuda => Place::Cuda(0),
                        _ => Place::Cpu,
                    },
                );
                place.open(py)?.default_stream().clone()
            }
        };
        let arrays = kernel.arrays(&sources, "input", &stream, None)?;
        let outputs = kernel
            .given_outputs(output_shapes, output_dtypes)?
            .ok_or_else(|| {
                errors::call(format!(
                    "kernel `{name}`: autotune needs output_shapes and output_dtypes (or out=)"
                ))
            })?;
        let template = kernel.template.parse(template, &name)?;
        let call_grid = grid
            .filter(|g| !g.is_none())
            .map(|g| args::dims3(g, &name, "grid"))
            .transpose()?;
        let mut per_config: Vec<Option<[u64; 3]>> = Vec::with_capacity(grids.len());
        for g in &grids {
            per_config.push(match g.as_ref().filter(|g| !g.is_none()) {
                Some(g) => Some(args::dims3(g, &name, "grid")?),
                None => call_grid,
            });
        }
        let tuning = &self.tuning;
        let native: &kernelkit::Kernel = &kernel.kernel;
        let (arrays, outputs, template, stream) = (&arrays, &outputs, &template, &stream);
        let chosen = py.detach(move || {
            CALL.with(|slot| {
                *slot.borrow_mut() = CallSlot {
                    grids: per_config,
                    key: key.unwrap_or_default(),
                }
            });
            let mut call = native.call(arrays.iter()).on(stream);
            for (shape, dtype) in outputs {
                call = call.output(shape.iter().copied(), *dtype);
            }
            for (n, v) in template {
                call = call.template(&**n, *v);
            }
            if let Some(v) = init_value {
                call = call.init_value(v);
            }
            let best = tuning.best(&call).map(|c| c.id().to_string());
            CALL.with(|slot| *slot.borrow_mut() = CallSlot::default());
            best
        });
        let chosen = chosen.py_err()?;
        Ok(self
            .tuning
            .configs()
            .iter()
            .position(|c| c.id() == chosen)
            .unwrap_or(0))
    }

    /// Each configuration's canonical text (what tuning records name).
    fn config_ids(&self) -> Vec<String> {
        self.tuning
            .configs()
            .iter()
            .map(|c| c.id().to_string())
            .collect()
    }
}
