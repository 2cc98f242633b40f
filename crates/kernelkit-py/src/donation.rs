//! A call's `donate=` map and `allow_overlap=` flag: which outputs are
//! inputs' own buffers (in-place kernels), and whether `out=` arrays may
//! share memory with the inputs.
//!
//! `donate={"out": "inp"}` is usually a literal dict of interned names, so
//! a callable remembers the last map it parsed ([`DonationMemo`]) and a
//! repeated call compares its items with the remembered names (by
//! identity, else by text): no parsing, no allocation.
//!
//! The map is turned into output and input positions ([`Aliasing`]),
//! which also go into a kept torch launch's key (`crate::rebound`): a
//! launch prepared to let an output share its input's memory is never
//! run for a call that did not ask for it.

use std::sync::Mutex;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use smallvec::SmallVec;

use crate::dtypes::describe;
use crate::errors;

/// How a call's outputs may share memory with its inputs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Aliasing {
    /// `allow_overlap=True`: `out=` arrays may share memory with the
    /// inputs and each other.
    pub allow_overlap: bool,
    /// Each donated output's position and its input's, in output order.
    pub donated: SmallVec<[(u8, u8); 2]>,
}

impl Aliasing {
    /// The input whose buffer output `index` is, if it is donated.
    pub(crate) fn input_of(&self, index: usize) -> Option<usize> {
        self.donated
            .iter()
            .find(|(o, _)| usize::from(*o) == index)
            .map(|(_, i)| usize::from(*i))
    }
}

/// The last map parsed: each item's name objects and the positions.
struct Remembered {
    names: SmallVec<[(Py<PyString>, Py<PyString>); 2]>,
    donated: SmallVec<[(u8, u8); 2]>,
}

/// The last `donate=` map a callable parsed.
#[derive(Default)]
pub(crate) struct DonationMemo(Mutex<Option<Remembered>>);

/// The kernel's names a map is checked against.
pub(crate) struct Names<'a> {
    pub kernel: &'a str,
    pub inputs: &'a [String],
    pub outputs: &'a [String],
}

impl DonationMemo {
    /// The donated (output, input) positions of `donate` (absent or `None`:
    /// none), sorted by output. `parsed` is set when the map was not the
    /// remembered one.
    pub(crate) fn parse(
        &self,
        donate: Option<&Bound<'_, PyAny>>,
        names: &Names<'_>,
        parsed: &mut bool,
    ) -> PyResult<SmallVec<[(u8, u8); 2]>> {
        let Some(donate) = donate.filter(|d| !d.is_none()) else {
            return Ok(SmallVec::new());
        };
        let Ok(dict) = donate.cast::<PyDict>() else {
            return Err(errors::argument_type(format!(
                "kernel `{}`: donate must be a dict of output names to input names, got {}",
                names.kernel,
                describe(donate)
            )));
        };
        {
            let memo = self.0.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(m) = memo.as_ref().filter(|m| m.names.len() == dict.len()) {
                let same = |kept: &Py<PyString>, given: &Bound<'_, PyAny>| {
                    given.is(kept)
                        || given.cast::<PyString>().is_ok_and(|g| {
                            g.to_cow().ok().as_deref()
                                == kept.bind(donate.py()).to_cow().ok().as_deref()
                        })
                };
                if dict
                    .iter()
                    .zip(&m.names)
                    .all(|((o, i), (ko, ki))| same(ko, &o) && same(ki, &i))
                {
                    return Ok(m.donated.clone());
                }
            }
        }
        *parsed = true;
        let mut kept = SmallVec::new();
        let mut donated: SmallVec<[(u8, u8); 2]> = SmallVec::new();
        for (o, i) in dict.iter() {
            let (Ok(os), Ok(is)) = (o.cast::<PyString>(), i.cast::<PyString>()) else {
                return Err(errors::argument_type(format!(
                    "kernel `{}`: donate maps output names to input names (str to str), got {} \
                     to {}",
                    names.kernel,
                    describe(&o),
                    describe(&i)
                )));
            };
            let (out, inp) = (os.to_cow()?, is.to_cow()?);
            let bad = |reason: String| {
                errors::donation(format!(
                    "kernel `{}`: output `{out}` cannot be input `{inp}`'s buffer: {reason}",
                    names.kernel
                ))
            };
            let Some(op) = names.outputs.iter().position(|n| *n == *out) else {
                return Err(bad(format!(
                    "the kernel has no output `{out}` (outputs: {})",
                    names.outputs.join(", ")
                )));
            };
            let Some(ip) = names.inputs.iter().position(|n| *n == *inp) else {
                return Err(bad(format!(
                    "the kernel has no input `{inp}` (inputs: {})",
                    names.inputs.join(", ")
                )));
            };
            if let Some(&(other, _)) = donated.iter().find(|(_, j)| usize::from(*j) == ip) {
                return Err(bad(format!(
                    "input `{inp}` is donated to output `{}` already; an input's buffer can be \
                     one output only",
                    names.outputs[usize::from(other)]
                )));
            }
            // Positions past 255 cannot be: a kernel's names are fewer.
            donated.push((op as u8, ip as u8));
            kept.push((os.clone().unbind(), is.clone().unbind()));
        }
        let mut sorted = donated.clone();
        sorted.sort_unstable();
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(Remembered {
            names: kept,
            donated: sorted.clone(),
        });
        Ok(sorted)
    }
}

/// A `DonationError` for output `output` and input `input` of `kernel`.
pub(crate) fn refused(kernel: &str, output: &str, input: &str, reason: &str) -> PyErr {
    errors::donation(format!(
        "kernel `{kernel}`: output `{output}` cannot be input `{input}`'s buffer: {reason}"
    ))
}
