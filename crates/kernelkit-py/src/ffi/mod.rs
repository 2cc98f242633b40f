//! The package's foreign-function layer: where it reads memory and calls
//! code that Rust cannot check. Nothing outside it is `unsafe`.
//!
//! In the spirit of cudarc's layering: the raw parts (C functions, object
//! fields, capsule pointers) stay private to each module here; each module
//! hands the rest of the crate small safe functions that check what can be
//! checked (a span against an array's shape, a capsule's name, a layout
//! against a kept launch's) and state the rest in their `SAFETY` argument.
//!
//! - [`torch_shim`]: torch's C functions (and the few C++ ones it exports)
//!   over a tensor's `TensorImpl`, opened from the libraries torch loaded
//!   and checked against the tensor's methods before first use.
//! - [`tensor_impl_slot`]: a `torch.Tensor`'s `TensorImpl` address, read
//!   from the Python object's own memory at an offset found by probing.
//! - [`vectorcall`]: a function object CPython calls through vectorcall,
//!   its arguments borrowed from the caller (the kernel's call entry).
//! - [`kept_launch`]: kept launches run with a call's tensors' addresses,
//!   once their layouts were found to fit.
//! - [`numpy`]: NumPy arrays' fields and memory, spans checked.
//! - [`dlpack`]: DLPack capsules taken from producers and handed out.
//! - [`xla_ffi`]: XLA's FFI C ABI (`xla/ffi/api/c_api.h`): the call
//!   frame, buffers, attributes, state and stream, and the `extern "C"`
//!   handlers `kernelkit.jax` registers.
//! - [`foreign`]: memory and streams another library declares through its
//!   own protocol (torch's methods, `__cuda_array_interface__`), taken at
//!   its word.

pub mod dlpack;
pub mod foreign;
pub mod kept_launch;
pub mod numpy;
pub mod tensor_impl_slot;
pub mod torch_shim;
pub mod vectorcall;
pub mod xla_ffi;
