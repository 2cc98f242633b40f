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

use pyo3::prelude::*;

use super::memo::{self, Entry, Sig};
use super::{choose, padded, Given, PyTuned};
use crate::args::{self, OutputSpec};
use crate::device::Place;
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
        let index = match t.memo.find(py, &sig) {
            Some((index, _)) => index,
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
