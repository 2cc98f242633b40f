//! A warm torch `out=` call, in one pass: the call a training or serving
//! loop makes every step, the tensors new but their layout one the kernel
//! kept a launch for (`crate::rebound`).
//!
//! The general path (`crate::kernel`'s call) turns every argument into this
//! crate's values first (the items of each list, a `Source` with a copied
//! layout per tensor) and then finds that the torch path ([`super::path`]) can take the
//! call. On a GPU host each launch leaves the CPU's instruction cache cold,
//! so every line of code a call runs is fetched again at every call: here,
//! a call that repeats a kept layout reads each tensor in place (torch's
//! size and stride arrays, compared with the kept layout, not copied) and
//! launches, running a fraction of that code. Anything else, and anything
//! that could raise an error, is left to the general path, which then does
//! what it always did; nothing Python can see happens here before the
//! launch, so leaving a call to it changes nothing.

use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use smallvec::SmallVec;

use crate::errors::IntoPy;
use crate::ffi::kept_launch::{find_in_place, Shape};
use crate::kernel::route::{self, Route};
use crate::kernel::{CallArgs, PyKernel};
use crate::torch;

/// The items of a list or a tuple (the general path words anything else).
fn items<'a, 'py>(obj: &'a Bound<'py, PyAny>) -> Option<ListOrTuple<'a, 'py>> {
    if let Ok(list) = obj.cast::<PyList>() {
        return Some(ListOrTuple::List(list));
    }
    obj.cast::<PyTuple>().ok().map(ListOrTuple::Tuple)
}

enum ListOrTuple<'a, 'py> {
    List(&'a Bound<'py, PyList>),
    Tuple(&'a Bound<'py, PyTuple>),
}

impl<'py> ListOrTuple<'_, 'py> {
    /// The items, when there are `n` and each is a `torch.Tensor` or an
    /// `nn.Parameter` (read in place only for those two types).
    fn tensors(&self, n: usize) -> Option<SmallVec<[Bound<'py, PyAny>; 4]>> {
        let len = match self {
            ListOrTuple::List(l) => l.len(),
            ListOrTuple::Tuple(t) => t.len(),
        };
        if len != n {
            return None;
        }
        let mut got = SmallVec::new();
        for i in 0..n {
            let item = match self {
                ListOrTuple::List(l) => l.get_item(i),
                ListOrTuple::Tuple(t) => t.get_item(i),
            }
            .ok()?;
            if !torch::is_plain_tensor(&item) {
                return None;
            }
            got.push(item);
        }
        Some(got)
    }

    /// A new list of the items (what a call returns for `out=`).
    fn to_list(&self) -> PyResult<Bound<'py, PyList>> {
        match self {
            ListOrTuple::List(l) => l.get_slice(0, l.len()).cast_into().map_err(Into::into),
            ListOrTuple::Tuple(t) => Ok(t.to_list()),
        }
    }
}

impl PyKernel {
    /// A torch `out=` call (or one whose every output is donated) whose
    /// layout (GPU, torch's current stream there, grid, threadgroup,
    /// template values, donations and `allow_overlap`, each tensor's
    /// dtype, shape and strides) is one a launch was kept for: launched
    /// with its tensors' addresses. `output_shapes`/`output_dtypes` beside
    /// `out=` must be the kept outputs' own, `stream=` torch's current
    /// stream. `None`, having done nothing, for any other call, and where
    /// anything would be an error: the general path takes it. A tuned
    /// call's threadgroup, grid and template values are its configuration's
    /// (`CallArgs::tune`), when its tuned kernel remembers the layout.
    #[inline(never)]
    pub(crate) fn repeat<'py>(
        &self,
        a: &CallArgs<'_, 'py>,
    ) -> Option<PyResult<Bound<'py, PyList>>> {
        let py = a.py;
        let given = |o: Option<&Bound<'_, PyAny>>| o.is_some_and(|o| !o.is_none());
        if a.init_value.is_some() || a.verbose || given(a.device) {
            return None;
        }
        let shim = torch::shim(py)?;
        let kernel = self.name();
        let spec = self.kernel.spec();
        let stream = match a.stream.filter(|s| !s.is_none()) {
            None => None,
            Some(s) if s.cast::<crate::device::PyStream>().is_ok() => return None,
            Some(s) => Some(crate::kernel::framework_stream(s).ok()??),
        };
        let aliasing = self.aliasing(a.donate, a.allow_overlap).ok()?;
        let specs = match (given(a.output_shapes), given(a.output_dtypes)) {
            (false, false) => None,
            (true, true) => Some(
                self.given_outputs(a.output_shapes, a.output_dtypes)
                    .ok()??,
            ),
            _ => return None,
        };
        let inputs = items(a.inputs)?.tensors(spec.input_names().len())?;
        let n = spec.output_names().len();
        // The outputs: `out=`'s tensors, or each donated output's input.
        let (outputs, out): (
            SmallVec<[Bound<'py, PyAny>; 4]>,
            Option<ListOrTuple<'_, 'py>>,
        ) = match a.out.filter(|o| !o.is_none()) {
            Some(o) if aliasing.donated.is_empty() => {
                let out = items(o)?;
                (out.tensors(n)?, Some(out))
            }
            None if aliasing.donated.len() == n => (
                (0..n)
                    .map(|o| aliasing.input_of(o).map(|i| inputs[i].clone()))
                    .collect::<Option<_>>()?,
                None,
            ),
            _ => return None,
        };
        let fitted = match a.tune {
            None => {
                let template = self.template.parse(a.template, kernel).ok()?;
                let shape = Shape {
                    grid: self.grid.get(a.grid, kernel, "grid").ok()?,
                    threadgroup: self
                        .threadgroup
                        .get(a.threadgroup, kernel, "threadgroup")
                        .ok()?,
                    template: &template,
                    stream,
                    aliasing: &aliasing,
                };
                find_in_place(shim, &self.rebound, &inputs, &outputs, shape)?
            }
            // A tuned call: the launch its tuned kernel kept under the
            // call's own grid and template values; else its configuration,
            // found from the tensors' layouts (`crate::tune`), and this
            // kernel's launch for it, then kept under the call's arguments.
            Some(tune) => {
                let (call_grid, call_template) = tune.call_shape(self)?;
                let own = Shape {
                    grid: call_grid,
                    threadgroup: [0; 3],
                    template: &call_template,
                    stream,
                    aliasing: &aliasing,
                };
                match find_in_place(shim, tune.kept(), &inputs, &outputs, own) {
                    Some(fitted) => fitted,
                    None => {
                        let chosen =
                            tune.torch_launch_of(self, shim, &inputs, &outputs, out.is_some())?;
                        let shape = Shape {
                            grid: chosen.grid,
                            threadgroup: chosen.threadgroup,
                            template: &chosen.template,
                            stream,
                            aliasing: &aliasing,
                        };
                        let fitted = find_in_place(shim, &self.rebound, &inputs, &outputs, shape)?;
                        tune.kept().keep(fitted.entry().relabeled(
                            call_grid,
                            [0; 3],
                            &call_template,
                        ));
                        fitted
                    }
                }
            }
        };
        if let Some(specs) = &specs {
            let kept = fitted.output_layouts();
            if specs.len() != kept.len() || !specs.iter().zip(kept).all(|((s, d), l)| l.is(s, *d)) {
                return None;
            }
        }
        // An output autograd must not lose track of: the general path
        // words the refusal.
        for t in &outputs {
            if !shim.may_write(t)? {
                return None;
            }
        }
        route::note(Route::Repeat);
        let launched = fitted.run(py).py_err();
        if launched.is_ok() {
            for t in &outputs {
                shim.bump_version(t);
            }
        }
        Some(launched.and_then(|()| match &out {
            Some(out) => out.to_list(),
            None => PyList::new(py, &outputs),
        }))
    }
}
