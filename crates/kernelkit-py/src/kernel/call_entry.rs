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
const INIT_VALUE: usize = 6;
const VERBOSE: usize = 7;
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

/// One call through the entry: taken whole, or handed to `call`.
fn enter<'py>(kernel: &Bound<'py, PyKernel>, call: &Args<'_, 'py>) -> PyResult<Bound<'py, PyList>> {
    let (py, positional) = (call.py(), call.positional());
    let params = match call.names() {
        Some(names) if positional == 0 => params_of(names),
        _ => None,
    };
    let mut given: [Option<Borrowed<'_, 'py, PyAny>>; PARAMS.len()] = [None; PARAMS.len()];
    if let Some(params) = &params {
        for (p, i) in params.iter().zip(positional..call.len()) {
            given[p] = Some(call.get(i));
        }
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
    let print = given[VERBOSE].is_some_and(|v| !v.is(&*no));
    let allow_overlap = match optional(ALLOW_OVERLAP) {
        None => Some(false),
        Some(v) if v.is(&*yes) => Some(true),
        Some(v) if v.is(&*no) => Some(false),
        Some(_) => None,
    };
    let init_value = match optional(INIT_VALUE) {
        None => Some(None),
        Some(v) if v.is_instance_of::<PyFloat>() || v.is_exact_instance_of::<PyInt>() => {
            v.extract::<f64>().ok().map(Some)
        }
        Some(_) => None,
    };
    // A required argument absent or `None` is `call`'s error to raise.
    let (
        Some(_),
        Some(inputs),
        Some(grid),
        Some(threadgroup),
        false,
        Some(allow_overlap),
        Some(init_value),
    ) = (
        &params,
        optional(0),
        optional(1),
        optional(2),
        print,
        allow_overlap,
        init_value,
    )
    else {
        return by_method(kernel, call);
    };
    route::note(Route::Entry);
    let args = CallArgs {
        py,
        inputs,
        grid,
        threadgroup,
        output_shapes: optional(3),
        output_dtypes: optional(4),
        template: optional(5),
        init_value,
        verbose: false,
        stream: optional(8),
        device: optional(9),
        out: optional(10),
        donate: optional(DONATE),
        allow_overlap,
    };
    let kernel = kernel.get();
    if let Some(done) = kernel.repeat(&args) {
        return done;
    }
    // The general path keeps references to the call's arrays and drops
    // them after the launch: with the thread counted as attached, as
    // PyO3's own entries count it, they are released at once.
    Python::attach(|_| kernel.general(args))
}

/// The call through PyO3's `call` method, which parses and checks it.
#[cold]
#[inline(never)]
fn by_method<'py>(
    kernel: &Bound<'py, PyKernel>,
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
    Ok(kernel
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
