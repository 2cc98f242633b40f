//! Which route each call took, counted for the tests (`kernelkit._testing.
//! call_routes()`): a warm call is on the fast path when the call entry
//! took it whole (not PyO3's parsing), nothing of it was parsed anew (every
//! argument found in its memo, by identity or by value), and, for torch
//! tensors, the one-pass route launched it. Relaxed counters: a few
//! nanoseconds a call, nothing else depends on them.

use std::sync::atomic::{AtomicU64, Ordering};

use pyo3::prelude::*;
use pyo3::types::PyDict;

/// A route a call took, or a step of one.
#[derive(Clone, Copy)]
pub(crate) enum Route {
    /// The vectorcall entry took the call's keywords itself.
    Entry,
    /// PyO3's parsing (`call`/`__call__`, or the entry handing over).
    Method,
    /// The one-pass torch route (`crate::torch::repeat`) launched it.
    Repeat,
    /// The torch route found a kept launch for the layout.
    TorchKept,
    /// The torch route prepared a launch for a new layout.
    TorchNew,
    /// The general path ran it.
    General,
    /// An argument was parsed anew: not found in its memo.
    Parsed,
}

const NAMES: [&str; 7] = [
    "entry",
    "method",
    "repeat",
    "torch_kept",
    "torch_new",
    "general",
    "parsed",
];

static COUNTS: [AtomicU64; 7] = [const { AtomicU64::new(0) }; 7];

/// Counts one call (or step) of `route`.
#[inline(always)]
pub(crate) fn note(route: Route) {
    COUNTS[route as usize].fetch_add(1, Ordering::Relaxed);
}

/// The counts of each route since the process started, by name.
#[pyfunction]
pub(crate) fn call_routes(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    for (name, count) in NAMES.iter().zip(&COUNTS) {
        d.set_item(name, count.load(Ordering::Relaxed))?;
    }
    Ok(d)
}
