//! A tuned kernel's call entry for vectorcall, as the kernel's own
//! (`crate::kernel::call_entry`): the keywords taken from the caller's
//! array and name tuple without PyO3's parsing, and the kernel's routes
//! run with the tuned kernel's part in them ([`super::hook::Hook`]),
//! which finds the configuration from what each route reads. A call the
//! entry does not take whole goes to the tuned kernel's `call` method,
//! which parses it.

use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

use super::hook::Hook;
use super::{Given, PyTuned};
use crate::ffi::vectorcall::{self, Args, Def, Handler};
use crate::kernel::call_entry::{
    by_method, take, DEVICE, GRID, INPUTS, OUT, OUTPUT_DTYPES, OUTPUT_SHAPES, STREAM, TEMPLATE,
};
use crate::kernel::route::{self, Route};
use crate::torch;

/// One call through the entry: taken whole, or handed to `call`.
fn enter<'py>(tuned: &Bound<'py, PyTuned>, call: &Args<'_, 'py>) -> PyResult<Bound<'py, PyList>> {
    let Some(taken) = take(call) else {
        return by_method(tuned.as_any(), call);
    };
    let Some(inputs) = taken.optional(INPUTS) else {
        return by_method(tuned.as_any(), call);
    };
    route::note(Route::Entry);
    let (py, tuned) = (call.py(), tuned.get());
    let given = Given {
        inputs,
        grid: taken.optional(GRID),
        output_shapes: taken.optional(OUTPUT_SHAPES),
        output_dtypes: taken.optional(OUTPUT_DTYPES),
        template: taken.optional(TEMPLATE),
        init_value: taken.init_value(),
        stream: taken.optional(STREAM),
        device: taken.optional(DEVICE),
        out: taken.optional(OUT),
    };
    let kernel = tuned.native.get();
    let none = py.None().into_bound(py);
    let mut args = taken.args(inputs, &none, &none, None);
    let hook = Hook {
        tuned,
        given: &given,
    };
    args.tune = Some(&hook);
    // torch tensors: the one-pass route first (`out=`), its launch the one
    // the tuned kernel kept for the call's layout; then the general path,
    // whose torch path finds it the same way, and which otherwise chooses
    // from the arguments as it converts them.
    if first_is_torch(inputs) {
        if let Some(done) = kernel.repeat(&args) {
            return done;
        }
    }
    Python::attach(|_| kernel.general(args))
}

/// Whether the first input is a plain torch tensor (every torch route
/// needs all of them to be).
fn first_is_torch(inputs: &Bound<'_, PyAny>) -> bool {
    let first = if let Ok(list) = inputs.cast::<PyList>() {
        list.get_item(0).ok()
    } else if let Ok(tuple) = inputs.cast::<PyTuple>() {
        tuple.get_item(0).ok()
    } else {
        None
    };
    first.is_some_and(|f| torch::is_plain_tensor(&f))
}

/// The tuned kernel's call, as the vectorcall function's handler.
struct TunedCall;

impl Handler for TunedCall {
    fn call<'py>(slf: &Bound<'py, PyAny>, args: Args<'_, 'py>) -> PyResult<Bound<'py, PyList>> {
        enter(slf.cast::<PyTuned>()?, &args)
    }
}

static CALL: Def = Def::new::<TunedCall>(
    c"call",
    c"call($self, /, *, inputs, grid=None, threadgroup=None, output_shapes=None, output_dtypes=None, template=None, init_value=None, verbose=False, stream=None, device=None, out=None, donate=None, allow_overlap=False)\n--\n\nA tuned kernel's call, through vectorcall (the package's `Autotuned` calls it).",
);

/// `tuned`'s call as a function object that takes its keywords through
/// vectorcall without PyO3's parsing (the package's `Autotuned` wraps it).
#[pyfunction]
pub(crate) fn _tuned_entry<'py>(tuned: &Bound<'py, PyTuned>) -> PyResult<Bound<'py, PyAny>> {
    vectorcall::function(tuned.as_any(), &CALL)
}
