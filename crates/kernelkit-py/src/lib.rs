//! # kernelkit for Python
//!
//! The extension module `kernelkit._kernelkit`, re-exported by the Python
//! package `kernelkit`: MLX's `metal_kernel` / `cuda_kernel` interface over
//! kernelkit, on NumPy arrays.
//!
//! ```python
//! import numpy as np, kernelkit as kk
//! k = kk.metal_kernel(name="add_offset", input_names=["inp"], output_names=["out"],
//!                     source="uint i = thread_position_in_grid.x; out[i] = inp[i] + OFFSET;")
//! x = np.ones(1024, np.float32)
//! (y,) = k(inputs=[x], template=[("OFFSET", 3)], grid=(1024, 1, 1), threadgroup=(256, 1, 1),
//!          output_shapes=[x.shape], output_dtypes=[x.dtype])
//! ```
//!
//! ## The path of a call
//!
//! `metal_kernel(...)` builds one kernelkit [`Kernel`](kernelkit::Kernel)
//! (names checked, body scanned) and returns a callable that keeps it, so
//! every call shares its variant memo. A call converts its arguments
//! ([`args`]: extents, shapes, dtypes, template values; [`arrays`]: the
//! inputs), then releases the GIL for everything kernelkit does: the variant
//! lookup, the compile (once per variant per device, however many threads
//! ask), the load, the launch and the read-back of the outputs.
//!
//! ## Modules
//!
//! - [`kernel`]: `metal_kernel`, `cuda_kernel`, the callable.
//! - [`rebound`]: the launches prepared for the layouts of a kernel's last
//!   torch calls (a warm call on torch tensors only reads them and
//!   launches).
//! - [`args`]: call arguments as kernelkit values (template memo).
//! - [`array_args`]: what each array argument of a call is (a scalar, a
//!   NumPy array, a torch tensor, a foreign array) and the kernelkit array
//!   over its memory.
//! - [`array_protocols`]: arrays of other libraries through
//!   `__cuda_array_interface__` and `__dlpack__`.
//! - [`dlpack_outputs`]: `kernelkit.Array`, the outputs handed over through
//!   DLPack when the inputs' library has no arrays kernelkit can make.
//! - [`arrays`]: NumPy arrays and scalars in and out: in place on the CPU,
//!   copied to and from a GPU.
//! - [`strided_copy`]: a strided NumPy array as a kernelkit view of one
//!   copied block (pure arithmetic).
//! - [`dtypes`]: objects that name a dtype (NumPy, PyTorch, MLX, names).
//! - [`device`]: `Device`, `Stream`, `new_stream`, `clear_streams`,
//!   `cache_stats`.
//! - [`torch`]: torch tensors read, made, and torch's current stream, and
//!   the routes a call tries in order (drawn in its documentation).
//! - [`ffi`]: the foreign-function layer, the only code of the crate that
//!   Rust cannot check (torch's C functions, NumPy's fields, DLPack
//!   capsules, kept launches).
//! - [`jax`]: kernels inside JAX programs: the XLA FFI handler's stages
//!   and the kernel identities its attributes carry.
//! - [`errors`]: the exception hierarchy (defined in `kernelkit/_errors.py`).
//! - [`worker`]: the interpreter as kernelkit's CUDA compile worker.
//! - [`testing`]: the test hooks, in the `_testing` submodule.

// The modules are public for their documentation; their items are the
// crate's own, and the docs link to them for whoever reads the crate.
#![allow(rustdoc::private_intra_doc_links)]

use pyo3::prelude::*;

pub mod args;
pub mod array_args;
pub mod array_protocols;
pub mod arrays;
pub mod constructors;
pub mod device;
pub mod dlpack_outputs;
pub mod donation;
pub mod dtypes;
pub mod errors;
pub mod ffi;
pub mod jax;
pub mod kernel;
pub mod production;
pub mod rebound;
pub mod streams;
pub mod strided_copy;
pub mod testing;
pub mod torch;
pub mod tune;
pub mod worker;

use device::{Place, PyDevice, PyStream};

/// kernelkit's log on standard error, when `KERNELKIT_LOG` gives a
/// `tracing` filter (as for the CLI: `debug` says where each compile ran
/// and how long it and the module's load took); nothing otherwise.
fn log_from_env() {
    if let Ok(filter) = tracing_subscriber::EnvFilter::try_from_env("KERNELKIT_LOG") {
        // Another subscriber already set (by an embedding program) stays.
        let _ = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(std::io::stderr)
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .with_thread_ids(true)
            .try_init();
    }
}

/// The extension module. It needs the GIL: the torch shim's reads of a
/// tensor's own size and stride arrays, the `TensorImpl` slot and NumPy
/// buffers held across reads are safe only while no other thread runs
/// Python code (a free-threaded Python then keeps the GIL on while it is
/// loaded).
#[pymodule(gil_used = true)]
fn _kernelkit(m: &Bound<'_, PyModule>) -> PyResult<()> {
    log_from_env();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<PyDevice>()?;
    m.add_class::<PyStream>()?;
    m.add_class::<kernel::PyKernel>()?;
    m.add_class::<dlpack_outputs::PyArray>()?;
    m.add_class::<tune::PyTuned>()?;
    m.add_function(wrap_pyfunction!(constructors::metal_kernel, m)?)?;
    m.add_function(wrap_pyfunction!(constructors::cuda_kernel, m)?)?;
    m.add_function(wrap_pyfunction!(device::new_stream, m)?)?;
    m.add_function(wrap_pyfunction!(device::clear_streams, m)?)?;
    m.add_function(wrap_pyfunction!(device::cache_stats, m)?)?;
    m.add_function(wrap_pyfunction!(worker::_compile_worker, m)?)?;
    m.add_function(wrap_pyfunction!(worker::_worker_command, m)?)?;
    m.add_function(wrap_pyfunction!(kernel::_call_entry, m)?)?;
    m.add_function(wrap_pyfunction!(tune::_tuned_entry, m)?)?;
    m.add_class::<jax::PyJaxKernel>()?;
    m.add_function(wrap_pyfunction!(jax::_jax_kernel, m)?)?;
    m.add_function(wrap_pyfunction!(jax::_jax_targets, m)?)?;
    m.add_function(wrap_pyfunction!(production::_record_start, m)?)?;
    m.add_function(wrap_pyfunction!(production::_record_stop, m)?)?;
    m.add_function(wrap_pyfunction!(production::set_jit, m)?)?;
    m.add_function(wrap_pyfunction!(production::jit_policy, m)?)?;
    m.add_function(wrap_pyfunction!(production::precompile, m)?)?;
    m.add_function(wrap_pyfunction!(production::import_bundle, m)?)?;
    m.add_function(wrap_pyfunction!(production::keygen, m)?)?;
    m.add_submodule(&testing::module(m.py())?)?;
    m.add("cpu", PyDevice::at(Place::Cpu))?;
    m.add("gpu", PyDevice::at(Place::Cuda(0)))?;
    Ok(())
}
