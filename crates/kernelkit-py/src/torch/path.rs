//! The torch path of a call: `torch.Tensor`s (and `nn.Parameter`s) on one
//! GPU, on torch's current stream there, launched through the launch
//! prepared for their layout (`crate::rebound`).

use pyo3::prelude::*;
use pyo3::types::PyList;
use smallvec::SmallVec;

use crate::args::OutputSpec;
use crate::array_args::Source;
use crate::arrays::Named;
use crate::device::Place;
use crate::donation::Aliasing;
use crate::errors::IntoPy;
use crate::ffi::kept_launch;
use crate::kernel::route::{self, Route};
use crate::kernel::{extents, specs_of, Made, Parts, PyKernel, Tune, Values};
use crate::rebound::{Entry, Key};
use crate::{streams, torch};
use kernelkit::Array;

impl PyKernel {
    /// New torch tensors for outputs of these shapes and `specs`' dtypes on
    /// `place`. Made here, so known but for their addresses: one call each,
    /// not the five of reading a tensor.
    pub(crate) fn torch_outputs<'py>(
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

    /// A call whose arrays are all `torch.Tensor`s or `nn.Parameter`s on one
    /// GPU, on torch's current stream there, with neither a fill nor a
    /// print: run through the launch prepared for its layout
    /// (`crate::rebound`), which the first call of a layout prepares.
    /// `None`, having done nothing, for any other call.
    ///
    /// A tuned call (`tune`) first looks for the launch its tuned kernel
    /// kept under the call's own arguments ([`Tune::kept`]); else its
    /// configuration is found from the tensors as read here (`None` when
    /// the tuned kernel has not chosen one: the general path chooses), and
    /// the launch found or prepared for it is kept there too.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn torch_call<'py>(
        &self,
        py: Python<'py>,
        sources: &[Source<'py>],
        out: Option<&SmallVec<[Bound<'py, PyAny>; 4]>>,
        output_shapes: Option<&Bound<'py, PyAny>>,
        output_dtypes: Option<&Bound<'py, PyAny>>,
        (template, grid, threadgroup): (
            Option<&Bound<'py, PyAny>>,
            &Bound<'py, PyAny>,
            &Bound<'py, PyAny>,
        ),
        tune: Option<&dyn Tune>,
        stream: Option<&Bound<'py, PyAny>>,
        aliasing: &Aliasing,
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
                Place::Cuda(n) if torch::is_plain_tensor(obj) && ordinal.is_none_or(|o| o == n) => {
                    ordinal = Some(n);
                    inputs.push(t);
                }
                _ => return Ok(None),
            }
        }
        let Some(n) = ordinal else {
            return Ok(None);
        };
        let current = torch::current_stream(py, n)?;
        // `stream=` torch's current stream itself (`torch.cuda.
        // current_stream()`, a stream object of another library with the
        // same handle): the call this route makes anyway.
        if let Some(s) = stream.filter(|s| !s.is_none()) {
            if s.cast::<crate::device::PyStream>().is_ok()
                || crate::kernel::framework_stream(s)? != Some(current)
            {
                return Ok(None);
            }
        }
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
            // `out=` with the shapes and dtypes MLX's signature asks for:
            // when they are the tensors' own, the same call as without.
            (Some(out), Some(specs)) => {
                if specs.len() != out.len() {
                    return Ok(None);
                }
                let mut read = SmallVec::new();
                for (i, (o, (shape, dtype))) in out.iter().zip(&specs).enumerate() {
                    if !torch::is_plain_tensor(o) {
                        return Ok(None);
                    }
                    let (_, t) = torch::resolved(o, &label(i))?;
                    let same = t.dtype == *dtype
                        && t.shape.len() == shape.len()
                        && t.shape.iter().zip(shape).all(|(&a, &b)| a as i64 == b);
                    if t.place != here || !same {
                        return Ok(None);
                    }
                    torch::check_writable(o, &label(i))?;
                    read.push(t);
                }
                (out.iter().cloned().collect(), read)
            }
            (Some(out), None) => {
                if out.len() != names.len() {
                    return Ok(None);
                }
                let mut read = SmallVec::new();
                for (i, o) in out.iter().enumerate() {
                    if !torch::is_plain_tensor(o) {
                        return Ok(None);
                    }
                    let (_, t) = torch::resolved(o, &label(i))?;
                    if t.place != here {
                        return Ok(None);
                    }
                    torch::check_writable(o, &label(i))?;
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
        // The tensors were read (`get_device()` named their GPU) from
        // `sources` and `objects`, which hold them through the call.
        let held = (sources, &objects);
        let (launch_template, launch_grid, launch_threadgroup, tuned) = match tune {
            None => (
                self.template.parse(template, kernel)?,
                self.grid.get(grid, kernel, "grid")?,
                self.threadgroup.get(threadgroup, kernel, "threadgroup")?,
                None,
            ),
            Some(tune) => {
                let Some((call_grid, call_template)) = tune.call_shape(self) else {
                    return Ok(None);
                };
                let own = Key {
                    ordinal: n,
                    stream: current,
                    grid: call_grid,
                    threadgroup: [0; 3],
                    template: &call_template,
                    inputs: &inputs,
                    outputs: &outputs,
                    aliasing,
                };
                if let Some(fitted) = kept_launch::find_read(tune.kept(), &own, &held) {
                    route::note(Route::TorchKept);
                    fitted.run(py).py_err()?;
                    if out.is_some() {
                        torch::bump_versions(py, &objects)?;
                    }
                    return Ok(Some(PyList::new(py, objects)?));
                }
                let Some(chosen) = tune.torch_read_launch_of(self, &inputs, &outputs, here) else {
                    return Ok(None);
                };
                let chosen = chosen?;
                (
                    chosen.template.clone(),
                    chosen.grid,
                    chosen.threadgroup,
                    Some((tune, call_grid, call_template)),
                )
            }
        };
        // The tuned kernel's own key for a launch of this kernel's.
        let relabel = |entry: &crate::rebound::Entry| {
            if let Some((tune, call_grid, call_template)) = &tuned {
                tune.kept()
                    .keep(entry.relabeled(*call_grid, [0; 3], call_template));
            }
        };
        let key = Key {
            ordinal: n,
            stream: current,
            grid: launch_grid,
            threadgroup: launch_threadgroup,
            template: &launch_template,
            inputs: &inputs,
            outputs: &outputs,
            aliasing,
        };
        if let Some(fitted) = kept_launch::find_read(&self.rebound, &key, &held) {
            route::note(Route::TorchKept);
            relabel(fitted.entry());
            fitted.run(py).py_err()?;
            if out.is_some() {
                torch::bump_versions(py, &objects)?;
            }
            return Ok(Some(PyList::new(py, objects)?));
        }
        let in_addrs: SmallVec<[u64; 4]> = inputs.iter().map(|t| t.data).collect();
        let out_addrs: SmallVec<[u64; 2]> = outputs.iter().map(|t| t.data).collect();
        // A new layout: the general path's arrays, checks and variant;
        // its launch is kept, prepared, for the next call of this layout.
        tracing::debug!("kernel `{kernel}`: a new torch layout, prepared");
        route::note(Route::TorchNew);
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
            template: Values::Parsed(key.template.clone()),
            grid: key.grid,
            threadgroup: key.threadgroup,
            init_value: None,
            shared_memory: self.shared_memory,
            stream,
            aliasing: aliasing.clone(),
        };
        let prepared = py
            .detach(|| {
                let call = parts.call(&self.kernel);
                match call.rebindable()? {
                    // The addresses are those of the arrays the launch was
                    // just prepared with, alive in `parts`.
                    Some(launch) => kept_launch::run_prepared(&launch, &in_addrs, &out_addrs)
                        .map(|()| Some(launch)),
                    None => call.launch().map(|_| None),
                }
            })
            .py_err()?;
        if let Some(launch) = prepared {
            relabel(&self.rebound.keep(Entry::new(&key, launch)));
        }
        if out.is_some() {
            torch::bump_versions(py, &objects)?;
        }
        Ok(Some(PyList::new(py, objects)?))
    }
}
