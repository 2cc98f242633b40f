//! `kernelkit bench`: host overhead, contention, compile time and process
//! start, each measured beside its baseline in the same process, so that
//! the ratios hold on a noisy machine. `BENCHMARKS.md` says what each
//! figure means and records full runs.
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
//!    artifact store.
//!
//! The compile figures need nothing cached: the process opens its devices
//! without a disk tier (`CacheMode::Memory`, whatever `KERNELKIT_CACHE`
//! says), and uses fresh devices and never-seen bodies. The start figures
//! turn it on for their children only (through the environment they are
//! started with).

mod compile;
mod contention;
mod header;
mod host;
mod measure;
mod report;
mod rwlock_cache;
mod sched;
mod startup;
mod workload;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use measure::Plan;
use report::Report;
use startup::ChildTask;
use workload::BackendName;

/// Arguments of `kernelkit bench`.
#[derive(clap::Args)]
pub struct Args {
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
}

impl Effort {
    fn new(quick: bool) -> Effort {
        if quick {
            Effort {
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
            }
        } else {
            Effort {
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
            }
        }
    }
}

/// Runs the benchmark (or, with `--child`, one start-figure child).
pub fn main(args: Args) -> ExitCode {
    if let Some(task) = args.child {
        return startup::child_main(args.backend.unwrap_or(BackendName::Cpu), task);
    }
    // Every device of the run keeps its caches in memory (see
    // `BackendName::open`): the compile figures must find nothing on disk.
    let backend = args.backend.unwrap_or_else(BackendName::detect);
    let report = match run(backend, args.quick) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("kernelkit bench: {e}");
            return ExitCode::FAILURE;
        }
    };
    let table = report.table();
    let json = match serde_json::to_string_pretty(&report) {
        Ok(j) => j,
        Err(e) => {
            eprintln!("kernelkit bench: cannot write the JSON report: {e}");
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
                eprintln!("kernelkit bench: cannot write {}: {e}", path.display());
                return ExitCode::FAILURE;
            }
        }
        None => print!("{table}"),
    }
    ExitCode::SUCCESS
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

/// Every figure, in order.
fn run(backend: BackendName, quick: bool) -> Result<Report, BenchError> {
    let effort = Effort::new(quick);
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
    })
}
