//! Host overhead of one call: building the variant, dispatching, and the
//! backend's own launch, each against the path without the memo.
//!
//! - build: `Call::variant_on` (argument descriptors, the variant key, the
//!   memo lookup) against `Call::generate` plus an xxh3 hash of the source,
//!   which is what every call cost before the memo: the name and source
//!   regenerated and rehashed.
//! - prepare: `Call::prepare` (checks, variant, the owning launch object)
//!   against `Call::prepare_without_memo`: build plus what a launch needs.
//! - dispatch: `Call::prepare` + `Launch::run` (checks, variant, function,
//!   output allocation, launch; on the CPU the one-thread kernel runs, on a
//!   GPU it is only enqueued) against `Call::prepare_without_memo` + `run`.
//! - raw launch: `Launch::time_raw_launches`, the backend launching the
//!   already-resolved function with arguments marshalled once: the floor.
//!
//! Build and prepare time a call built once (both take it by reference), so
//! they show what the memo changes; dispatch builds its call inside the
//! timed loop, as a user does, and `call_build_ns` is that part alone.

use std::hint::black_box;

use kernelkit::{Array, Device, Kernel, Stream};

use super::measure::{self, Plan};
use super::workload::{self, BackendName};
use super::BenchError;

/// The host figures for one kernel (short or 95 KB header).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct HostFigures {
    /// `variant_on` on a memo hit, ns.
    pub(crate) build_hit_ns: f64,
    /// Generate + hash every call, ns.
    pub(crate) build_nomemo_ns: f64,
    /// `prepare` alone on a memo hit, ns (extra: the part of dispatch
    /// before the launch).
    pub(crate) prepare_hit_ns: f64,
    /// `prepare_without_memo` alone, ns.
    pub(crate) prepare_nomemo_ns: f64,
    /// Building the `Call` object alone (the builder methods), ns: part of
    /// both sides of dispatch, in neither side of build and prepare.
    pub(crate) call_build_ns: f64,
    /// `prepare` + `run`, warm, ns.
    pub(crate) dispatch_hit_ns: f64,
    /// `prepare_without_memo` + `run`, ns.
    pub(crate) dispatch_nomemo_ns: f64,
    /// `prepare` + `run` with the input a foreign array (the same memory,
    /// exported and imported through DLPack, as a Python caller's tensor
    /// arrives), warm, ns.
    pub(crate) dispatch_foreign_ns: f64,
    /// `prepare` + `run` with the kernelkit-owned input, timed in pairs
    /// with `dispatch_foreign_ns`, ns.
    pub(crate) dispatch_owned_ns: f64,
}

/// Everything a host figure needs, compiled and warm.
pub(crate) struct Setup {
    backend: BackendName,
    device: Device,
    stream: Stream,
    x: Array,
    /// `x`'s memory as a foreign array (DLPack out and back in).
    foreign: Array,
}

impl Setup {
    /// Opens the device and a stream, and makes the input.
    pub(crate) fn new(backend: BackendName) -> Result<Setup, BenchError> {
        let device = backend.open()?;
        let stream = device.new_stream()?;
        let x = workload::input(&device)?;
        x.wait()?;
        let exported = kernelkit::interop::dlpack::export(&x)?;
        // SAFETY: a tensor kernelkit just exported (it keeps `x`'s memory
        // until its deleter, which the imported array calls once), complete
        // (waited for above) and only read.
        let foreign =
            unsafe { kernelkit::interop::dlpack::import(&device, exported, Some(&stream)) }?;
        Ok(Setup {
            backend,
            device,
            stream,
            x,
            foreign,
        })
    }

    /// Compiles `kernel` (trivial kernel number `k`) and checks one result.
    pub(crate) fn warm(&self, kernel: &Kernel, k: usize) -> Result<(), BenchError> {
        let out = workload::call(kernel, &self.x, &self.stream).launch()?;
        workload::check_output(kernel, &out, k)
    }

    /// Build, prepare and dispatch of `kernel`, each against no memo.
    pub(crate) fn figures(&self, plan: Plan, kernel: &Kernel) -> Result<HostFigures, BenchError> {
        let (x, stream, device) = (&self.x, &self.stream, &self.device);
        let dialect = self.backend.dialect();
        let mut f = HostFigures::default();

        // Build and prepare take the call by reference: one call, built
        // once, isolates what the memo changes.
        let call = workload::call(kernel, x, stream);
        (f.build_hit_ns, f.build_nomemo_ns) = measure::paired(
            plan,
            &mut || {
                black_box(call.variant_on(device)?);
                Ok(())
            },
            &mut || {
                let generated = call.generate(dialect)?;
                black_box(xxhash_rust::xxh3::xxh3_64(generated.source.as_bytes()));
                black_box(generated);
                Ok(())
            },
        )?;

        (f.prepare_hit_ns, f.prepare_nomemo_ns) = measure::paired(
            plan,
            &mut || {
                black_box(call.prepare()?);
                Ok(())
            },
            &mut || {
                black_box(call.prepare_without_memo()?);
                Ok(())
            },
        )?;

        f.call_build_ns = measure::single(plan, &mut || {
            let _ = black_box(workload::call(kernel, x, stream));
            Ok(())
        })?;

        // Dispatch is the whole call as a user writes it, the call built
        // inside the loop.
        let (mut n_hit, mut n_nomemo) = (0u32, 0u32);
        (f.dispatch_hit_ns, f.dispatch_nomemo_ns) = measure::paired(
            plan,
            &mut || {
                black_box(workload::call(kernel, x, stream).prepare()?.run()?);
                sync_now_and_then(&mut n_hit, stream)
            },
            &mut || {
                black_box(
                    workload::call(kernel, x, stream)
                        .prepare_without_memo()?
                        .run()?,
                );
                sync_now_and_then(&mut n_nomemo, stream)
            },
        )?;

        // Foreign inputs: the same call on the same memory, through a
        // foreign array, paired with the owned one.
        let foreign = &self.foreign;
        (f.dispatch_foreign_ns, f.dispatch_owned_ns) = measure::paired(
            plan,
            &mut || {
                black_box(workload::call(kernel, foreign, stream).prepare()?.run()?);
                sync_now_and_then(&mut n_hit, stream)
            },
            &mut || {
                black_box(workload::call(kernel, x, stream).prepare()?.run()?);
                sync_now_and_then(&mut n_nomemo, stream)
            },
        )?;
        stream.synchronize()?;
        Ok(f)
    }

    /// The backend's own launch of `kernel`'s loaded function, ns per launch.
    pub(crate) fn raw_launch_ns(&self, plan: Plan, kernel: &Kernel) -> Result<f64, BenchError> {
        let launch = workload::call(kernel, &self.x, &self.stream).prepare()?;
        // Size the batch like the other figures: time one short batch first.
        let probe = 64u32;
        let per = launch.time_raw_launches(probe)?.as_nanos() as f64 / probe as f64;
        let iters = ((plan.batch.as_nanos() as f64 / per.max(1.0)) as u64).clamp(1, 1 << 24) as u32;
        measure::repeated(plan.samples, || {
            Ok(launch.time_raw_launches(iters)?.as_nanos() as f64 / iters as f64)
        })
    }
}

/// Waits for `stream` every 1024 calls: a GPU stream would otherwise queue
/// every launch of a batch. Both sides of a figure wait equally often.
fn sync_now_and_then(count: &mut u32, stream: &Stream) -> Result<(), BenchError> {
    *count += 1;
    if *count >= 1024 {
        *count = 0;
        stream.synchronize()?;
    }
    Ok(())
}
