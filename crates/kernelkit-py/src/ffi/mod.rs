//! The package's foreign-function layer: where it reads memory and calls
//! code that Rust cannot check.
//!
//! - [`torch_shim`]: torch's C functions (and the few C++ ones it exports)
//!   over a tensor's `TensorImpl`, opened from the libraries torch loaded
//!   and checked against the tensor's methods before first use.
//! - [`tensor_impl_slot`]: a `torch.Tensor`'s `TensorImpl` address, read
//!   from the Python object's own memory at an offset found by probing.
//! - [`vectorcall`]: a function object CPython calls through vectorcall,
//!   its arguments borrowed from the caller (the kernel's call entry).
//!
//! Each unsafe operation sits behind one small function with its `SAFETY`
//! argument; the rest of the crate calls those. (Still outside this layer:
//! NumPy's array fields, the DLPack capsules and the launches of kept
//! launches, each with its own `SAFETY` comment.)

pub mod tensor_impl_slot;
pub mod torch_shim;
pub mod vectorcall;
