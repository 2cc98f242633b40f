//! What autotuning (`kernel::tune`) needs of a call: the call with one
//! launch configuration applied, with its arrays swapped for scratch ones
//! when it is timed, and what tells one tuning key from another.
//!
//! The engine itself lives in `kernel::tune`; this file only reads and
//! rebuilds a [`Call`]'s private fields.

use std::borrow::Cow;

use smallvec::SmallVec;

use super::check::Dims;
use super::{Call, Donation, Targets};
use crate::array::outputs::Outputs;
use crate::array::Array;
use crate::codegen::template::{TemplateArg, TemplateParam};
use crate::device::{Device, Stream};
use crate::error::Result;
use crate::kernel::tune::TuneConfig;
use crate::kernel::variant::Variant;
use crate::kernel::Kernel;
use std::sync::Arc;

/// The bytes a call's tuning signature is hashed from (on the stack for
/// most calls).
pub(crate) type SigBytes = crate::kernel::tune::SignatureBytes;

/// Arrays a timing run uses instead of the caller's: inputs by position
/// and outputs written into scratch arrays (`output_into`).
pub(crate) struct Swap<'s> {
    pub(crate) inputs: SmallVec<[&'s Array; 8]>,
    pub(crate) targets: Vec<(usize, &'s Array)>,
    pub(crate) allow_overlap: bool,
}

impl<'a> Call<'a> {
    /// The kernel called.
    pub(crate) fn kernel(&self) -> &'a Kernel {
        self.kernel
    }

    /// The call's inputs, in order.
    pub(crate) fn input_arrays(&self) -> &[&'a Array] {
        &self.inputs
    }

    /// Outputs written into the caller's arrays: (output index, array), and
    /// whether they may overlap the inputs.
    pub(crate) fn target_arrays(&self) -> (&[(usize, &'a Array)], bool) {
        match &self.targets {
            Some(t) => (&t.list, t.allow_overlap),
            None => (&[], false),
        }
    }

    /// Each output's shape and dtype.
    pub(crate) fn output_specs(&self) -> impl Iterator<Item = (&[i64], crate::dtype::DType)> {
        self.outputs.iter().map(|(s, d)| (&s[..], *d))
    }

    /// Whether the kernel declares its outputs atomic.
    pub(crate) fn atomic_outputs(&self) -> bool {
        self.spec().atomic_outputs
    }

    /// Runs this call with `variant` (built for it with a tuning's chosen
    /// configuration's template values, `Call::chosen_variant`) and that
    /// configuration's grid and threadgroup: the warm path of a tuned call,
    /// with no copy of the call and no variant lookup.
    #[inline]
    pub(crate) fn launch_chosen(
        &self,
        variant: &Variant,
        grid: Option<[u64; 3]>,
        threadgroup: [u64; 3],
    ) -> Result<Outputs> {
        let checked = self.check_with(Dims {
            grid: grid.or(self.grid),
            threadgroup: Some(threadgroup),
        })?;
        self.run_checked(&checked, variant)
    }

    /// The variant of this call (a configured one) on its device, owned:
    /// what a tuning keeps for its warm path.
    pub(crate) fn chosen_variant(&self) -> Result<Arc<Variant>> {
        let checked = self.check()?;
        Ok(self.variant(&checked)?.into_arc())
    }

    /// Whether the call asks to log its variants (`verbose`): a tuned call
    /// then takes the path that logs.
    pub(crate) fn is_verbose(&self) -> bool {
        self.verbose
    }

    /// The call's `init_value`.
    pub(crate) fn init_value_given(&self) -> Option<f64> {
        self.init_value
    }

    /// The id of the device this call runs on.
    #[inline]
    pub(crate) fn device_id(&self) -> Result<crate::device::DeviceId> {
        Ok(self.device()?.id())
    }

    /// The device and stream this call runs on, as `launch` picks them.
    pub(crate) fn device_and_stream(&self) -> Result<(Device, Stream)> {
        let device = self.device()?.into_owned();
        let stream = match self.stream {
            Some(s) => s.clone(),
            None => match self.inputs.first().and_then(|a| a.foreign_stream()) {
                Some(s) => s.clone(),
                None => device.default_stream().clone(),
            },
        };
        Ok((device, stream))
    }

    /// The template arguments the call gives itself (outside the tuning's
    /// configurations): their names and values.
    pub(crate) fn own_template(&self) -> &[TemplateParam<'a>] {
        &self.template
    }

    /// Writes what makes this call a different tuning key on its device
    /// when the key is the default one: the inputs' dtypes and shapes, the
    /// outputs' shapes and dtypes and the call's own template arguments.
    #[inline]
    pub(crate) fn hash_signature(&self, h: &mut SigBytes) {
        for a in &self.inputs {
            h.extend_from_slice(&[a.dtype() as u8, a.ndim() as u8]);
            for &d in a.shape() {
                h.extend_from_slice(&(d as u64).to_le_bytes());
            }
        }
        self.hash_outputs_and_template(h, true);
    }

    /// Writes what of the inputs reaches the variant (dtype and pass
    /// mode) when the user's key stands for their shapes: two calls of
    /// one key may still run different variants.
    #[inline]
    pub(crate) fn hash_input_modes(&self, h: &mut SigBytes) {
        for d in self.input_descs() {
            h.extend_from_slice(&[d.dtype as u8, d.mode as u8]);
        }
    }

    /// Writes the outputs' dtypes (and, with `shapes`, their shapes) and
    /// the call's own template arguments (part of every tuning key: they
    /// change the variant).
    #[inline]
    pub(crate) fn hash_outputs_and_template(&self, h: &mut SigBytes, shapes: bool) {
        for (shape, dtype) in &self.outputs {
            h.extend_from_slice(&[*dtype as u8, shape.len() as u8]);
            if shapes {
                for &d in shape {
                    h.extend_from_slice(&d.to_le_bytes());
                }
            }
        }
        for t in &self.template {
            h.extend_from_slice(t.name.as_bytes());
            match t.value {
                TemplateArg::Int(v) => {
                    h.extend_from_slice(&[0]);
                    h.extend_from_slice(&v.to_le_bytes());
                }
                TemplateArg::Bool(v) => h.extend_from_slice(&[1, v as u8]),
                TemplateArg::DType(d) => h.extend_from_slice(&[2, d as u8]),
            }
        }
    }

    /// This call with `config` applied: its template values added to the
    /// call's own, its threadgroup, and `grid` (the configuration's or the
    /// call's when `None`); with `swap`, scratch arrays in place of the
    /// caller's. The tuning is dropped (the result is a plain call).
    pub(crate) fn configured<'s>(
        &'s self,
        config: &'s TuneConfig,
        grid: Option<[u64; 3]>,
        swap: Option<Swap<'s>>,
    ) -> Call<'s> {
        let mut template: SmallVec<[TemplateParam<'s>; 4]> =
            self.template.iter().cloned().collect();
        for (name, value) in config.template_values() {
            template.push(TemplateParam {
                name: Cow::Borrowed(name),
                value: *value,
            });
        }
        let (inputs, targets) = match swap {
            Some(swap) => (
                swap.inputs,
                (!swap.targets.is_empty()).then(|| {
                    // A donated input's scratch stands for its output, as
                    // any aliased one: `allow_overlap` covers it.
                    Box::new(Targets {
                        list: swap.targets,
                        allow_overlap: swap.allow_overlap,
                        donations: SmallVec::new(),
                    })
                }),
            ),
            None => (
                self.inputs.iter().copied().collect(),
                self.targets.as_ref().map(|t| {
                    Box::new(Targets {
                        list: t.list.iter().map(|&(i, a)| (i, a)).collect(),
                        allow_overlap: t.allow_overlap,
                        donations: t
                            .donations
                            .iter()
                            .map(|d| Donation {
                                index: d.index,
                                output: Cow::Borrowed(&*d.output),
                                input: Cow::Borrowed(&*d.input),
                                from: d.from,
                            })
                            .collect(),
                    })
                }),
            ),
        };
        Call {
            kernel: self.kernel,
            inputs,
            outputs: self.outputs.clone(),
            template,
            grid: grid.or(self.grid),
            threadgroup: Some(config.threadgroup()),
            init_value: self.init_value,
            stream: self.stream,
            shared_mem_bytes: self.shared_mem_bytes,
            verbose: self.verbose,
            targets,
            tuning: None,
        }
    }
}
