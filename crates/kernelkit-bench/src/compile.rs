//! Compile figures: one cold compile, N compiles at once against one after
//! another, and a herd of threads asking for one new kernel.
//!
//! Every figure here uses a fresh device (an empty kernel cache) and
//! kernels with bodies never used before, and the process runs with the
//! disk tier off (`KERNELKIT_CACHE=memory`, set before any device opens),
//! so each call really compiles.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Barrier;
use std::time::Instant;

use kernelkit::{Device, Kernel};

use super::measure;
use super::workload::{self, BackendName};
use super::BenchError;

/// The flags the CPU backend compiles with; the bare compiler baseline uses
/// the same ones, so the difference is kernelkit's.
const CPU_FLAGS: &[&str] = kernelkit::CPU_COMPILE_FLAGS;

/// A new trivial kernel whose body no cache has seen.
fn new_kernel(what: &str) -> Result<Kernel, BenchError> {
    workload::kernel("bench_cold", &workload::unique_body(what), "")
}

/// Builds, compiles, runs and checks one new kernel on `device`; ms.
fn compile_and_run(device: &Device, kernel: &Kernel) -> Result<f64, BenchError> {
    let stream = device.new_stream()?;
    let x = workload::input(device)?;
    let started = Instant::now();
    let out = workload::call(kernel, &x, &stream).launch()?;
    stream.synchronize()?;
    let ms = started.elapsed().as_secs_f64() * 1e3;
    workload::check_output(kernel, &out, 0)?;
    Ok(ms)
}

/// The first call of one new kernel on a fresh device, ms.
pub(crate) fn cold_compile_ms(backend: BackendName) -> Result<f64, BenchError> {
    let device = backend.fresh()?;
    compile_and_run(&device, &new_kernel("cold")?)
}

/// The system C++ compiler alone on the same kind of source, with the
/// backend's flags, ms: what kernelkit adds to a CPU compile is the
/// difference. `None` where the backend has no outside compiler to time.
pub(crate) fn bare_compiler_ms(backend: BackendName) -> Result<Option<f64>, BenchError> {
    if backend != BackendName::Cpu {
        return Ok(None);
    }
    let device = backend.fresh()?;
    let kernel = new_kernel("bare")?;
    let x = workload::input(&device)?;
    let stream = device.new_stream()?;
    let generated = workload::call(&kernel, &x, &stream).generate(backend.dialect())?;
    let dir = tempfile::tempdir().map_err(|e| BenchError::Io("a temporary directory", e))?;
    let src = dir.path().join("kernel.cpp");
    std::fs::write(&src, generated.source.as_bytes())
        .map_err(|e| BenchError::Io("the source of the bare compile", e))?;
    let program = cxx();
    let started = Instant::now();
    let status = Command::new(&program)
        .args(CPU_FLAGS)
        .arg("-o")
        .arg(dir.path().join("kernel.so"))
        .arg(&src)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| BenchError::Io("the C++ compiler", e))?;
    let ms = started.elapsed().as_secs_f64() * 1e3;
    if !status.success() {
        return Err(BenchError::Child(format!(
            "`{program}` failed on the generated source ({status})"
        )));
    }
    Ok(Some(ms))
}

/// The compiler the CPU backend picks: the configured one (`CXX`), else
/// `c++`, `g++`, `clang++`, the first on the `PATH`.
fn cxx() -> String {
    if let Some(cxx) = kernelkit::Config::from_env().cpu.compiler {
        return cxx;
    }
    let on_path = |p: &str| {
        std::env::var_os("PATH").is_some_and(|paths| {
            std::env::split_paths(&paths).any(|dir| Path::new(&dir).join(p).is_file())
        })
    };
    ["c++", "g++", "clang++"]
        .into_iter()
        .find(|p| on_path(p))
        .unwrap_or("c++")
        .to_string()
}

/// One round of the parallel compile figure.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ParallelRound {
    /// N new kernels, one after another on one thread, ms.
    pub(crate) serial_ms: f64,
    /// N other new kernels from N threads at once, ms (first start to last
    /// finish).
    pub(crate) parallel_ms: f64,
}

impl ParallelRound {
    /// serial / parallel.
    pub(crate) fn speedup(&self) -> f64 {
        self.serial_ms / self.parallel_ms
    }
}

/// `n` distinct new kernels compiled one after another on a fresh device,
/// then `n` others from `n` threads on another fresh device.
pub(crate) fn parallel_round(backend: BackendName, n: usize) -> Result<ParallelRound, BenchError> {
    let n = n.max(1);
    let serial_device = backend.fresh()?;
    let kernels = (0..n)
        .map(|_| new_kernel("serial"))
        .collect::<Result<Vec<_>, _>>()?;
    let started = Instant::now();
    for kernel in &kernels {
        compile_and_run(&serial_device, kernel)?;
    }
    let serial_ms = started.elapsed().as_secs_f64() * 1e3;

    let parallel_device = backend.fresh()?;
    let kernels = (0..n)
        .map(|_| new_kernel("parallel"))
        .collect::<Result<Vec<_>, _>>()?;
    let barrier = Barrier::new(n);
    let spans = std::thread::scope(|scope| {
        let handles: Vec<_> = kernels
            .iter()
            .map(|kernel| {
                let (device, barrier) = (&parallel_device, &barrier);
                scope.spawn(move || call_at_barrier(device, kernel, barrier))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or(Err(BenchError::Thread("a compile worker")))
            })
            .collect::<Vec<_>>()
    });
    let parallel_ms = measure::wall_of(spans)?.as_secs_f64() * 1e3;
    Ok(ParallelRound {
        serial_ms,
        parallel_ms,
    })
}

/// One thread of the parallel and herd figures: its own stream and input,
/// then, after the barrier, one call (compiling if no one has) until its
/// result is back; returns when the call started and ended.
fn call_at_barrier(
    device: &Device,
    kernel: &Kernel,
    barrier: &Barrier,
) -> Result<(Instant, Instant), BenchError> {
    let stream = device.new_stream()?;
    let x = workload::input(device)?;
    barrier.wait();
    let start = Instant::now();
    let out = workload::call(kernel, &x, &stream).launch()?;
    stream.synchronize()?;
    let end = Instant::now();
    workload::check_output(kernel, &out, 0)?;
    Ok((start, end))
}

/// What the herd figure saw.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Herd {
    /// Threads at the barrier.
    pub(crate) threads: usize,
    /// Compiles the device ran.
    pub(crate) compiles: u64,
    /// First start to last finish, ms.
    pub(crate) wall_ms: f64,
}

/// `threads` threads meet at a barrier and all call one new kernel on a
/// fresh device; every result is checked.
pub(crate) fn herd(backend: BackendName, threads: usize) -> Result<Herd, BenchError> {
    let device = backend.fresh()?;
    let kernel = new_kernel("herd")?;
    let barrier = Barrier::new(threads);
    let spans = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                let (device, kernel, barrier) = (&device, &kernel, &barrier);
                scope.spawn(move || call_at_barrier(device, kernel, barrier))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or(Err(BenchError::Thread("a herd thread"))))
            .collect::<Vec<_>>()
    });
    let wall_ms = measure::wall_of(spans)?.as_secs_f64() * 1e3;
    Ok(Herd {
        threads,
        compiles: device.cache_stats().compiles,
        wall_ms,
    })
}
