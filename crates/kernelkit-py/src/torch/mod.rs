//! torch tensors: read, made, and called with, in the order a call tries
//! its routes.
//!
//! ```text
//!  kernel(inputs=..., out=..., ...)
//!   │
//!   ├─ the call entry (vectorcall, `crate::kernel` entry; Python 3.12+)
//!   │    keywords matched by the identity of the call site's name tuple;
//!   │    positional arguments, an unknown name, verbose=True, a value of
//!   │    an unexpected type → PyO3's `call` method, which parses them
//!   │    (and then the same routes below)
//!   ▼
//!  [repeat]  one pass: torch `out=` lists (or every output donated),
//!   │        every tensor a `torch.Tensor` or `nn.Parameter` read in place
//!   │        on one GPU, a layout (donations and allow_overlap included) a
//!   │        launch was kept for, `output_shapes`/`output_dtypes` the kept
//!   │        outputs' own, `stream=` torch's current stream → launch, bump
//!   │        the outputs' versions, done
//!   │  anything else (no shim, a new layout, device=/init_value= given,
//!   │  anything that could raise) → nothing done yet, next route
//!   ▼
//!  [path]    the general call's torch route: its arguments converted (each
//!   │        tensor read once, through the shim or its methods), all
//!   │        tensors plain on one GPU, no device=/init_value=/verbose=,
//!   │        stream= torch's current one → the kept launch for the
//!   │        layout, or a new one
//!   │        prepared and kept ([`crate::rebound`])
//!   │  another array, the CPU, a launch that cannot be kept → next route
//!   ▼
//!  the general path (`crate::kernel`'s call): every kind of array
//!  (NumPy, torch through [`tensors`], `__cuda_array_interface__`,
//!  `__dlpack__`: `crate::array_args`), any stream and device; it words
//!  every error.
//! ```
//!
//! Each route hands a call on having done nothing Python can see, so the
//! next one behaves as if it had been first.
//!
//! - [`tensors`]: a tensor read through the shim (`crate::ffi::torch_shim`)
//!   or its methods, outputs made by torch's allocator, torch's current
//!   stream, version bumps, and the test hooks.
//! - [`repeat`]: the one-pass route.
//! - [`path`]: the general call's torch route.

pub mod path;
pub mod repeat;
pub mod tensors;

pub(crate) use tensors::*;
