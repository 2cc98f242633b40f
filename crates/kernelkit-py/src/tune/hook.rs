//! The tuned call's choice inside the kernel's general path
//! ([`crate::kernel::Tune`]), for calls no torch route takes: the
//! configuration is found from the arguments as the general path has
//! converted them (the input arrays' dtypes and shapes, the outputs'
//! shapes and dtypes, the stream's device), so that nothing of the call is
//! read twice; only the call's own template values (through the tuned
//! kernel's memo), the user's key and the call's grid (when a
//! configuration takes it) are read here. The configuration's template
//! values are appended to the call's parsed ones, and its threadgroup and
//! grid given as extents: no Python object is built.
//!
//! The one-pass torch route asks the same of a warm `out=` call on torch
//! tensors, read in place: its signature is the one the tuned kernel's
//! object memo (`PyTuned::choice`) keeps for that call, so a choice made
//! by the call's first (slow) pass is found here; any miss leaves the call
//! to that slow pass. (A key or grid function is then called again for
//! that call: once by the one-pass attempt, once by the slow pass.)

use pyo3::prelude::*;

use super::memo::{self, Entry, Sig};
use super::{choose, padded, Given, PyTuned};
use crate::args::{self, OutputSpec};
use crate::device::Place;
use crate::ffi::torch_shim::Shim;
use crate::kernel::{PyKernel, Tune};
use kernelkit::{Array, Stream};

/// A tuned call's part in the general path.
pub(crate) struct Hook<'a, 'b, 'py> {
    pub(crate) tuned: &'a PyTuned,
    pub(crate) given: &'a Given<'b, 'py>,
}

impl Tune for Hook<'_, '_, '_> {
    fn launch_of(
        &self,
        kernel: &PyKernel,
        inputs: &[Array],
        outputs: &[OutputSpec],
        stream: &Stream,
        init_value: Option<f64>,
    ) -> PyResult<(args::Template, [u64; 3], [u64; 3])> {
        let (t, g) = (self.tuned, self.given);
        let py = g.inputs.py();
        let name = kernel.name();
        // A tag of its own: never equal to the signature of a call read
        // from its objects (`PyTuned::choice`), kept in the same memo.
        let mut sig = Sig::new();
        sig.push(b'H');
        for a in inputs {
            memo::push_shape(
                &mut sig,
                a.dtype() as u8,
                a.shape().iter().map(|&d| d as u64),
            );
        }
        let key = match &t.key_fn {
            Some(f) => {
                let key = f.bind(py).call1((g.inputs,))?.repr()?.to_string();
                memo::push_key(&mut sig, &key);
                Some(key)
            }
            None => None,
        };
        memo::push_outputs(&mut sig, outputs);
        let template = t.template.parse(g.template, name)?;
        memo::push_template(&mut sig, &template);
        let call_grid = match g.grid.filter(|_| t.takes_call_grid) {
            Some(grid) => Some(t.grid.get(grid, name, "grid")?),
            None => None,
        };
        memo::push_dims(&mut sig, call_grid);
        memo::push_place(&mut sig, Place::of(stream.device()));
        let index = match t.memo.index(&sig) {
            Some(index) => index,
            None => {
                let grids = t.grids(py, g.inputs, call_grid)?;
                let index = choose::choose(
                    py,
                    &t.tuning,
                    &kernel.kernel,
                    inputs,
                    stream,
                    choose::Cold {
                        grids,
                        outputs,
                        template: &template,
                        init_value,
                        key,
                    },
                )?;
                t.memo.keep(Entry {
                    sig,
                    _held: Default::default(),
                    index,
                    template: None,
                });
                index
            }
        };
        self.apply(index, template, call_grid)
    }

    fn torch_launch_of(
        &self,
        kernel: &PyKernel,
        shim: &Shim,
        inputs: &[Bound<'_, PyAny>],
        outputs: &[Bound<'_, PyAny>],
        out_given: bool,
    ) -> Option<(args::Template, [u64; 3], [u64; 3])> {
        let (t, g) = (self.tuned, self.given);
        let py = g.inputs.py();
        let name = kernel.name();
        // The bytes `PyTuned::choice` writes for the same call (its torch
        // tensors read through their objects), so that a choice made there
        // is found here: each tensor's layout read in place and copied into
        // the signature before any Python code runs (the key function).
        let mut sig = Sig::new();
        for x in inputs {
            push_tensor(&mut sig, shim, x)?;
        }
        if let Some(f) = &t.key_fn {
            let key = f.bind(py).call1((g.inputs,)).ok()?.repr().ok()?;
            memo::push_key(&mut sig, &key.to_cow().ok()?);
        }
        let given = kernel
            .given_outputs_in(&t.outputs, g.output_shapes, g.output_dtypes)
            .ok()?;
        match given {
            Some(specs) => memo::push_outputs(&mut sig, &specs),
            None if out_given => {
                for o in outputs {
                    push_tensor(&mut sig, shim, o)?;
                }
            }
            None => return None,
        }
        let template = t.template.parse(g.template, name).ok()?;
        memo::push_template(&mut sig, &template);
        let call_grid = match g.grid.filter(|_| t.takes_call_grid) {
            Some(grid) => Some(t.grid.get(grid, name, "grid").ok()?),
            None => None,
        };
        memo::push_dims(&mut sig, call_grid);
        if g.device.is_some() {
            return None;
        }
        memo::push_device(&mut sig, None, g.stream);
        let index = t.memo.index(&sig)?;
        self.apply(index, template, call_grid).ok()
    }
}

/// Writes a torch tensor's bytes as `memo::push_source` writes them for
/// its `Source`, read in place; `None` when the shim cannot read it.
fn push_tensor(sig: &mut Sig, shim: &Shim, t: &Bound<'_, PyAny>) -> Option<()> {
    // SAFETY: the layout is copied into `sig` at once; no Python code runs
    // meanwhile, and `t` is held.
    let raw = unsafe { shim.raw(t) }?;
    if raw.shape.iter().any(|&d| d < 0) {
        return None;
    }
    sig.push(b't');
    memo::push_place(sig, raw.place);
    memo::push_shape(sig, raw.dtype as u8, raw.shape.iter().map(|&d| d as u64));
    Some(())
}

impl Hook<'_, '_, '_> {
    /// Configuration `index` applied: the call's own template values and
    /// the configuration's, its grid (fixed, the grid function's, or the
    /// call's) and its threadgroup.
    fn apply(
        &self,
        index: usize,
        template: args::Template,
        call_grid: Option<[u64; 3]>,
    ) -> PyResult<(args::Template, [u64; 3], [u64; 3])> {
        let (t, g) = (self.tuned, self.given);
        let py = g.inputs.py();
        let name = t.name();
        let config = &t.configs[index];
        let grid = match (config.grid_dims, &t.grid_fn) {
            (Some(fixed), _) => fixed,
            (None, Some(f)) => {
                let grid = f.bind(py).call1((config.config.bind(py), g.inputs))?;
                t.fn_grid.get(&padded(&grid, name)?, name, "grid")?
            }
            (None, None) => call_grid.ok_or_else(|| t.no_grid(index))?,
        };
        let mut template = template;
        template.extend(config.values.iter().cloned());
        Ok((template, grid, config.threadgroup_dims))
    }
}
