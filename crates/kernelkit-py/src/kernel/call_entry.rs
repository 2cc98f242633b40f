//! A kernel's call entry for vectorcall, without PyO3's argument parsing.
//!
//! The package's `Kernel` (Python 3.12 and later, `kernelkit/_kernel.py`)
//! is a `functools.partial` over a callable that takes a call's keywords
//! through vectorcall: their values in an array, their names in a tuple.
//! Through PyO3's method (`call`) each call then matches every keyword name
//! against the parameters by its text, and goes through PyO3's generic
//! extraction: past the launch, the largest part of the package's code a
//! warm call runs (BENCHMARKS.md has the figures).
//!
//! A call site's keyword names are one tuple, a constant of the caller's
//! code, passed again at every call. This entry remembers, for the last
//! few such tuples, which parameter each name is ([`NAMES`]): a call from
//! a site seen before finds its parameters by one pointer comparison. Any
//! call it does not take whole (positional arguments, a name it does not
//! know, `verbose=True`, an `init_value=` that is not a float or an int, an
//! `allow_overlap=` that is not a bool) goes to PyO3's `call` method
//! unchanged, which parses it and words any error exactly as before.
//!
//! PyO3's own entries count the thread as attached in PyO3's bookkeeping
//! (private to PyO3), so that a `Py` dropped during the call is released at
//! once rather than through PyO3's deferred pool. The one-pass torch call
//! (`repeat`) drops none, and runs without that count; a call that takes
//! the general path runs inside `Python::attach`, which counts it (the
//! GIL is held already: `PyGILState_Ensure` only counts too). Panics become
//! `PanicException`s, as PyO3 makes them.

use std::sync::Mutex;

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

use super::call::CallArgs;
use super::route::{self, Route};
use super::PyKernel;
use crate::ffi::vectorcall::{self, Args, Def, Handler};

/// The parameters, in the order of `call`'s signature.
const PARAMS: [&str; 13] = [
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
    "donate",
    "allow_overlap",
];
pub(crate) const INPUTS: usize = 0;
pub(crate) const GRID: usize = 1;
pub(crate) const THREADGROUP: usize = 2;
pub(crate) const OUTPUT_SHAPES: usize = 3;
pub(crate) const OUTPUT_DTYPES: usize = 4;
pub(crate) const TEMPLATE: usize = 5;
const INIT_VALUE: usize = 6;
const VERBOSE: usize = 7;
pub(crate) const STREAM: usize = 8;
pub(crate) const DEVICE: usize = 9;
pub(crate) const OUT: usize = 10;
const DONATE: usize = 11;
const ALLOW_OVERLAP: usize = 12;

/// Keyword-name tuples remembered at most (a program's call sites of
/// kernels; a site not remembered is still taken, its names matched anew).
const SITES: usize = 8;

/// A call site's keyword names and the parameter each one is. The strong
/// reference keeps the tuple, so its address is no other tuple's while it
/// is remembered.
struct Site {
    names: Py<PyTuple>,
    params: Params,
}

/// The parameter (an index into [`PARAMS`]) of each of a call's keywords,
/// in their order.
#[derive(Clone, Copy)]
struct Params {
    of: [u8; PARAMS.len()],
    len: u8,
}

impl Params {
    fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.of[..usize::from(self.len)]
            .iter()
            .map(|&p| usize::from(p))
    }
}

/// The sites seen, newest last.
static NAMES: Mutex<Vec<Site>> = Mutex::new(Vec::new());

/// The parameter each of `names` is, when each is one of [`PARAMS`] and
/// none is given twice.
fn match_names(names: &Bound<'_, PyTuple>) -> Option<Params> {
    let mut params = Params {
        of: [0; PARAMS.len()],
        len: 0,
    };
    for name in names.iter() {
        let name = name.cast::<PyString>().ok()?.to_cow().ok()?;
        let p = PARAMS.iter().position(|&p| p == name)?;
        let len = usize::from(params.len);
        if len == PARAMS.len() || params.iter().any(|q| q == p) {
            return None;
        }
        params.of[len] = p as u8;
        params.len += 1;
    }
    Some(params)
}

/// The parameters of `names`' keywords: remembered, else matched (and
/// remembered); `None` when a name is not a parameter.
fn params_of(names: &Bound<'_, PyTuple>) -> Option<Params> {
    // The GIL serialises callers; `try_lock` only keeps a poisoned or
    // (in a free-threaded build) contended lock from blocking a call.
    let sites = NAMES.try_lock().ok();
    if let Some(site) = sites
        .as_ref()
        .and_then(|s| s.iter().rev().find(|s| s.names.as_ptr() == names.as_ptr()))
    {
        return Some(site.params);
    }
    drop(sites);
    let params = match_names(names)?;
    if let Ok(mut sites) = NAMES.try_lock() {
        if sites.len() == SITES {
            sites.remove(0);
        }
        sites.push(Site {
            names: names.clone().unbind(),
            params,
        });
    }
    Some(params)
}

/// A call's keyword arguments as the entry takes them: each parameter's
/// value (absent when not given, or given as `None`), `init_value` read
/// and `allow_overlap` a bool.
pub(crate) struct Taken<'a, 'py> {
    py: Python<'py>,
    given: [Option<Borrowed<'a, 'py, PyAny>>; PARAMS.len()],
    init_value: Option<f64>,
    allow_overlap: bool,
}

impl<'a, 'py> Taken<'a, 'py> {
    /// Parameter `p` (an index into [`PARAMS`]), unless absent or `None`.
    pub(crate) fn optional(&self, p: usize) -> Option<&Bound<'py, PyAny>> {
        self.given[p].as_deref().filter(|v| !v.is_none())
    }

    /// `init_value=`, read.
    pub(crate) fn init_value(&self) -> Option<f64> {
        self.init_value
    }

    /// The call's arguments with these `inputs`, `grid`, `threadgroup` and
    /// `template` (the tuned call gives its own), the rest as taken.
    pub(crate) fn args<'s>(
        &'s self,
        inputs: &'s Bound<'py, PyAny>,
        grid: &'s Bound<'py, PyAny>,
        threadgroup: &'s Bound<'py, PyAny>,
        template: Option<&'s Bound<'py, PyAny>>,
    ) -> CallArgs<'s, 'py> {
        CallArgs {
            py: self.py,
            inputs,
            grid,
            threadgroup,
            output_shapes: self.optional(OUTPUT_SHAPES),
            output_dtypes: self.optional(OUTPUT_DTYPES),
            template,
            init_value: self.init_value,
            verbose: false,
            stream: self.optional(STREAM),
            device: self.optional(DEVICE),
            out: self.optional(OUT),
            donate: self.optional(DONATE),
            allow_overlap: self.allow_overlap,
            tune: None,
        }
    }
}

/// A call's keywords, when the entry can take them whole: keywords only,
/// each a parameter, `verbose` absent or `False`, `allow_overlap` a bool,
/// `init_value` a float or an int. `None`: PyO3's parsing takes the call
/// (and words any error).
pub(crate) fn take<'a, 'py>(call: &Args<'a, 'py>) -> Option<Taken<'a, 'py>> {
    let (py, positional) = (call.py(), call.positional());
    let params = match call.names() {
        Some(names) if positional == 0 => params_of(names)?,
        _ => return None,
    };
    let mut given: [Option<Borrowed<'a, 'py, PyAny>>; PARAMS.len()] = [None; PARAMS.len()];
    for (p, i) in params.iter().zip(positional..call.len()) {
        given[p] = Some(call.get(i));
    }
    // An optional parameter given as `None` is left out, as PyO3's
    // `Option` takes it; `verbose` must be `False` itself (a print is no
    // fast call; PyO3's parsing takes `True` and refuses anything else),
    // `allow_overlap` `True` or `False` itself, `init_value` a float or an
    // int (anything else is `call`'s error to word).
    let optional = |p: usize| given[p].as_deref().filter(|v| !v.is_none());
    let (yes, no) = (
        pyo3::types::PyBool::new(py, true),
        pyo3::types::PyBool::new(py, false),
    );
    if given[VERBOSE].is_some_and(|v| !v.is(&*no)) {
        return None;
    }
    let allow_overlap = match optional(ALLOW_OVERLAP) {
        None => false,
        Some(v) if v.is(&*yes) => true,
        Some(v) if v.is(&*no) => false,
        Some(_) => return None,
    };
    let init_value = match optional(INIT_VALUE) {
        None => None,
        Some(v) if v.is_instance_of::<PyFloat>() || v.is_exact_instance_of::<PyInt>() => {
            Some(v.extract::<f64>().ok()?)
        }
        Some(_) => return None,
    };
    Some(Taken {
        py,
        given,
        init_value,
        allow_overlap,
    })
}

/// One call through the entry: taken whole, or handed to `call`.
fn enter<'py>(kernel: &Bound<'py, PyKernel>, call: &Args<'_, 'py>) -> PyResult<Bound<'py, PyList>> {
    // A required argument absent or `None` is `call`'s error to raise.
    let Some(taken) = take(call) else {
        return by_method(kernel.as_any(), call);
    };
    let (Some(inputs), Some(grid), Some(threadgroup)) = (
        taken.optional(INPUTS),
        taken.optional(GRID),
        taken.optional(THREADGROUP),
    ) else {
        return by_method(kernel.as_any(), call);
    };
    route::note(Route::Entry);
    let args = taken.args(inputs, grid, threadgroup, taken.optional(TEMPLATE));
    kernel.get().run_taken(args)
}

impl PyKernel {
    /// A call the entry took: the one-pass torch route, else the general
    /// path.
    pub(crate) fn run_taken<'py>(&self, args: CallArgs<'_, 'py>) -> PyResult<Bound<'py, PyList>> {
        if let Some(done) = self.repeat(&args) {
            return done;
        }
        // The general path keeps references to the call's arrays and drops
        // them after the launch: with the thread counted as attached, as
        // PyO3's own entries count it, they are released at once.
        Python::attach(|_| self.general(args))
    }
}

/// The call through PyO3's `call` method, which parses and checks it.
#[cold]
#[inline(never)]
pub(crate) fn by_method<'py>(
    callable: &Bound<'py, PyAny>,
    call: &Args<'_, 'py>,
) -> PyResult<Bound<'py, PyList>> {
    let (py, positional) = (call.py(), call.positional());
    let arg = |i: usize| call.get(i).to_owned();
    let pos = PyTuple::new(py, (0..positional).map(arg))?;
    let kwargs = PyDict::new(py);
    if let Some(names) = call.names() {
        for (name, i) in names.iter().zip(positional..call.len()) {
            kwargs.set_item(name, arg(i))?;
        }
    }
    Ok(callable
        .getattr(intern!(py, "call"))?
        .call(pos, Some(&kwargs))?
        .cast_into::<PyList>()?)
}

/// The kernel's call, as the vectorcall function's handler.
struct KernelCall;

impl Handler for KernelCall {
    fn call<'py>(slf: &Bound<'py, PyAny>, args: Args<'_, 'py>) -> PyResult<Bound<'py, PyList>> {
        enter(slf.cast::<PyKernel>()?, &args)
    }
}

static CALL: Def = Def::new::<KernelCall>(
    c"call",
    c"call($self, /, *, inputs, grid, threadgroup, output_shapes=None, output_dtypes=None, template=None, init_value=None, verbose=False, stream=None, device=None, out=None, donate=None, allow_overlap=False)\n--\n\nThe same as calling the kernel, through vectorcall (the package's `Kernel` calls it).",
);

/// `kernel`'s call as a function object that takes its keywords through
/// vectorcall without PyO3's parsing (the package's `Kernel` wraps it).
#[pyfunction]
pub(crate) fn _call_entry<'py>(kernel: &Bound<'py, PyKernel>) -> PyResult<Bound<'py, PyAny>> {
    vectorcall::function(kernel.as_any(), &CALL)
}
