//! Autotuning's costs (`--only-tune`), each beside its baseline in this
//! process:
//!
//! - `tuned_call_ns` against `untuned_call_ns`: a warm call with a
//!   [`Tuning`] (its key chosen already) and the same call untuned, with
//!   the chosen configuration's threadgroup and template given by hand;
//!   sampled in pairs of batches whose order alternates, the device's
//!   queue drained before each batch (batches of at most
//!   [`WARM_BATCH_MAX`] calls, so that no launch waits for a full queue).
//!   The median of the pairs' differences is what tuning adds to a warm
//!   call (its target is in BENCHMARKS.md).
//! - `tune_ms`: one tuning run of 16 configurations of a kernel of about
//!   10 us (a copy-and-scale over `elements`), compiles excluded (every
//!   configuration's variant is compiled and loaded first; each sample
//!   tunes a new key of the same kernel through a key function), with the
//!   timing launches it made (`tune_launches`) and the kernel's own time
//!   (`kernel_us`, the chosen configuration's median).

use std::time::Instant;

use kernelkit::{DType, Device, Kernel, TemplateArg, TuneConfig, Tuning};

use super::measure::{self, Plan};
use super::workload::BackendName;
use super::BenchError;

/// The most calls in one timed batch of the warm-call figure: fewer than
/// a GPU's launch queue holds.
const WARM_BATCH_MAX: u64 = 512;

/// The figures of `--only-tune`.
#[derive(Clone, Debug, serde::Serialize)]
pub(crate) struct TuneFigures {
    pub(crate) backend: &'static str,
    pub(crate) quick: bool,
    /// A warm tuned call, ns.
    pub(crate) tuned_call_ns: f64,
    /// The same call untuned, ns.
    pub(crate) untuned_call_ns: f64,
    /// The median over samples of tuned minus untuned, ns (the figure
    /// the target is on).
    pub(crate) tuned_minus_untuned_ns: f64,
    /// Elements of the tuning-cost kernel.
    pub(crate) elements: usize,
    /// Configurations tuned.
    pub(crate) configs: usize,
    /// One tuning run, compiles excluded (median), ms.
    pub(crate) tune_ms: f64,
    /// Timing launches per tuning run (median).
    pub(crate) tune_launches: f64,
    /// The chosen configuration's median time, us.
    pub(crate) kernel_us: f64,
}

impl TuneFigures {
    pub(crate) fn table(&self) -> String {
        format!(
            "autotune on {}{}\n\
             warm call, tuned        {:>10.1} ns\n\
             warm call, untuned      {:>10.1} ns   (tuned - untuned: {:+.1} ns, median of paired samples)\n\
             tuning {} configs of a {:.1} us kernel ({} elements): {:.2} ms, {:.0} timing launches (compiles excluded)\n",
            self.backend,
            if self.quick { " (quick)" } else { "" },
            self.tuned_call_ns,
            self.untuned_call_ns,
            self.tuned_minus_untuned_ns,
            self.configs,
            self.kernel_us,
            self.elements,
            self.tune_ms,
            self.tune_launches,
        )
    }
}

/// `out[i] = inp[i] * 2` over TILE elements per thread.
fn tiled_kernel() -> Result<Kernel, BenchError> {
    Ok(Kernel::builder("bench_tuned")
        .inputs(["inp"])
        .outputs(["out"])
        .source(format!(
            "// {}\nuint base = thread_position_in_grid.x * TILE;\n\
             for (int k = 0; k < TILE; k++) {{ uint i = base + k; if (i < inp_shape[0]) out[i] = inp[i] * 2.0f; }}",
            std::process::id()
        ))
        .build()?)
}

fn tile_of(config: &TuneConfig) -> u64 {
    config
        .template_values()
        .find_map(|(n, v)| match (n, v) {
            ("TILE", TemplateArg::Int(t)) => Some(*t as u64),
            _ => None,
        })
        .unwrap_or(1)
}

/// 16 configurations: four threadgroups by four tiles.
fn sixteen() -> Vec<TuneConfig> {
    let mut v = Vec::new();
    for tg in [64u64, 128, 256, 512] {
        for tile in [1, 2, 4, 8] {
            v.push(TuneConfig::new([tg, 1, 1]).template("TILE", tile));
        }
    }
    v
}

/// Runs the figures.
pub(crate) fn measure(
    backend: BackendName,
    plan: Plan,
    quick: bool,
) -> Result<TuneFigures, BenchError> {
    let device: Device = backend.open()?;
    let stream = device.default_stream();
    let kernel = tiled_kernel()?;

    // Warm call: a one-element-per-thread call on a small array.
    let small = device.array_from_slice(&[1.0f32; 256], [256])?;
    let warm = Tuning::new([TuneConfig::new([64, 1, 1]).template("TILE", 1)]);
    let tuned_call = || {
        kernel
            .call([&small])
            .output([256], DType::F32)
            .grid([256, 1, 1])
            .on(stream)
            .tuned(&warm)
            .launch()
    };
    tuned_call()?;
    let chosen = warm
        .best(
            &kernel
                .call([&small])
                .output([256], DType::F32)
                .grid([256, 1, 1])
                .on(stream),
        )?
        .clone();
    let (tuned_call_ns, untuned_call_ns, tuned_minus_untuned_ns) = measure::paired_diff(
        plan,
        WARM_BATCH_MAX,
        &mut || {
            std::hint::black_box(tuned_call()?);
            Ok(())
        },
        &mut || {
            std::hint::black_box(
                kernel
                    .call([&small])
                    .output([256], DType::F32)
                    .grid([256, 1, 1])
                    .on(stream)
                    .template("TILE", 1)
                    .threadgroup(chosen.threadgroup())
                    .launch()?,
            );
            Ok(())
        },
        &mut || Ok(stream.synchronize()?),
    )?;

    // Tuning cost: a kernel of about 10 us on the device.
    let elements = match backend {
        BackendName::Cuda => 1 << 22,
        BackendName::Cpu => 1 << 14,
    };
    let big = device.array_from_slice(&vec![1.0f32; elements], [elements])?;
    let configs = sixteen();
    let n = configs.len();
    let grid = |c: &TuneConfig, inputs: &[&kernelkit::Array]| {
        [(inputs[0].shape()[0] as u64).div_ceil(tile_of(c)), 1, 1]
    };
    // Compiles excluded: every configuration's variant loaded first.
    for c in &configs {
        let mut call = kernel
            .call([&big])
            .output([elements as i64], DType::F32)
            .on(stream);
        for (name, value) in c.template_values() {
            call = call.template(name, *value);
        }
        call.threadgroup(c.threadgroup())
            .grid(grid(c, &[&big]))
            .compile()?;
    }
    let samples = if quick { 3 } else { 9 };
    let mut times = Vec::new();
    let mut launches = Vec::new();
    let mut kernel_us = Vec::new();
    for sample in 0..samples {
        let key = format!("{} {sample}", std::process::id());
        let tuning = Tuning::new(configs.clone())
            .grid_fn(grid)
            .key_fn(move |_| key.clone());
        let call = kernel
            .call([&big])
            .output([elements as i64], DType::F32)
            .on(stream);
        let before = device.cache_stats();
        let started = Instant::now();
        tuning.best(&call)?;
        times.push(started.elapsed().as_secs_f64() * 1e3);
        let after = device.cache_stats();
        if after.compiles != before.compiles {
            return Err(BenchError::Child(
                "the tuning compiled: compiles were not excluded".into(),
            ));
        }
        launches.push((after.tune_launches - before.tune_launches) as f64);
        let record = tuning.record(&call)?;
        if let Some(ns) = record.result(&record.choice).and_then(|c| c.time_ns) {
            kernel_us.push(ns as f64 / 1e3);
        }
    }
    Ok(TuneFigures {
        backend: backend.as_str(),
        quick,
        tuned_call_ns,
        untuned_call_ns,
        tuned_minus_untuned_ns,
        elements,
        configs: n,
        tune_ms: measure::median(&times),
        tune_launches: measure::median(&launches),
        kernel_us: measure::median(&kernel_us),
    })
}
