//! Process start: a fresh process of this executable runs one kernel with an
//! empty artifact store (cold), then again with the store the cold run
//! filled (warm), and, as the floor, opens the device without running any
//! kernel.
//!
//! The child is this executable (`kernelkit-bench --child …`, hidden),
//! started with `KERNELKIT_CACHE=disk` and `KERNELKIT_CACHE_DIR` pointing at
//! a temporary directory; the time is from spawning it to its exit. The
//! child prints what its device's cache did, so a warm start that still
//! compiled shows as such.

use std::path::Path;
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::measure;
use super::workload::{self, BackendName};
use super::BenchError;

/// What a child runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ChildTask {
    /// Open the device, run the start kernel once, check it.
    Kernel,
    /// Open the device and make the input, but run no kernel.
    Floor,
}

impl ChildTask {
    fn as_arg(self) -> &'static str {
        match self {
            ChildTask::Kernel => "kernel",
            ChildTask::Floor => "floor",
        }
    }
}

/// The line a child prints: its device's cache counters.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub(crate) struct ChildReport {
    /// Compiler runs.
    pub(crate) compiles: u64,
    /// Modules loaded from the artifact store.
    pub(crate) disk_hits: u64,
    /// µs of the first call: from the call to the end of its work (a
    /// compile or a load, then the launch).
    #[serde(default)]
    pub(crate) first_call_us: f64,
    /// Modules loaded from the fleet tier.
    #[serde(default)]
    pub(crate) remote_hits: u64,
}

/// The start figures.
#[derive(Clone, Copy, Debug)]
pub(crate) struct StartFigures {
    /// Median ms of cold starts (each with a new, empty store).
    pub(crate) cold_ms: f64,
    /// Median ms of warm starts (the store the last cold start filled).
    pub(crate) warm_ms: f64,
    /// Median ms of a child that opens the device and runs nothing.
    pub(crate) floor_ms: f64,
    /// What the last cold child reported.
    pub(crate) cold: ChildReport,
    /// What the last warm child reported.
    pub(crate) warm: ChildReport,
}

/// Runs the child task (in the child process).
pub(crate) fn child_main(backend: BackendName, task: ChildTask) -> ExitCode {
    match child(backend, task) {
        Ok(report) => match serde_json::to_string(&report) {
            Ok(line) => {
                println!("{line}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("kernelkit-bench child: {e}");
                ExitCode::FAILURE
            }
        },
        Err(e) => {
            eprintln!("kernelkit-bench child: {e}");
            ExitCode::FAILURE
        }
    }
}

fn child(backend: BackendName, task: ChildTask) -> Result<ChildReport, BenchError> {
    let device = backend.open_as_configured()?;
    let stream = device.new_stream()?;
    let x = workload::input(&device)?;
    stream.synchronize()?;
    let mut first_call_us = 0.0;
    if task == ChildTask::Kernel {
        // The same source in every child, so a warm store has it.
        let kernel = workload::kernel("bench_start", &workload::trivial_body(0), "")?;
        let started = Instant::now();
        let out = workload::call(&kernel, &x, &stream).launch()?;
        stream.synchronize()?;
        first_call_us = started.elapsed().as_secs_f64() * 1e6;
        workload::check_output(&kernel, &out, 0)?;
    }
    stream.synchronize()?;
    let stats = device.cache_stats();
    Ok(ChildReport {
        compiles: stats.compiles,
        disk_hits: stats.disk_hits,
        first_call_us,
        remote_hits: stats.remote_hits,
    })
}

/// The fleet tier a child uses: the Redis URL and the key files (the
/// `KERNELKIT_REMOTE_*` values).
pub(crate) type Fleet<'a> = (&'a str, &'a std::ffi::OsStr);

/// Spawns one child with the store in `store` (and the fleet tier `fleet`,
/// else none); its wall time (ms) and report.
pub(crate) fn spawn(
    backend: BackendName,
    task: ChildTask,
    store: &Path,
    fleet: Option<Fleet<'_>>,
) -> Result<(f64, ChildReport), BenchError> {
    let exe = std::env::current_exe().map_err(|e| BenchError::Io("this executable", e))?;
    let mut cmd = Command::new(&exe);
    cmd.args(["--backend", backend.as_str(), "--child", task.as_arg()])
        .env("KERNELKIT_CACHE", "disk")
        .env("KERNELKIT_CACHE_DIR", store)
        .stdin(Stdio::null());
    match fleet {
        Some((url, key)) => cmd
            .env("KERNELKIT_REMOTE_CACHE", url)
            .env("KERNELKIT_REMOTE_KEY_FILE", key),
        None => cmd
            .env_remove("KERNELKIT_REMOTE_CACHE")
            .env_remove("KERNELKIT_REMOTE_KEY_FILE"),
    };
    let started = Instant::now();
    let out = cmd
        .output()
        .map_err(|e| BenchError::Io("a child process", e))?;
    let ms = started.elapsed().as_secs_f64() * 1e3;
    if !out.status.success() {
        return Err(BenchError::Child(format!(
            "`{} --child {}` failed ({}): {}",
            exe.display(),
            task.as_arg(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let report = stdout
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str::<ChildReport>(l).ok())
        .ok_or_else(|| BenchError::Child(format!("the child printed no report: {stdout}")))?;
    Ok((ms, report))
}

/// `cold` cold starts (each with a new store), `warm` warm starts on the
/// last cold start's store, and `warm` floor starts.
pub(crate) fn measure(
    backend: BackendName,
    cold: usize,
    warm: usize,
) -> Result<StartFigures, BenchError> {
    let tmp = |what| tempfile::tempdir().map_err(|e| BenchError::Io(what, e));
    let mut cold_report = ChildReport::default();
    let mut store = tmp("a temporary artifact store")?;
    let cold_ms = measure::repeated(cold, || {
        store = tmp("a temporary artifact store")?;
        let (ms, report) = spawn(backend, ChildTask::Kernel, store.path(), None)?;
        cold_report = report;
        Ok(ms)
    })?;
    let mut warm_report = ChildReport::default();
    let warm_ms = measure::repeated(warm, || {
        let (ms, report) = spawn(backend, ChildTask::Kernel, store.path(), None)?;
        warm_report = report;
        Ok(ms)
    })?;
    let floor_store = tmp("a temporary artifact store")?;
    let floor_ms = measure::repeated(warm, || {
        Ok(spawn(backend, ChildTask::Floor, floor_store.path(), None)?.0)
    })?;
    Ok(StartFigures {
        cold_ms,
        warm_ms,
        floor_ms,
        cold: cold_report,
        warm: warm_report,
    })
}
