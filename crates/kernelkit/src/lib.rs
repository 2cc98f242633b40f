//! # kernelkit
//!
//! Custom GPU and CPU kernels written inline. You give the body of a kernel
//! as a string, name its inputs and outputs, and call it with arrays;
//! kernelkit writes the full source of each *variant* (input dtypes, how each
//! input is passed, output dtypes, template arguments), compiles it once,
//! caches it in memory and on disk, and launches it. It is the Rust
//! counterpart of MLX's `mx.fast.metal_kernel`, built to be correct and cheap
//! when many threads call many kernels at once.
//!
//! ```no_run
//! use kernelkit::{Device, DType, Kernel};
//! # fn main() -> kernelkit::Result<()> {
//! let device = Device::default_device()?; // CUDA if a GPU is there, else the CPU
//! let stream = device.new_stream()?;
//! let kernel = Kernel::builder("add_offset")
//!     .inputs(["inp"])
//!     .outputs(["out"])
//!     .source("uint i = thread_position_in_grid.x; out[i] = inp[i] + OFFSET;")
//!     .build()?;
//! let x = device.array_from_slice(&[1.0f32; 1024], [1024])?;
//! let out = kernel
//!     .call([&x])
//!     .template("OFFSET", 3)
//!     .output([1024], DType::F32)
//!     .grid([1024, 1, 1])
//!     .threadgroup([256, 1, 1])
//!     .on(&stream)
//!     .launch()?;
//! let host: Vec<f32> = out[0].to_vec()?; // waits for the stream
//! # Ok(()) }
//! ```
//!
//! ## The path of one call
//!
//! 1. [`Kernel`] holds the validated spec; which inputs use `NAME_shape`,
//!    `NAME_strides`, `NAME_ndim` and which position names the body uses was
//!    found once, when it was built.
//! 2. A [`Call`] encodes its variant key on the stack (per input dtype and
//!    pass mode, per output dtype, per template argument kind, name and
//!    value) and looks it up in the kernel's variant memo, shared by all
//!    clones, bounded to [`MAX_CACHED_VARIANTS`] and cleared whole when
//!    full. A hit takes no lock and allocates nothing; a miss generates the
//!    name and source and hashes the source once.
//! 3. The [`Device`]'s kernel cache maps the module key
//!    (`{name}_{source hash}_{options}`) to a loaded module: one compile per
//!    key however many threads ask, different keys compiled in parallel, a
//!    failure delivered to every waiter and never cached. After its first
//!    lookup a variant keeps its function, so later hits touch no cache at
//!    all.
//! 4. Under the kernel cache, the artifact store ([`cache::store`]) keeps
//!    compiled artifacts on disk, shared by processes, so a restarted
//!    process compiles nothing. `KERNELKIT_CACHE=memory` turns it off;
//!    `KERNELKIT_CACHE_DIR` and `KERNELKIT_CACHE_MAX_BYTES` place and bound
//!    it ([`cache::config`]).
//! 5. The backend binds the buffers and launches on the call's [`Stream`].
//!
//! ## Guarantees
//!
//! - [`Kernel`], [`Device`], [`Stream`] and [`Array`] are `Send + Sync`.
//! - A prepared [`Launch`] owns its variant: clearing the memo never breaks it.
//! - Loaded modules are never unloaded while their device lives, so queued
//!   work never runs unloaded code.
//! - No user input makes kernelkit panic: every wrong call is a typed
//!   [`Error`] naming the kernel and the argument.
//!
//! ## Backends
//!
//! `cpu` is always built: C++20 compiled by the system compiler,
//! threadgroups run in parallel, the threads of a group one after another —
//! or, when the body calls a barrier, SIMD-group or quad function, as
//! fibers that switch at those calls, so they mean what they mean on a GPU.
//! `cuda` (cargo feature) compiles with NVRTC for the device's own
//! architecture and launches through the driver API.
//!
//! ## Body languages
//!
//! A body is Metal by default ([`BodyLanguage::Metal`], MLX's
//! `metal_kernel`): both backends carry a Metal compatibility layer (vector
//! types and their operators, Metal's standard library, SIMD-group
//! functions, atomics; see `codegen/prelude`), so a body written for MLX
//! runs unchanged. A body in CUDA C++ ([`BodyLanguage::Cuda`], MLX's
//! `cuda_kernel`) runs on CUDA devices only, with the plain CUDA prelude.

#![warn(missing_docs)]

pub mod array;
pub(crate) mod backend;
pub mod cache;
pub mod codegen;
pub mod device;
pub mod dtype;
pub mod error;
pub mod kernel;
pub mod options;
pub(crate) mod stats;
pub(crate) mod sync;

/// The CUDA backend's compile worker, for a program that serves as one.
///
/// kernelkit runs a worker program as `PROGRAM compile-worker` (see
/// [`CompileWorkers`]); such a program calls [`serve_stdio`](compile_worker::serve_stdio)
/// when its arguments are [`WORKER_ARG`](compile_worker::WORKER_ARG) and exits
/// when it returns. The `kernelkit` command does this.
#[cfg(feature = "cuda")]
#[doc(hidden)]
pub mod compile_worker {
    pub use crate::backend::cuda::worker::{serve, serve_stdio, WORKER_ARG};
}

pub use array::Array;
pub use backend::cpu::FLAGS as CPU_COMPILE_FLAGS;
pub use backend::Limits;
pub use codegen::{BodyLanguage, Dialect, Generated};
pub use device::{Device, DeviceId, DeviceKind, Stream};
pub use dtype::{DType, Element};
pub use error::{ArrayError, BuildError, CallError, CompileError, DeviceError, Error, Result};
pub use kernel::call::{Call, Launch};
pub use kernel::memo::MAX_CACHED_VARIANTS;
pub use kernel::outputs::Outputs;
pub use kernel::spec::{KernelSpec, ShapeInfo};
pub use kernel::template::{TemplateArg, TemplateParam};
pub use kernel::variant::{InputDesc, PassMode, Variant, VariantDesc};
pub use kernel::{Kernel, KernelBuilder};
pub use options::{CompileWorkers, CudaCompileOptions};
pub use stats::CacheStats;

pub use half::{bf16, f16};
pub use num_complex::Complex32;
