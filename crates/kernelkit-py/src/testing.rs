//! The extension's test hooks, in its `_testing` submodule
//! (`kernelkit._kernelkit._testing`, re-exported by the Python module
//! `kernelkit._testing`): what the package's tests and benchmarks use to
//! look inside a call, kept off the extension module's own names, which
//! are the package's interface.
//!
//! - `torch_shim(on=None)`: turns the reads through torch's C functions on
//!   or off, answers whether tensors are read through them (tests and
//!   benchmarks compare both reads);
//! - `torch_cdata_slot()`: whether a `torch.Tensor`'s `TensorImpl` address
//!   is read from its object's memory;
//! - `torch_layout(t)`: a tensor's layout as a call reads it;
//! - `call_routes()`: how many calls took each route, and how many
//!   arguments were parsed anew (`crate::kernel::route`);
//! - `cdata_slot_check(types, probes, objects)`: the `TensorImpl` slot's
//!   search, on objects that hold a known word (checked without torch).

use pyo3::prelude::*;

use crate::{ffi, torch};

/// The `_testing` submodule, with every hook.
pub(crate) fn module(py: Python<'_>) -> PyResult<Bound<'_, PyModule>> {
    let m = PyModule::new(py, "_testing")?;
    m.add_function(wrap_pyfunction!(torch::_torch_shim, &m)?)?;
    m.add_function(wrap_pyfunction!(torch::_torch_cdata_slot, &m)?)?;
    m.add_function(wrap_pyfunction!(torch::_torch_layout, &m)?)?;
    m.add_function(wrap_pyfunction!(crate::kernel::route::call_routes, &m)?)?;
    m.add_function(wrap_pyfunction!(
        ffi::tensor_impl_slot::_cdata_slot_check,
        &m
    )?)?;
    Ok(m)
}
