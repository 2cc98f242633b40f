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
//! A warm call reads top to bottom, in `kernel::call` (`Call::launch`):
//!
//! 1. **Check** ([`Call`]'s checks): argument counts, the device and
//!    stream, each input's device and layout, each output's shape, the
//!    grid and threadgroup against the device's limits — a short test
//!    each; the full one, which words the error, only when it fails.
//! 2. **Key**: the variant key straight from the arguments (per input dtype
//!    and pass mode, per output dtype, per template argument kind, name and
//!    value), packed in one word when the call has no template arguments.
//! 3. **Lookup** in the kernel's variant cache (`kernel::variants`), shared
//!    by all clones of the [`Kernel`]: this thread's recent variants (a few
//!    lines it owns, no atomics), then the memo (lock-free reads, bounded
//!    by a byte budget and an entry cap, [`MemoConfig`], evicting with
//!    CLOCK), then — once per variant while it stays memoized — the
//!    per-variant checks and the generator (`codegen`), which writes only
//!    the variant's own part of the source and hashes it from the kernel's
//!    hashed prefix (prelude, header and body are held once per kernel;
//!    the whole text is built only to compile). The answer is a guard that
//!    holds no lock and no borrow.
//! 4. **Function**: the one the variant kept for its device (no lock), or
//!    the device's module resolver (`cache::resolver`): loaded modules in
//!    memory by their 128-bit [`ModuleKey`](cache::key::ModuleKey) (one
//!    build per key however many threads ask, different keys in parallel, a
//!    failure delivered to every waiter and never cached), then the
//!    artifact tiers (the disk store, [`cache::store`], shared by processes,
//!    each entry checked against the files its compile read; then, when
//!    configured, the fleet tier on Redis, [`cache::remote`], shared by
//!    nodes, its entries signed; placed, bounded or turned off by the
//!    [`Config`], whose environment variables are read in one place,
//!    [`Config::from_env`]), then the backend's compiler. Steps 3 and 4
//!    can run ahead of time, in parallel and in the background
//!    ([`Precompile`]); [`Call::cache_state`] says where a call would find
//!    its function without looking further; and the store's entries travel
//!    between machines in signed bundles ([`cache::bundle`]), so a fresh
//!    process on a node loads rather than compiles.
//! 5. **Launch** (`device::dispatch`): outputs allocated in the stream's
//!    order (a thread's spare first), then one borrowed launch description
//!    to the backend, which marshals the arguments and launches on the
//!    call's [`Stream`].
//!
//! A binding whose arrays are new objects on every call but whose layouts
//! repeat (Python's tensors) prepares steps 1–3 once per layout
//! ([`Call::rebindable`]) and then runs the [`Rebindable`] launch with the
//! arrays' addresses alone: the checks that depend on addresses, step 4,
//! and the backend's launch.
//!
//! ## The floors
//!
//! The library is built in floors that only look down: the base (`dtype`,
//! `error`, `config`, `stats`: the cache counters, `sync`: lock
//! primitives, `nvtx`: ranges for profilers) → `codegen` (pure generators, owning their vocabulary) →
//! `backend` (compile, load, memory, launch, on borrowed descriptions) →
//! `cache` (the module resolver and its tiers) → `device`, `array` →
//! `kernel` → `spec_file`, `interop`, `compile_worker` (the entry point of
//! a program that serves as a CUDA compile worker). No module names an
//! item of a floor above its own, unit tests included;
//! `tests/floors.rs` checks it in CI. Each folder's `mod.rs` says what it
//! holds and what it may import.
//!
//! ## Guarantees
//!
//! - [`Kernel`], [`Device`], [`Stream`] and [`Array`] are `Send + Sync`.
//! - A prepared [`Launch`] (or [`Rebindable`]) owns its variant: clearing the
//!   memo never breaks it.
//! - A loaded module is unloaded (past `max_loaded_modules`) only once no
//!   call holds it and, on CUDA, once the work queued before has finished
//!   (events recorded after its launches, checked without waiting), so
//!   queued work never runs unloaded code; a module pinned (a captured
//!   graph launches it) stays loaded while its device lives.
//! - A device (its caches, modules and, on CUDA, its context and memory
//!   pool) is freed once nothing holds it: its handles, its streams, its
//!   arrays, a thread's spare output ([`Device::downgrade`] tells).
//! - No user input makes kernelkit panic: every wrong call is a typed
//!   [`Error`] naming the kernel and the argument.
//!
//! ## Spec files
//!
//! [`spec_file`] reads and writes the JSON format of the `kernelkit source`
//! and `kernelkit run` commands: one call of one kernel, MLX-style, with its
//! launch and its data (inline or `.npy`). It sits on top of everything
//! else and nothing imports it.
//!
//! ## Memory and streams of other libraries
//!
//! [`interop`] runs kernels on memory kernelkit does not own, without
//! copies: host slices borrowed for a scope ([`interop::scope`]), owned
//! foreign buffers with a drop callback or deleter
//! ([`interop::foreign_array`]), DLPack tensors in and out
//! ([`interop::dlpack`]), cudarc slices and streams, candle tensors
//! (features `cuda`, `candle`); outputs can be written into any writable
//! array ([`Call::output_into`]). Foreign memory is never cached, never a
//! thread's spare and never freed by kernelkit, and a borrowed view used
//! after its scope is an error.
//!
//! ## Backends
//!
//! `cpu` is always built: C++20 compiled by the system compiler,
//! threadgroups run in parallel, the threads of a group one after another —
//! or, when the body calls a barrier, SIMD-group or quad function, as
//! fibers that switch at those calls, so they mean what they mean on a GPU.
//! `cuda` (cargo feature) compiles with NVRTC for the device's own
//! architecture and launches through the driver API. `null`
//! ([`Device::new_null`]) runs nothing: it keeps each source as its
//! artifact and records each launch ([`LaunchRecord`]), so code that calls
//! kernels — kernelkit's own core included — can be tested without a
//! compiler or a GPU.
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
pub mod config;
pub mod device;
pub mod dtype;
pub mod error;
pub mod interop;
pub mod kernel;
pub mod manifest;
pub(crate) mod nvtx;
pub mod spec_file;
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
    pub use crate::backend::cuda::compile::worker::{serve, serve_stdio, WORKER_ARG};
}

pub use array::outputs::Outputs;
pub use array::Array;
pub use backend::cpu::FLAGS as CPU_COMPILE_FLAGS;
pub use backend::null::{ArgRecord, LaunchRecord, NullOptions};
pub use backend::Limits;
pub use cache::CacheState;
pub use codegen::math::MathMode;
pub use codegen::spec::{KernelSpec, ShapeInfo};
pub use codegen::template::{TemplateArg, TemplateParam};
pub use codegen::variant::{InputDesc, PassMode, VariantDesc};
pub use codegen::{BodyLanguage, Dialect, Generated};
pub use config::{
    CacheMode, CompileWorkers, Config, CudaCompileOptions, MemoConfig, NvtxConfig, StartWorkers,
};
pub use device::{Device, DeviceBuilder, DeviceId, DeviceKind, Stream, WeakDevice};
pub use dtype::{DType, Element};
pub use error::{
    ArrayError, BuildError, CallError, CompileError, DeviceError, Error, LaunchLimit, OutOfBounds,
    Result, TuneError,
};
pub use kernel::call::{Call, Launch, Rebindable};
pub use kernel::precompile::{
    Precompile, PrecompileBuilder, PrecompileReport, PrecompileResult, Progress,
};
pub use kernel::tune::{TuneConfig, TuneOptions, Tuning};
pub use kernel::variant::Variant;
pub use kernel::{Kernel, KernelBuilder};
/// NVTX ranges off and on again in one process (the benchmarks' A/B).
#[cfg(feature = "bench")]
pub use nvtx::set_on as set_nvtx;
pub use stats::CacheStats;

pub use half::{bf16, f16};
pub use num_complex::Complex32;
