//! Cold start (`--only-bundles`): the first call of a kernel in a fresh
//! process, three ways, and a precompile of 16 kernels beside the slowest
//! single compile.
//!
//! - `first_call_compile_us`: a child process on an empty store; its first
//!   call compiles.
//! - `first_call_warm_disk_us`: a child on the store that compile filled
//!   (the artifact was written by this machine's own compile).
//! - `first_call_imported_us`: a child on a store that was empty until a
//!   signed bundle of the first store was imported into it (in this
//!   process, through `kernelkit::cache::bundle`), beside the warm-disk
//!   figure (the target is in BENCHMARKS.md).
//! - `precompile_16_ms` vs `slowest_single_compile_ms`: sixteen distinct
//!   trivial kernels, first compiled one at a time (each on a fresh
//!   memory-only device; the slowest and the sum are kept), then all
//!   sixteen by one `Precompile` on another fresh device, beside the
//!   slowest single compile. The CPU compiler runs
//!   as processes of their own, so on a machine with few cores the
//!   precompile is bound by the cores (16 compiles on 2 cores take about
//!   8 single compiles).
//!
//! Each child is this executable (`bench --child kernel`, see `startup`);
//! it reports the time of its first launch (from the call to the end of
//! the stream's work), besides its cache counters.

use std::time::Instant;

use kernelkit::cache::bundle::{self, ExportFilter, SecretKey, TrustedKeys};
use kernelkit::cache::store::ArtifactStore;
use kernelkit::Precompile;
use serde::Serialize;

use super::measure;
use super::startup::{self, ChildTask};
use super::workload::{self, BackendName};
use super::BenchError;

/// Kernels of the precompile figure.
const PRECOMPILE_KERNELS: usize = 16;

/// The figures.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct BundleFigures {
    /// `cpu` or `cuda`.
    pub(crate) backend: &'static str,
    /// Median µs of a fresh process's first call that compiles.
    pub(crate) first_call_compile_us: f64,
    /// Median µs of a fresh process's first call on a store it filled.
    pub(crate) first_call_warm_disk_us: f64,
    /// Median µs of a fresh process's first call on a store that a bundle
    /// was just imported into.
    pub(crate) first_call_imported_us: f64,
    /// Whether every imported child loaded its kernel (no compile).
    pub(crate) imported_compiled_nothing: bool,
    /// The bundle's size in bytes.
    pub(crate) bundle_bytes: usize,
    /// Median ms of an import of that bundle (verify and write).
    pub(crate) import_ms: f64,
    /// Kernels in the precompile figure.
    pub(crate) precompile_kernels: usize,
    /// Wall ms of a precompile of all of them.
    pub(crate) precompile_ms: f64,
    /// The slowest of them compiled alone, ms.
    pub(crate) slowest_single_compile_ms: f64,
    /// All of them compiled one after another, ms.
    pub(crate) serial_compile_ms: f64,
    /// Cores of this machine.
    pub(crate) cores: usize,
}

/// Measures the figures with `rounds` children per first-call figure.
pub(crate) fn measure(backend: BackendName, rounds: usize) -> Result<BundleFigures, BenchError> {
    let tmp = |what| tempfile::tempdir().map_err(|e| BenchError::Io(what, e));
    let rounds = rounds.max(1);
    // Compiles: each child on a new, empty store.
    let mut built = tmp("a temporary artifact store")?;
    let compile_us = measure::repeated(rounds, || {
        built = tmp("a temporary artifact store")?;
        let (_, report) = startup::spawn(backend, ChildTask::Kernel, built.path(), None)?;
        Ok(report.first_call_us)
    })?;
    // A bundle of that store.
    let source = ArtifactStore::open(built.path())
        .map_err(|e| BenchError::Child(format!("cannot open the built store: {e}")))?;
    let key = SecretKey::generate().map_err(|e| BenchError::Child(e.to_string()))?;
    let exported = bundle::export(&source, &ExportFilter::default(), None, &key)
        .map_err(|e| BenchError::Child(format!("export failed: {e}")))?;
    let trusted = TrustedKeys::new([key.public()]);
    let identity = backend.open_as_configured()?.artifact_identity();
    // In turns, so that a change of the machine's load between them
    // weighs on both alike: a child on the warm store, then one on a new
    // store that the bundle was just imported into.
    let mut import_ms = Vec::new();
    let mut warm_us = Vec::new();
    let mut imported_us = Vec::new();
    let mut compiled_nothing = true;
    for _ in 0..rounds {
        let (_, warm) = startup::spawn(backend, ChildTask::Kernel, built.path(), None)?;
        warm_us.push(warm.first_call_us);
        let target = tmp("a temporary artifact store")?;
        let store = ArtifactStore::create(target.path())
            .map_err(|e| BenchError::Child(format!("cannot create a store: {e}")))?;
        let started = Instant::now();
        let r = bundle::import(&exported.bundle, &trusted, &[identity], &store)
            .map_err(|e| BenchError::Child(format!("import failed: {e}")))?;
        import_ms.push(started.elapsed().as_secs_f64() * 1e3);
        if r.imported != exported.entries {
            return Err(BenchError::Child(format!(
                "imported {} of {} entries",
                r.imported, exported.entries
            )));
        }
        let (_, report) = startup::spawn(backend, ChildTask::Kernel, target.path(), None)?;
        compiled_nothing &= report.compiles == 0 && report.disk_hits == 1;
        imported_us.push(report.first_call_us);
    }
    let warm_us = measure::median(&warm_us);
    let imported_us = measure::median(&imported_us);
    let (precompile_ms, slowest_ms, serial_ms) = precompile_figures(backend)?;
    Ok(BundleFigures {
        backend: backend.as_str(),
        first_call_compile_us: compile_us,
        first_call_warm_disk_us: warm_us,
        first_call_imported_us: imported_us,
        imported_compiled_nothing: compiled_nothing,
        bundle_bytes: exported.bundle.len(),
        import_ms: measure::median(&import_ms),
        precompile_kernels: PRECOMPILE_KERNELS,
        precompile_ms,
        slowest_single_compile_ms: slowest_ms,
        serial_compile_ms: serial_ms,
        cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
    })
}

/// (precompile of all, slowest single, sum of singles), in ms.
fn precompile_figures(backend: BackendName) -> Result<(f64, f64, f64), BenchError> {
    let kernels = |tag: &str| -> Result<Vec<kernelkit::Kernel>, BenchError> {
        (0..PRECOMPILE_KERNELS)
            .map(|k| {
                workload::kernel(
                    &format!("bench_pre_{k}"),
                    &workload::unique_body(&format!("precompile {tag} {k}")),
                    "",
                )
            })
            .collect()
    };
    // A first compile in this process pays for what every later one
    // shares (the CPU's precompiled prelude header, NVRTC's start).
    {
        let device = backend.fresh()?;
        let warm = workload::kernel("bench_pre_warm", &workload::unique_body("warm-up"), "")?;
        let x = workload::input(&device)?;
        workload::call(&warm, &x, device.default_stream()).compile()?;
    }
    let singles = kernels("single")?;
    let mut slowest: f64 = 0.0;
    let mut serial = 0.0;
    for kernel in &singles {
        let device = backend.fresh()?;
        let x = workload::input(&device)?;
        let started = Instant::now();
        workload::call(kernel, &x, device.default_stream()).compile()?;
        let ms = started.elapsed().as_secs_f64() * 1e3;
        slowest = slowest.max(ms);
        serial += ms;
    }
    let all = kernels("all")?;
    let device = backend.fresh()?;
    let x = workload::input(&device)?;
    let started = Instant::now();
    let mut builder = Precompile::builder().workers(PRECOMPILE_KERNELS);
    for kernel in &all {
        builder = builder.call(&workload::call(kernel, &x, device.default_stream()));
    }
    let report = builder.start().wait();
    let wall = started.elapsed().as_secs_f64() * 1e3;
    if let Some(failed) = report.failures().next() {
        return Err(BenchError::Child(format!(
            "precompile of `{}` failed: {:?}",
            failed.kernel, failed.result
        )));
    }
    Ok((wall, slowest, serial))
}
