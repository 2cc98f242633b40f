//! The tuned call's choice inside the kernel's routes
//! ([`crate::kernel::Tune`]): the configuration is found from the
//! arguments as the route has converted or read them (the inputs' dtypes
//! and shapes, the outputs' shapes and dtypes, the place the call runs),
//! so that nothing of the call is read twice; only the call's own
//! template values (through the tuned kernel's memo), the user's key and
//! the call's grid (when a configuration takes it) are read here. Every
//! route writes the same signature (the tag `H`), so a choice the general
//! path made is found by the torch routes. Where the signature decides
//! the whole launch (no grid function), the memo keeps it, the call's own
//! template values and the configuration's in one list with its grid and
//! threadgroup, shared: a warm call writes the template's bytes (no list
//! built), finds the launch and takes a reference to it (nothing of it
//! copied, one count raised). With a grid function, the
//! configuration's values are appended to the call's parsed ones and the
//! function called for the grid. No Python object is built.
//!
//! The torch routes keep the chosen configuration's launch under the
//! call's own arguments as well ([`Tune::kept`], keyed by the call's grid
//! and template values and its tensors' layouts): a warm tuned call on
//! torch tensors finds it there as an untuned call finds its own, and
//! computes no signature. The key and grid functions are therefore called
//! for a layout the tuned kernel has not kept, not at every call.

use std::sync::Arc;

use pyo3::prelude::*;

use super::memo::{self, Entry, Found, Sig};
use super::{choose, padded, Given, PyTuned};
use crate::args::{self, OutputSpec};
use crate::device::Place;
use crate::ffi::torch_shim::Shim;
use crate::kernel::{Chosen, Launch, PyKernel, Tune};
use crate::rebound::Rebound;
use crate::torch::Tensor;
use kernelkit::{Array, Stream};

/// What [`Hook::finish_sig`] read besides the signature and the template
/// values: the user's key and the call's grid.
type SigParts = (Option<String>, Option<[u64; 3]>);

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
    ) -> PyResult<Chosen> {
        let mut sig = Sig::new();
        sig.push(b'H');
        for a in inputs {
            memo::push_shape(
                &mut sig,
                a.dtype() as u8,
                a.shape().iter().map(|&d| d as u64),
            );
        }
        let mut template = None;
        let (key, call_grid) = self.finish_sig(
            &mut sig,
            kernel,
            |sig| memo::push_outputs(sig, outputs),
            Place::of(stream.device()),
            &mut template,
        )?;
        match self.tuned.memo.found(&sig) {
            Some(found) => self.launch(kernel, found, &mut template, call_grid),
            None => self.choose_cold(
                kernel,
                inputs,
                outputs,
                stream,
                init_value,
                sig,
                (key, call_grid),
                template.take(),
            ),
        }
    }

    fn torch_launch_of(
        &self,
        kernel: &PyKernel,
        shim: &Shim,
        inputs: &[Bound<'_, PyAny>],
        outputs: &[Bound<'_, PyAny>],
        out_given: bool,
    ) -> Option<Chosen> {
        let g = self.given;
        if g.device.is_some() {
            return None;
        }
        // The signature `launch_of` writes for the same call, from each
        // tensor's layout read in place and copied into it before any
        // Python code runs (the key function).
        let mut sig = Sig::new();
        sig.push(b'H');
        let mut place = None;
        for x in inputs {
            place = Some(push_tensor(&mut sig, shim, x)?);
        }
        let given = kernel
            .given_outputs_in(&self.tuned.outputs, g.output_shapes, g.output_dtypes)
            .ok()?;
        let mut out_sig = Sig::new();
        match given {
            Some(specs) => memo::push_outputs(&mut out_sig, &specs),
            None if out_given => {
                out_sig.push(b'o');
                for o in outputs {
                    push_tensor(&mut out_sig, shim, o)?;
                }
            }
            None => return None,
        }
        let mut template = None;
        let (_, call_grid) = self
            .finish_sig(
                &mut sig,
                kernel,
                |sig| sig.extend_from_slice(&out_sig),
                place?,
                &mut template,
            )
            .ok()?;
        let found = self.tuned.memo.found(&sig)?;
        self.launch(kernel, found, &mut template, call_grid).ok()
    }

    fn torch_read_launch_of(
        &self,
        kernel: &PyKernel,
        inputs: &[&Tensor],
        outputs: &[&Tensor],
        place: Place,
    ) -> Option<PyResult<Chosen>> {
        let mut sig = Sig::new();
        sig.push(b'H');
        for t in inputs {
            memo::push_shape(&mut sig, t.dtype as u8, t.shape.iter().map(|&d| d as u64));
        }
        let outputs_sig = |sig: &mut Sig| {
            sig.push(b'o');
            for t in outputs {
                memo::push_shape(sig, t.dtype as u8, t.shape.iter().map(|&d| d as u64));
            }
        };
        let mut template = None;
        let (_, call_grid) =
            match self.finish_sig(&mut sig, kernel, outputs_sig, place, &mut template) {
                Ok(parts) => parts,
                Err(e) => return Some(Err(e)),
            };
        let found = self.tuned.memo.found(&sig)?;
        Some(self.launch(kernel, found, &mut template, call_grid))
    }

    fn kept(&self) -> &Rebound {
        &self.tuned.kept
    }

    fn call_shape(&self, kernel: &PyKernel) -> Option<([u64; 3], args::Template)> {
        let (t, g) = (self.tuned, self.given);
        let name = kernel.name();
        let grid = match g.grid.filter(|_| t.takes_call_grid) {
            Some(grid) => t.grid.get(grid, name, "grid").ok()?,
            None => [0; 3],
        };
        Some((grid, t.template.parse(g.template, name).ok()?))
    }
}

/// Writes a torch tensor's dtype and shape as `launch_of` writes an
/// array's, read in place; its place; `None` when the shim cannot read it.
fn push_tensor(sig: &mut Sig, shim: &Shim, t: &Bound<'_, PyAny>) -> Option<Place> {
    // SAFETY: the layout is copied into `sig` at once; no Python code runs
    // meanwhile, and `t` is held.
    let raw = unsafe { shim.raw(t) }?;
    if raw.shape.iter().any(|&d| d < 0) {
        return None;
    }
    memo::push_shape(sig, raw.dtype as u8, raw.shape.iter().map(|&d| d as u64));
    Some(raw.place)
}

impl Hook<'_, '_, '_> {
    /// The launch of a call no choice in the memo fits (signature `sig`,
    /// with what `finish_sig` read): the library chooses (tuning if no
    /// tier has a record), and the choice is remembered, with its launch
    /// where the signature decides it. Apart from the warm path, whose
    /// frame stays small.
    #[cold]
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn choose_cold(
        &self,
        kernel: &PyKernel,
        inputs: &[Array],
        outputs: &[OutputSpec],
        stream: &Stream,
        init_value: Option<f64>,
        sig: Sig,
        (key, call_grid): SigParts,
        template: Option<args::Template>,
    ) -> PyResult<Chosen> {
        let (t, g) = (self.tuned, self.given);
        let py = g.inputs.py();
        // Parsed with the signature when a grid function needs them.
        let template = &match template {
            Some(template) => template,
            None => t.template.parse(g.template, kernel.name())?,
        };
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
                template,
                init_value,
                key,
            },
        )?;
        let launch = self.apply(index, template.clone(), call_grid)?;
        let by_signature = t.configs[index].grid_dims.is_some() || t.grid_fn.is_none();
        let (kept, chosen) = if by_signature {
            let launch = Arc::new(launch);
            (Some(launch.clone()), Chosen::Kept(launch))
        } else {
            (None, Chosen::Made(launch))
        };
        t.memo.keep(Entry {
            sig,
            _held: Default::default(),
            index,
            template: None,
            launch: kept,
        });
        Ok(chosen)
    }

    /// The launch of what the memo found: kept whole, else configuration
    /// `index` applied with the call's own template values (`template`'s,
    /// else parsed: their memo finds them) and the grid function's grid.
    #[inline]
    fn launch(
        &self,
        kernel: &PyKernel,
        found: Found,
        template: &mut Option<args::Template>,
        call_grid: Option<[u64; 3]>,
    ) -> PyResult<Chosen> {
        match found {
            Found::Launch(launch) => Ok(Chosen::Kept(launch)),
            Found::Index(index) => match template.take() {
                Some(template) => self.apply(index, template, call_grid).map(Chosen::Made),
                None => self.apply_parsed(kernel, index, call_grid),
            },
        }
    }

    /// [`Hook::apply`] with the call's own template values parsed (a grid
    /// function's call follows: kept out of the warm path's frame).
    #[inline(never)]
    fn apply_parsed(
        &self,
        kernel: &PyKernel,
        index: usize,
        call_grid: Option<[u64; 3]>,
    ) -> PyResult<Chosen> {
        let template = self
            .tuned
            .template
            .parse(self.given.template, kernel.name())?;
        self.apply(index, template, call_grid).map(Chosen::Made)
    }

    /// The rest of a call's signature after its inputs (the tag `H`: the
    /// arguments as the call converted or read them): the user's key, the
    /// outputs (`push_outputs`), the call's own template values, its grid
    /// (when a configuration takes it) and the place it runs. Returns the
    /// key and the grid; the template values are parsed into `parsed`
    /// when a grid function's grid makes the launch at each call (else
    /// only their bytes are written).
    fn finish_sig(
        &self,
        sig: &mut Sig,
        kernel: &PyKernel,
        push_outputs: impl FnOnce(&mut Sig),
        place: Place,
        parsed: &mut Option<args::Template>,
    ) -> PyResult<SigParts> {
        let (t, g) = (self.tuned, self.given);
        let name = kernel.name();
        let key = match &t.key_fn {
            Some(f) => Some(self.key_of(sig, f)?),
            None => None,
        };
        push_outputs(sig);
        match t.grid_fn {
            Some(_) => *parsed = Some(memo::push_template(sig, &t.template, g.template, name)?),
            None => memo::push_template_bytes(sig, &t.template, g.template, name)?,
        }
        let call_grid = match g.grid.filter(|_| t.takes_call_grid) {
            Some(grid) => Some(t.grid.get(grid, name, "grid")?),
            None => None,
        };
        memo::push_dims(sig, call_grid);
        memo::push_place(sig, place);
        Ok((key, call_grid))
    }

    /// The user's key for the call (a Python call: kept out of
    /// `finish_sig`'s frame), written into `sig`.
    #[inline(never)]
    fn key_of(&self, sig: &mut Sig, f: &Py<PyAny>) -> PyResult<String> {
        let inputs = self.given.inputs;
        let key = f.bind(inputs.py()).call1((inputs,))?.repr()?.to_string();
        memo::push_key(sig, &key);
        Ok(key)
    }

    /// Configuration `index` applied: the call's own template values and
    /// the configuration's, its grid (fixed, the grid function's, or the
    /// call's) and its threadgroup.
    #[inline]
    fn apply(
        &self,
        index: usize,
        mut template: args::Template,
        call_grid: Option<[u64; 3]>,
    ) -> PyResult<Launch> {
        let t = self.tuned;
        let config = &t.configs[index];
        let grid = match (config.grid_dims, &t.grid_fn) {
            (Some(fixed), _) => fixed,
            (None, Some(f)) => self.grid_of(f, index)?,
            (None, None) => call_grid.ok_or_else(|| t.no_grid(index))?,
        };
        // One push each (the values are few): no generic extend.
        for value in &config.values {
            template.push(value.clone());
        }
        Ok(Launch {
            template,
            grid,
            threadgroup: config.threadgroup_dims,
        })
    }

    /// The grid function's grid for configuration `index` (a Python call:
    /// kept out of `apply`'s frame).
    #[inline(never)]
    fn grid_of(&self, f: &Py<PyAny>, index: usize) -> PyResult<[u64; 3]> {
        let (t, g) = (self.tuned, self.given);
        let py = g.inputs.py();
        let name = t.name();
        let grid = f
            .bind(py)
            .call1((t.configs[index].config.bind(py), g.inputs))?;
        t.fn_grid.get(&padded(&grid, name)?, name, "grid")
    }
}
