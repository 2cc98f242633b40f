//! `kernelkit-bench`: host overhead, contention, compile time and process
//! start, each measured beside its baseline in the same process, so that
//! the ratios hold on a noisy machine. `BENCHMARKS.md` says what each
//! figure means and records full runs.
//!
//! Measurement, not product: this package alone turns on the library's
//! `bench` hooks (a call without the variant memo, the raw launch floor),
//! so that the `kernelkit` command and users' builds stay without them.
//! The harness examples beside it (`examples/`) measure what this command
//! does not: the CUDA ratios, several GPUs, a warm dispatch loop to profile.
//!
//! The run, in order (each step in its own module):
//! 1. host figures (`host`): build, prepare and dispatch of a trivial
//!    kernel with a short and a 95 KB header (`header`), against the same
//!    call regenerating and rehashing its source; the raw launch floor;
//! 2. contention (`contention`): calls per second by thread count, against
//!    MLX's single `RwLock<HashMap>` scheme (`rwlock_cache`);
//! 3. compiles (`compile`): one cold compile, N in parallel against N in a
//!    row, a herd of 64 threads on one new kernel;
//! 4. process start (`startup`): a child process with an empty, then a warm,
//!    artifact store; then (`fleet`) one with an empty store whose kernel
//!    another child shared through the fleet tier on Redis
//!    (`remote_hit_ms`; `--only-starts` runs this step and a cold compile
//!    alone);
//! 5. (CPU) a threadgroup that synchronises (`group`): a 256-thread
//!    reduction with barriers (fibers) against the same sums by one thread;
//! 6. the variant memo (`memo`): `prepare` cycling over 32 to 1,000
//!    variants of one kernel and under a Zipf draw, beside the seed's
//!    clear-all-at-64 memo;
//! 7. the artifact store (`store`): a write into a store of 1,000 entries
//!    and into one of 100,000 (generated, not compiled), and `kernelkit
//!    cache stats` on the large one (`--only-store` runs this step alone).
//!
//! `--only-tune` measures autotuning alone (`tune`): a warm tuned call
//! beside the same call untuned, and the cost of one tuning run.
//!
//! The compile figures need nothing cached: the process opens its devices
//! without a disk tier (`CacheMode::Memory`, whatever `KERNELKIT_CACHE`
//! says), and uses fresh devices and never-seen bodies. The start figures
//! turn it on for their children only (through the environment they are
//! started with); the store figures use stores of their own.

mod bundle;
mod compile;
mod contention;
mod fleet;
mod group;
mod header;
mod host;
mod measure;
mod memo;
mod report;
mod rwlock_cache;
mod sched;
mod startup;
mod store;
mod table;
mod tune;
mod workload;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use measure::Plan;
use report::{MemoReport, Report, StoreReport};
use startup::ChildTask;
use workload::BackendName;

/// Arguments of `kernelkit-bench`.
#[derive(clap::Parser)]
#[command(
    name = "kernelkit-bench",
    version,
    about = "Measures dispatch, memo, contention and compile costs beside baselines"
)]
struct Args {
    /// The backend to measure (default: CUDA if a GPU is there, else the CPU).
    #[arg(long, value_enum)]
    backend: Option<BackendName>,
    /// Fewer samples, threads and compiles: under a minute on 2 cores.
    #[arg(long)]
    quick: bool,
    /// Also write the figures as one JSON object to FILE (`-` or no FILE:
    /// to stdout, with the table on stderr).
    #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "-")]
    json: Option<PathBuf>,
    /// Entries of the large store of the store figures (default 100000,
    /// 10000 with --quick).
    #[arg(long, value_name = "N")]
    store_entries: Option<u64>,
    /// Build the stores of the store figures in a temporary directory
    /// inside DIR (default: the system's temporary directory). A million
    /// entries take about 4 GiB of disk and a million inodes.
    #[arg(long, value_name = "DIR")]
    store_dir: Option<PathBuf>,
    /// The `kernelkit` executable whose `cache stats` the store figures
    /// time (default: the one in this executable's directory).
    #[arg(long, value_name = "PATH")]
    kernelkit: Option<PathBuf>,
    /// Measure the artifact store figures only.
    #[arg(long)]
    only_store: bool,
    /// Measure the cold-start figures only: a fresh process's first call
    /// after a compile, on a warm store, after a bundle import; a
    /// precompile of 16 kernels beside the slowest single compile.
    #[arg(long, conflicts_with_all = ["only_store", "only_starts"])]
    only_bundles: bool,
    /// Measure the variant memo figures only (with the all-hit `prepare`
    /// they are compared with).
    #[arg(long, conflicts_with_all = ["only_store", "only_starts", "only_bundles"])]
    only_memo: bool,
    /// Measure autotuning only: a warm tuned call beside the same call
    /// untuned, and one tuning run of 16 configurations (compiles
    /// excluded).
    #[arg(long, conflicts_with_all = ["only_store", "only_starts", "only_bundles", "only_memo"])]
    only_tune: bool,
    /// Measure a cold compile and the process starts only (cold, warm, and
    /// from the fleet tier: `remote_hit_ms`).
    #[arg(long, conflicts_with = "only_store")]
    only_starts: bool,
    /// Internal: run as the child process of the start figures.
    #[arg(long, value_enum, hide = true)]
    child: Option<ChildTask>,
}

/// Why a benchmark could not finish.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BenchError {
    /// The library refused or failed a call.
    #[error(transparent)]
    Kernel(#[from] kernelkit::Error),
    /// A file, directory or process could not be used.
    #[error("cannot use {0}: {1}")]
    Io(&'static str, #[source] std::io::Error),
    /// A child process or the bare compiler failed.
    #[error("{0}")]
    Child(String),
    /// A worker thread panicked.
    #[error("{0} panicked")]
    Thread(&'static str),
    /// A kernel computed something else than expected.
    #[error("wrong result: {0}")]
    WrongResult(String),
}

/// How much of everything a run does.
struct Effort {
    /// A `--quick` run.
    quick: bool,
    /// Host figures.
    host: Plan,
    /// Kernels the contention threads share.
    hit_kernels: usize,
    /// Samples per thread count of the contention figures.
    hit_samples: usize,
    /// One thread's share of a contention sample.
    hit_batch: Duration,
    /// Cold compiles (median).
    cold_compiles: usize,
    /// Rounds of the parallel compile figure (median).
    parallel_rounds: usize,
    /// Herd rounds (the most compiles any round saw is reported).
    herd_rounds: usize,
    /// Cold starts (each with a new store).
    cold_starts: usize,
    /// Warm starts, and as many floor starts.
    warm_starts: usize,
    /// Entries of the large store.
    store_entries: u64,
    /// Timed writes into each store.
    store_writes: Plan,
    /// Runs of each `cache stats` figure.
    store_stats_runs: usize,
}

impl Effort {
    fn new(quick: bool) -> Effort {
        if quick {
            Effort {
                quick,
                host: Plan {
                    samples: 5,
                    batch: Duration::from_millis(4),
                },
                hit_kernels: 4,
                hit_samples: 5,
                hit_batch: Duration::from_millis(20),
                cold_compiles: 1,
                parallel_rounds: 1,
                herd_rounds: 1,
                cold_starts: 1,
                warm_starts: 2,
                store_entries: 10_000,
                store_writes: Plan {
                    samples: 5,
                    batch: Duration::from_millis(10),
                },
                store_stats_runs: 3,
            }
        } else {
            Effort {
                quick,
                host: Plan {
                    samples: 21,
                    batch: Duration::from_millis(20),
                },
                hit_kernels: 8,
                hit_samples: 9,
                hit_batch: Duration::from_millis(100),
                cold_compiles: 5,
                parallel_rounds: 3,
                herd_rounds: 3,
                cold_starts: 3,
                warm_starts: 5,
                store_entries: 100_000,
                store_writes: Plan {
                    samples: 15,
                    batch: Duration::from_millis(50),
                },
                store_stats_runs: 5,
            }
        }
    }
}

/// Runs the benchmark (or, with `--child`, one start-figure child).
fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("KERNELKIT_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let args = <Args as clap::Parser>::parse();
    if let Some(task) = args.child {
        return startup::child_main(args.backend.unwrap_or(BackendName::Cpu), task);
    }
    let mut effort = Effort::new(args.quick);
    if let Some(n) = args.store_entries {
        effort.store_entries = n;
    }
    let (table, json) = if args.only_bundles {
        let backend = args.backend.unwrap_or_else(BackendName::detect);
        let rounds = if args.quick { 3 } else { 9 };
        match bundle::measure(backend, rounds) {
            Ok(f) => (
                report::bundle_table(&f, args.quick),
                serde_json::to_string_pretty(&f),
            ),
            Err(e) => {
                eprintln!("kernelkit-bench: {e}");
                return ExitCode::FAILURE;
            }
        }
    } else if args.only_store {
        let report = store_setup(&args, &effort)
            .and_then(|setup| store::measure(&setup))
            .map(|store| StoreReport {
                cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
                quick: args.quick,
                store,
            });
        match report {
            Ok(r) => (r.table(), serde_json::to_string_pretty(&r)),
            Err(e) => {
                eprintln!("kernelkit-bench: {e}");
                return ExitCode::FAILURE;
            }
        }
    } else if args.only_tune {
        let backend = args.backend.unwrap_or_else(BackendName::detect);
        match tune::measure(backend, effort.host, args.quick) {
            Ok(f) => (f.table(), serde_json::to_string_pretty(&f)),
            Err(e) => {
                eprintln!("kernelkit-bench: {e}");
                return ExitCode::FAILURE;
            }
        }
    } else if args.only_memo {
        let backend = args.backend.unwrap_or_else(BackendName::detect);
        match only_memo(backend, &effort) {
            Ok(r) => (r.table(), serde_json::to_string_pretty(&r)),
            Err(e) => {
                eprintln!("kernelkit-bench: {e}");
                return ExitCode::FAILURE;
            }
        }
    } else if args.only_starts {
        let backend = args.backend.unwrap_or_else(BackendName::detect);
        match starts_only(backend, &effort) {
            Ok(r) => (r.table(), serde_json::to_string_pretty(&r)),
            Err(e) => {
                eprintln!("kernelkit-bench: {e}");
                return ExitCode::FAILURE;
            }
        }
    } else {
        // Every device of the run keeps its caches in memory (see
        // `BackendName::open`): the compile figures must find nothing on
        // disk.
        let backend = args.backend.unwrap_or_else(BackendName::detect);
        match store_setup(&args, &effort).and_then(|setup| run(backend, &effort, &setup)) {
            Ok(r) => (r.table(), serde_json::to_string_pretty(&r)),
            Err(e) => {
                eprintln!("kernelkit-bench: {e}");
                return ExitCode::FAILURE;
            }
        }
    };
    let json = match json {
        Ok(j) => j,
        Err(e) => {
            eprintln!("kernelkit-bench: cannot write the JSON report: {e}");
            return ExitCode::FAILURE;
        }
    };
    match args.json {
        Some(path) if path.as_os_str() == "-" => {
            eprint!("{table}");
            println!("{json}");
        }
        Some(path) => {
            print!("{table}");
            if let Err(e) = std::fs::write(&path, json + "\n") {
                eprintln!("kernelkit-bench: cannot write {}: {e}", path.display());
                return ExitCode::FAILURE;
            }
        }
        None => print!("{table}"),
    }
    ExitCode::SUCCESS
}

/// The store figures' setup; the `kernelkit` executable is found first,
/// before anything is measured.
fn store_setup(args: &Args, effort: &Effort) -> Result<store::Setup, BenchError> {
    Ok(store::Setup {
        large: effort.store_entries,
        parent: args.store_dir.clone(),
        plan: effort.store_writes,
        stats_runs: effort.store_stats_runs,
        cli: store::kernelkit_command(args.kernelkit.clone())?,
    })
}

/// `--only-starts`: a cold compile, the process starts, the fleet's.
fn starts_only(backend: BackendName, effort: &Effort) -> Result<report::StartsReport, BenchError> {
    progress("cold compile");
    let cold_compile_ms =
        measure::repeated(effort.cold_compiles, || compile::cold_compile_ms(backend))?;
    progress("process starts (cold, warm, floor)");
    let starts = startup::measure(backend, effort.cold_starts, effort.warm_starts)?;
    progress("process starts on an empty disk, the kernel in the fleet tier (Redis)");
    let fleet = fleet::measure(backend, effort.warm_starts)?;
    Ok(report::StartsReport {
        backend: backend.as_str().to_string(),
        cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        quick: effort.quick,
        cold_compile_ms,
        cold_start_ms: starts.cold_ms,
        warm_start_ms: starts.warm_ms,
        start_floor_ms: starts.floor_ms,
        cold_start_compiles: starts.cold.compiles,
        warm_start_compiles: starts.warm.compiles,
        remote_hit_ms: fleet.map(|f| f.remote_hit_ms),
        remote_hit_compiles: fleet.map(|f| f.report.compiles),
        remote_hit_remote_hits: fleet.map(|f| f.report.remote_hits),
    })
}

/// The 1-minute load average, where the system reports one.
fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

fn progress(what: &str) {
    eprintln!("bench: {what}");
}

/// The memo figures of both kernels, each kernel's all-hit `prepare`
/// measured first (the Zipf figure's target is relative to it).
fn memo_figures(
    device: &kernelkit::Device,
    plan: measure::Plan,
) -> Result<(memo::MemoFigures, memo::MemoFigures, f64, f64), BenchError> {
    let stream = device.new_stream()?;
    let x = workload::input(device)?;
    let m = memo::Setup {
        stream: &stream,
        x: &x,
        plan,
        // Quick: a short warm-up (the seed's misses with the 95 KB header
        // take milliseconds each, tens of them in a debug build).
        warm_calls: if plan.samples < 10 { 64 } else { 4096 },
    };
    let hit = |kernel: &kernelkit::Kernel| {
        let call = workload::call(kernel, &x, &stream);
        measure::single(plan, &mut || {
            std::hint::black_box(call.prepare()?);
            Ok(())
        })
    };
    progress("the variant memo: cycles of 32 to 1000 variants, a Zipf draw (short header)");
    let short_hit = hit(&workload::short_kernel(0)?)?;
    let short = m.figures(memo::Shape::Short)?;
    progress("the variant memo (95 KB header)");
    let large_hit = hit(&workload::large_header_kernel()?)?;
    let large = m.figures(memo::Shape::LargeHeader)?;
    Ok((short, large, short_hit, large_hit))
}

/// `--only-memo`: the memo figures alone.
fn only_memo(backend: BackendName, effort: &Effort) -> Result<MemoReport, BenchError> {
    let device = backend.open()?;
    let (memo, memo_95kb, prepare_hit_ns, prepare_hit_ns_95kb) =
        memo_figures(&device, effort.host)?;
    Ok(MemoReport {
        backend: backend.as_str().to_string(),
        device: device.description(),
        cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        quick: effort.quick,
        prepare_hit_ns,
        prepare_hit_ns_95kb,
        memo,
        memo_95kb,
    })
}

/// Every figure, in order.
fn run(backend: BackendName, effort: &Effort, store: &store::Setup) -> Result<Report, BenchError> {
    let quick = effort.quick;
    let load_avg_start = load_average();
    let device = backend.open()?;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    progress(&format!(
        "{} on {} ({cores} cores)",
        backend.as_str(),
        device.description()
    ));

    progress("compiling the trivial kernels");
    let setup = host::Setup::new(backend)?;
    let short = workload::short_kernel(0)?;
    setup.warm(&short, 0)?;
    let large = workload::large_header_kernel()?;
    setup.warm(&large, 0)?;

    progress("build, prepare and dispatch (short header)");
    let s = setup.figures(effort.host, &short)?;
    progress("build, prepare and dispatch (95 KB header)");
    let l = setup.figures(effort.host, &large)?;
    progress("raw launches");
    let raw_launch_ns = setup.raw_launch_ns(effort.host, &short)?;
    let (memo, memo_95kb, _, _) = memo_figures(&device, effort.host)?;

    let at_least = if backend == BackendName::Cuda { 16 } else { 1 };
    let threads = contention::thread_counts(cores, at_least);
    progress(&format!(
        "hits from {threads:?} threads on {} kernels",
        effort.hit_kernels
    ));
    let hits = contention::Contention::new(device.clone(), effort.hit_kernels)?;
    let scaling = hits.scaling(&threads, effort.hit_samples, effort.hit_batch)?;

    progress("cold compile");
    let cold_compile_ms =
        measure::repeated(effort.cold_compiles, || compile::cold_compile_ms(backend))?;
    let cold_compile_bare_ms = compile::bare_compiler_ms(backend)?;

    progress(&format!("{cores} compiles in parallel and in a row"));
    let mut rounds = Vec::new();
    for _ in 0..effort.parallel_rounds.max(1) {
        rounds.push(compile::parallel_round(backend, cores)?);
    }
    let speedups: Vec<f64> = rounds.iter().map(|r| r.speedup()).collect();
    let serial: Vec<f64> = rounds.iter().map(|r| r.serial_ms).collect();
    let parallel: Vec<f64> = rounds.iter().map(|r| r.parallel_ms).collect();

    progress("herd of 64 threads");
    let mut herds = Vec::new();
    for _ in 0..effort.herd_rounds.max(1) {
        herds.push(compile::herd(backend, 64)?);
    }
    let worst = herds
        .iter()
        .copied()
        .max_by_key(|h| h.compiles)
        .expect("at least one herd round ran");
    let herd_ms: Vec<f64> = herds.iter().map(|h| h.wall_ms).collect();

    progress("process starts (cold, warm, floor)");
    let starts = startup::measure(backend, effort.cold_starts, effort.warm_starts)?;
    progress("process starts on an empty disk, the kernel in the fleet tier (Redis)");
    let fleet = fleet::measure(backend, effort.warm_starts)?;

    let group = if backend == BackendName::Cpu {
        progress("a 256-thread group reduction with and without barriers");
        Some(group::measure(&device, effort.host)?)
    } else {
        None
    };
    progress(&format!(
        "artifact store writes at {} and {} entries",
        store::SMALL,
        store.large
    ));
    let store = store::measure(store)?;

    Ok(Report {
        backend: backend.as_str().to_string(),
        device: device.description(),
        cores,
        quick,
        load_avg_start,
        load_avg_end: load_average(),
        build_hit_ns: s.build_hit_ns,
        build_hit_ns_95kb: l.build_hit_ns,
        build_nomemo_ns: s.build_nomemo_ns,
        build_nomemo_ns_95kb: l.build_nomemo_ns,
        dispatch_hit_ns: s.dispatch_hit_ns,
        dispatch_hit_ns_95kb: l.dispatch_hit_ns,
        dispatch_nomemo_ns: s.dispatch_nomemo_ns,
        dispatch_nomemo_ns_95kb: l.dispatch_nomemo_ns,
        raw_launch_ns,
        dispatch_foreign_ns: s.dispatch_foreign_ns,
        dispatch_owned_ns: s.dispatch_owned_ns,
        hit_ops_per_s: scaling.ours,
        hit_ops_per_s_rwlock: scaling.rwlock,
        hit_lookup_ops_per_s: scaling.lookup,
        hit_lookup_ops_per_s_rwlock: scaling.lookup_rwlock,
        hit_cpu_wait: scaling.cpu_wait,
        cold_compile_ms,
        parallel_compile_speedup: measure::median(&speedups),
        herd_compiles: worst.compiles,
        cold_start_ms: starts.cold_ms,
        warm_start_ms: starts.warm_ms,
        prepare_hit_ns: s.prepare_hit_ns,
        prepare_hit_ns_95kb: l.prepare_hit_ns,
        prepare_nomemo_ns: s.prepare_nomemo_ns,
        prepare_nomemo_ns_95kb: l.prepare_nomemo_ns,
        call_build_ns: s.call_build_ns,
        header_bytes: large.spec().header().len(),
        hit_kernels: effort.hit_kernels,
        cold_compile_bare_ms,
        parallel_compile_kernels: cores,
        serial_compile_ms: measure::median(&serial),
        parallel_compile_ms: measure::median(&parallel),
        herd_threads: worst.threads,
        herd_ms: measure::median(&herd_ms),
        start_floor_ms: starts.floor_ms,
        cold_start_compiles: starts.cold.compiles,
        warm_start_compiles: starts.warm.compiles,
        warm_start_disk_hits: starts.warm.disk_hits,
        remote_hit_ms: fleet.map(|f| f.remote_hit_ms),
        remote_hit_compiles: fleet.map(|f| f.report.compiles),
        remote_hit_remote_hits: fleet.map(|f| f.report.remote_hits),
        group_reduce_barrier_ns: group.as_ref().map(|g| g.barrier_ns),
        group_reduce_plain_ns: group.as_ref().map(|g| g.plain_ns),
        memo,
        memo_95kb,
        store,
    })
}
