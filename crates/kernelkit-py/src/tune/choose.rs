//! The tuned call's cold path: the library chooses (`Tuning::best`, which
//! times only when no cache tier has a record for the call's key).
//!
//! The library call is built from the call's inputs as the kernel's own
//! call converts them. The grid of each
//! configuration for this call, and the user's key, are computed in Python
//! (they are Python callables of the Python inputs) before, and handed to
//! the engine's grid and key functions through this thread's [`CALL`]
//! slot, set only while one choice runs.

use std::cell::RefCell;

use kernelkit::{Array, Stream, TuneConfig, Tuning};
use pyo3::prelude::*;
use smallvec::SmallVec;

use crate::args::{OutputSpec, Template};
use crate::array_args::{Frame, Source};
use crate::errors::{self, IntoPy};
use crate::kernel::PyKernel;

/// What the engine's grid and key functions read during one choice.
#[derive(Default)]
struct CallSlot {
    /// Per configuration (by index), its grid for this call, if computed.
    grids: Vec<Option<[u64; 3]>>,
    /// The user's key for this call, if the tuner has a key function.
    key: String,
}

thread_local! {
    static CALL: RefCell<CallSlot> = RefCell::new(CallSlot::default());
}

/// The library's tuning over `configs`: grids and the user's key (when
/// `keyed`) read from the [`CALL`] slot.
pub(super) fn tuning(configs: Vec<TuneConfig>, keyed: bool) -> Tuning {
    let ids: Vec<String> = configs.iter().map(|c| c.id().to_string()).collect();
    let tuning = Tuning::new(configs).grid_fn(move |config, _inputs| {
        let index = ids.iter().position(|id| id == config.id());
        CALL.with(|slot| {
            index
                .and_then(|i| slot.borrow().grids.get(i).copied().flatten())
                .unwrap_or([0, 0, 0])
        })
    });
    if keyed {
        tuning.key_fn(|_| CALL.with(|slot| slot.borrow().key.clone()))
    } else {
        tuning
    }
}

/// One call's arguments, as the library's choice needs them.
pub(super) struct Cold<'a> {
    /// Each configuration's grid for this call (`None`: the call's).
    pub(super) grids: Vec<Option<[u64; 3]>>,
    pub(super) outputs: &'a [OutputSpec],
    pub(super) template: &'a Template,
    pub(super) init_value: Option<f64>,
    pub(super) key: Option<String>,
}

/// The stream and the input arrays of a call of `kernel` on `sources`,
/// as the kernel's call finds them.
pub(super) fn arrays_of(
    py: Python<'_>,
    kernel: &PyKernel,
    sources: &[Source<'_>],
    stream: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
) -> PyResult<(Stream, SmallVec<[Array; 4]>)> {
    let first = sources.iter().find(|s| s.place().is_some());
    let frame = first.and_then(Source::frame).unwrap_or(Frame::NumPy);
    let (stream, torch_stream) = kernel.stream(py, stream, device, first, &frame)?;
    let arrays = kernel.arrays(sources, "input", &stream, torch_stream.as_ref())?;
    Ok((stream, arrays))
}

/// The index of the configuration `tuning` chooses for this call of
/// `kernel` on `arrays` and `stream` (tuning its key first if no cache
/// tier has a record).
pub(super) fn choose(
    py: Python<'_>,
    tuning: &Tuning,
    kernel: &kernelkit::Kernel,
    arrays: &[Array],
    stream: &Stream,
    c: Cold<'_>,
) -> PyResult<usize> {
    let (outputs, template) = (c.outputs, c.template);
    let (grids, key, init_value) = (c.grids, c.key, c.init_value);
    let chosen = py.detach(move || {
        CALL.with(|slot| {
            *slot.borrow_mut() = CallSlot {
                grids,
                key: key.unwrap_or_default(),
            }
        });
        let mut call = kernel.call(arrays.iter()).on(stream);
        for (shape, dtype) in outputs {
            call = call.output(shape.iter().copied(), *dtype);
        }
        for (n, v) in template {
            call = call.template(&**n, *v);
        }
        if let Some(v) = init_value {
            call = call.init_value(v);
        }
        let best = tuning.best(&call).map(|c| c.id().to_string());
        CALL.with(|slot| *slot.borrow_mut() = CallSlot::default());
        best
    });
    let chosen = chosen.py_err()?;
    Ok(tuning
        .configs()
        .iter()
        .position(|c| c.id() == chosen)
        .unwrap_or(0))
}

/// The error of a tuned call that gives no outputs' shapes.
pub(super) fn no_outputs(kernel: &str) -> PyErr {
    errors::call(format!(
        "kernel `{kernel}`: autotune needs output_shapes and output_dtypes (or out=)"
    ))
}
