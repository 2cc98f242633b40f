//! The keyword arguments of a kernel call, parsed without PyO3's generic
//! argument machinery.
//!
//! A call passes up to eleven keywords, and Python hands them over as a
//! dict whose keys are, in practice, the interned strings of the caller's
//! code. Each key is matched first by address against this module's
//! interned names (one pointer comparison each), and by text only when
//! that fails (a key built at run time). PyO3's generic parser reads every
//! key as UTF-8 instead, which under the limited API of Python 3.9 copies
//! it: about a tenth of a warm call's instructions.
//!
//! The errors are Python's own for a function declared as
//! `__call__(*, inputs, grid, threadgroup, output_shapes=None, ...)`.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyString, PyTuple};

/// The keywords, in `__call__`'s order.
const NAMES: [&str; 11] = [
    "inputs",
    "grid",
    "threadgroup",
    "output_shapes",
    "output_dtypes",
    "template",
    "init_value",
    "verbose",
    "stream",
    "device",
    "out",
];

/// The first three are required.
const REQUIRED: usize = 3;

/// The interned names, made once.
static INTERNED: PyOnceLock<[Py<PyString>; 11]> = PyOnceLock::new();

/// One call's arguments; `None`: not given, or given as `None`.
pub(crate) struct CallArgs<'a, 'py> {
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
}

/// Which of [`NAMES`] `key` is.
fn slot(py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<usize> {
    let interned = INTERNED.get_or_init(py, || NAMES.map(|n| PyString::intern(py, n).unbind()));
    if let Some(i) = interned.iter().position(|n| key.is(n)) {
        return Ok(i);
    }
    let text = key.cast::<PyString>().ok().and_then(|k| k.to_cow().ok());
    match text.as_deref().and_then(|t| NAMES.iter().position(|n| *n == t)) {
        Some(i) => Ok(i),
        None => Err(PyTypeError::new_err(format!(
            "__call__() got an unexpected keyword argument {}",
            key.repr().map(|r| r.to_string()).unwrap_or_default()
        ))),
    }
}

/// `value` unless it is `None`.
fn given<'a, 'py>(value: &'a Option<Bound<'py, PyAny>>) -> Option<&'a Bound<'py, PyAny>> {
    value.as_ref().filter(|v| !v.is_none())
}

/// The values of [`NAMES`] in a call, before their conversion.
pub(crate) struct Slots<'py>([Option<Bound<'py, PyAny>>; 11]);

impl<'py> Slots<'py> {
    /// Sorts the keywords into their slots: a type error for positional
    /// arguments or an unknown keyword.
    pub(crate) fn of(
        py: Python<'py>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Slots<'py>> {
        if !args.is_empty() {
            let n = args.len();
            return Err(PyTypeError::new_err(format!(
                "__call__() takes 0 positional arguments but {n} {} given",
                if n == 1 { "was" } else { "were" }
            )));
        }
        let mut slots: [Option<Bound<'py, PyAny>>; 11] = Default::default();
        if let Some(kwargs) = kwargs {
            for (key, value) in kwargs.iter() {
                slots[slot(py, &key)?] = Some(value);
            }
        }
        let missing: Vec<String> = NAMES[..REQUIRED]
            .iter()
            .zip(&slots)
            .filter(|(_, v)| v.is_none())
            .map(|(n, _)| format!("'{n}'"))
            .collect();
        if !missing.is_empty() {
            return Err(PyTypeError::new_err(format!(
                "__call__() missing {} required keyword-only argument{}: {}",
                missing.len(),
                if missing.len() == 1 { "" } else { "s" },
                missing.join(", ")
            )));
        }
        Ok(Slots(slots))
    }
}

impl<'a, 'py> CallArgs<'a, 'py> {
    /// The call's arguments from its slots, converted: `init_value` a float,
    /// `verbose` a bool (type errors name them, as PyO3's would).
    pub(crate) fn from_slots(slots: &'a Slots<'py>) -> PyResult<CallArgs<'a, 'py>> {
        let s = &slots.0;
        let required = |i: usize| s[i].as_ref().expect("checked by Slots::of");
        let init_value = given(&s[6])
            .map(|v| v.extract::<f64>())
            .transpose()
            .map_err(|e| PyTypeError::new_err(format!("argument 'init_value': {e}")))?;
        let verbose = match &s[7] {
            None => false,
            Some(v) => v
                .extract::<bool>()
                .map_err(|e| PyTypeError::new_err(format!("argument 'verbose': {e}")))?,
        };
        Ok(CallArgs {
            inputs: required(0),
            grid: required(1),
            threadgroup: required(2),
            output_shapes: given(&s[3]),
            output_dtypes: given(&s[4]),
            template: given(&s[5]),
            init_value,
            verbose,
            stream: given(&s[8]),
            device: given(&s[9]),
            out: given(&s[10]),
        })
    }
}
