//! Compile worker processes: NVRTC compiles one program at a time inside a
//! process, so compiles that would queue here run in other processes.
//!
//! - `frame`: the wire format (length-prefixed binary frames) and messages.
//! - `process_pool`: a pool of worker processes, generic over the command and the
//!   job, with the in-process fallback (testable without a GPU).
//! - `client`: the CUDA side: finding the worker program, one pool per
//!   program for the whole process, compile jobs in and artifacts out.
//! - `serve`: the worker side, [`serve`] and [`serve_stdio`], which the
//!   `kernelkit` command runs as `kernelkit compile-worker` and any program
//!   can run through `kernelkit::compile_worker`.
//!
//! A worker is started when a compile finds this process compiling already
//! and no worker idle, up to the configured most
//! ([`crate::config::CudaConfig::max_workers`], `KERNELKIT_COMPILE_WORKERS`;
//! default: the number of cores, at most 16) per program; it lives until the process
//! ends, paying NVRTC's start-up once. A compile never fails because of the
//! workers: whatever goes wrong with one, the job runs in this process.

mod client;
mod frame;
mod process_pool;
mod serve;

pub(super) use client::{WarmUp, Workers};
pub(super) use frame::Output;
pub use serve::{serve, serve_stdio};

/// The protocol's version; a worker speaking another one is not used.
/// Version 2 added the headers of a compile job; version 3 compiles a job
/// whose options ask for the precompiled prelude as `compile::pch` decides.
pub(crate) const PROTOCOL: u32 = 3;

/// The program name of a worker's warm-up job: the one job a worker
/// answers only after it wrote the precompiled preludes it queued (see
/// `compile::pch`), so that it is idle, with its headers, when it answers.
pub(crate) const WARM_UP_PROGRAM: &str = "kernelkit_warm_up.cu";

/// The argument a worker program is started with.
pub const WORKER_ARG: &str = "compile-worker";
