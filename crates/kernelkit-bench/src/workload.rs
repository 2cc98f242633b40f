//! What every figure runs: the backend, the trivial kernels and the call
//! that launches them.
//!
//! The trivial kernel reads one element, adds a template constant and
//! writes one element, on a grid of one thread: the cost of a call is then
//! the host's work (variant, cache, argument binding, launch), which is what
//! the figures are about.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use kernelkit::{Array, CacheMode, Call, DType, Device, Dialect, Kernel, Stream};

use super::{header, BenchError};

/// Elements per input and output array: more than 7, so the input is passed
/// as a device pointer, as in real kernels.
pub(crate) const ELEMENTS: usize = 16;

/// The template argument every call passes (`OFFSET`).
pub(crate) const OFFSET: i32 = 3;

/// The backend a run measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum BackendName {
    /// The CPU backend (the system C++ compiler).
    Cpu,
    /// CUDA GPU 0 (a build with `--features cuda`).
    Cuda,
}

impl BackendName {
    /// `cpu` or `cuda`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            BackendName::Cpu => "cpu",
            BackendName::Cuda => "cuda",
        }
    }

    /// CUDA if GPU 0 opens, else the CPU.
    pub(crate) fn detect() -> BackendName {
        match BackendName::Cuda.open() {
            Ok(_) => BackendName::Cuda,
            Err(e) => {
                tracing::debug!("no CUDA device, measuring the CPU: {e}");
                BackendName::Cpu
            }
        }
    }

    /// The bench's device of this backend, shared by every figure that
    /// wants shared caches (one per backend for the process, as
    /// `Device::cpu()` is): memory caches only, whatever the environment
    /// says, so that nothing on disk answers for a compile the bench times.
    pub(crate) fn open(self) -> Result<Device, BenchError> {
        static SHARED: Mutex<Vec<(BackendName, Device)>> = Mutex::new(Vec::new());
        let mut shared = SHARED.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, device)) = shared.iter().find(|(b, _)| *b == self) {
            return Ok(device.clone());
        }
        let device = self.fresh()?;
        shared.push((self, device.clone()));
        Ok(device)
    }

    /// A new device object with its own empty kernel cache and no disk
    /// tier, for figures that need nothing cached.
    pub(crate) fn fresh(self) -> Result<Device, BenchError> {
        let builder = Device::builder().cache_mode(CacheMode::Memory);
        Ok(match self {
            BackendName::Cpu => builder.cpu()?,
            BackendName::Cuda => builder.cuda(0)?,
        })
    }

    /// The process-wide device of this backend, configured by the
    /// environment: what a program of the user's would open (the start
    /// figures' children, whose store the parent sets).
    pub(crate) fn open_as_configured(self) -> Result<Device, BenchError> {
        Ok(match self {
            BackendName::Cpu => Device::cpu(),
            BackendName::Cuda => Device::cuda(0)?,
        })
    }

    /// The dialect its sources are generated in.
    pub(crate) fn dialect(self) -> Dialect {
        match self {
            BackendName::Cpu => Dialect::Cpu,
            BackendName::Cuda => Dialect::Cuda,
        }
    }
}

/// A body no kernel in this process (or any earlier one) has used: the
/// figures that need a cold compile must not find the kernel anywhere.
pub(crate) fn unique_body(what: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!(
        "{} // {what} {} {nanos} {}",
        trivial_body(0),
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// `out[i] = inp[i] + OFFSET + k` at the thread's position.
pub(crate) fn trivial_body(k: usize) -> String {
    format!("uint i = thread_position_in_grid.x; out[i] = inp[i] + (float)OFFSET + {k}.0f;")
}

/// A trivial kernel `name` with `body` and `header`.
pub(crate) fn kernel(name: &str, body: &str, header: &str) -> Result<Kernel, BenchError> {
    Ok(Kernel::builder(name)
        .inputs(["inp"])
        .outputs(["out"])
        .header(header)
        .source(body)
        .build()?)
}

/// The short-header kernel of the build and dispatch figures (`k` = 0) and
/// of the contention figures (`k` = 0, 1, …).
pub(crate) fn short_kernel(k: usize) -> Result<Kernel, BenchError> {
    kernel(&format!("bench_short_{k}"), &trivial_body(k), "")
}

/// The same trivial kernel behind the 95 KB header; its body calls one
/// helper of the header so the header is part of the kernel, not an appendix.
pub(crate) fn large_header_kernel() -> Result<Kernel, BenchError> {
    let body = format!(
        "uint i = thread_position_in_grid.x; out[i] = inp[i] + (float)OFFSET + 0.0f * {}(inp[i]);",
        header::USED_HELPER
    );
    kernel("bench_95kb", &body, &header::generate())
}

/// The input array of a call: 0, 1, 2, … as `f32`.
pub(crate) fn input(device: &Device) -> Result<Array, BenchError> {
    let data: Vec<f32> = (0..ELEMENTS).map(|i| i as f32).collect();
    Ok(device.array_from_slice(&data, [ELEMENTS])?)
}

/// The benchmark call: one input, one template argument, one output, a
/// grid of one thread, on `stream`. Built afresh for every call, as a user
/// builds it.
pub(crate) fn call<'a>(kernel: &'a Kernel, x: &'a Array, stream: &'a Stream) -> Call<'a> {
    kernel
        .call([x])
        .template("OFFSET", OFFSET)
        .output([ELEMENTS as i64], DType::F32)
        .grid([1, 1, 1])
        .threadgroup([1, 1, 1])
        .on(stream)
}

/// Checks the element a trivial kernel `k` wrote: `out[0] = inp[0] +
/// OFFSET + k` (`inp[0]` is 0).
pub(crate) fn check_output(kernel: &Kernel, out: &[Array], k: usize) -> Result<(), BenchError> {
    let host: Vec<f32> = out
        .first()
        .ok_or_else(|| {
            BenchError::WrongResult(format!("kernel `{}` returned no output", kernel.name()))
        })?
        .to_vec()?;
    let expected = OFFSET as f32 + k as f32;
    match host.first() {
        Some(v) if *v == expected => Ok(()),
        got => Err(BenchError::WrongResult(format!(
            "kernel `{}`: out[0] = {got:?}, expected {expected}",
            kernel.name()
        ))),
    }
}
