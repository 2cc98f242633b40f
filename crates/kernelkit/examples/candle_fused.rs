//! Fused kernels on candle tensors, checked against candle's own result
//! and timed against candle's unfused sequence, on the CPU and, in a build
//! with candle's CUDA backend and a GPU present, on CUDA:
//!
//! - `silu(a) * b` (candle: `silu`, then `mul`: two kernels, one
//!   intermediate tensor), once with `a` contiguous and once with `a` a
//!   transposed view, read in place;
//! - RMSNorm, `x / sqrt(mean(x^2) + eps) * w` over the last axis (candle:
//!   `sqr`, `mean_keepdim`, `add`, `sqrt`, `broadcast_div`,
//!   `broadcast_mul`: six kernels), one threadgroup per row.
//!
//! Times are medians of 21 samples after a warm-up; a sample is the mean
//! of a batch of calls ending in a synchronize of candle's device (on
//! CUDA, so the kernels' own time counts, not only their queueing).
//!
//! CPU: `cargo run --release -p kernelkit-rs --features candle --example candle_fused [-- ROWS COLS]`
//! CUDA: `scripts/candle-cuda.sh cargo run --release -p kernelkit-rs --features candle,cuda --example candle_fused [-- ROWS COLS]`
//! (sizes default to 1024 x 1024 on the CPU and 8192 x 4096 on CUDA).

use std::time::Instant;

use candle_core::{DType, Device, Tensor, D};
use kernelkit::interop::candle::{launch, CandleError};
use kernelkit::Kernel;

fn main() -> Result<(), CandleError> {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let size = |rows, cols| {
        (
            args.first().copied().unwrap_or(rows),
            args.get(1).copied().unwrap_or(cols),
        )
    };
    let (rows, cols) = size(1024, 1024);
    run(&Device::Cpu, rows, cols, 1)?;
    if candle_core::utils::cuda_is_available() {
        match Device::new_cuda(0) {
            Ok(gpu) => {
                let (rows, cols) = size(8192, 4096);
                run(&gpu, rows, cols, 20)?;
            }
            Err(e) => println!(
                "cuda: no device ({}); CPU only",
                e.to_string().lines().next().unwrap_or("")
            ),
        }
    } else {
        println!("cuda: this build has no candle CUDA backend (scripts/candle-cuda.sh builds one)");
    }
    Ok(())
}

/// The three comparisons on `dev`, `batch` calls per timing sample.
fn run(dev: &Device, rows: usize, cols: usize, batch: usize) -> Result<(), CandleError> {
    let place = if dev.is_cuda() { "cuda" } else { "cpu" };
    println!("{place}: {rows} x {cols} f32");
    // silu(a) * b; `a` read through its strides (a transposed tensor is a
    // view, not a copy).
    let silu_mul = Kernel::builder("silu_mul")
        .inputs(["a", "b"])
        .outputs(["y"])
        .source(
            "uint i = thread_position_in_grid.x;\n\
             if (i >= b_shape[0] * b_shape[1]) return;\n\
             uint r = i / b_shape[1], c = i % b_shape[1];\n\
             float x = a[r * a_strides[0] + c * a_strides[1]];\n\
             y[i] = x / (1.0f + metal::exp(-x)) * b[i];",
        )
        .ensure_row_contiguous(false)
        .build()?;
    let b = Tensor::randn(0f32, 1.0, (rows, cols), dev)?;
    let n = (rows * cols) as u64;
    for (label, a) in [
        ("silu(a) * b", Tensor::randn(0f32, 1.0, (rows, cols), dev)?),
        (
            "silu(a.t()) * b",
            Tensor::randn(0f32, 1.0, (cols, rows), dev)?.t()?,
        ),
    ] {
        let fused = || {
            launch(&silu_mul, &[&a, &b], &[(&[rows, cols], DType::F32)], |c| {
                c.grid([n, 1, 1]).threadgroup([256, 1, 1])
            })
            .map(|mut t| t.remove(0))
        };
        let unfused = || a.silu()?.mul(&b);
        compare(&format!("{place} {label}"), dev, batch, fused, unfused)?;
    }

    // RMSNorm over the last axis: a threadgroup per row sums the squares
    // (strided over the row, so neighbouring threads read neighbouring
    // elements), reduces them in threadgroup memory, then scales the row.
    let rms_norm = Kernel::builder("rms_norm")
        .inputs(["x", "w"])
        .outputs(["y"])
        .source(
            "threadgroup float part[256];\n\
             uint r = threadgroup_position_in_grid.x, t = thread_position_in_threadgroup.x;\n\
             uint nt = threads_per_threadgroup.x, n = x_shape[1];\n\
             float ss = 0.0f;\n\
             for (uint c = t; c < n; c += nt) { float v = x[r * n + c]; ss += v * v; }\n\
             part[t] = ss;\n\
             threadgroup_barrier(mem_flags::mem_threadgroup);\n\
             for (uint s = nt / 2; s > 0; s >>= 1) {\n\
               if (t < s) part[t] += part[t + s];\n\
               threadgroup_barrier(mem_flags::mem_threadgroup);\n\
             }\n\
             float inv = 1.0f / metal::sqrt(part[0] / n + EPS_E6 * 1e-6f);\n\
             for (uint c = t; c < n; c += nt) y[r * n + c] = x[r * n + c] * inv * w[c];",
        )
        .build()?;
    let x = Tensor::randn(0f32, 1.0, (rows, cols), dev)?;
    let w = Tensor::randn(1f32, 0.1, cols, dev)?;
    let eps = 1e-5;
    // Threads per row (a power of two, as the reduction needs): 256 on a
    // GPU; one on the CPU, where a threadgroup's threads that meet at
    // barriers are fibers taking turns, and one thread per row is fastest.
    let per_row: u64 = if dev.is_cuda() { 256 } else { 1 };
    let fused = || {
        launch(&rms_norm, &[&x, &w], &[(&[rows, cols], DType::F32)], |c| {
            c.template("EPS_E6", 10)
                .grid([rows as u64 * per_row, 1, 1])
                .threadgroup([per_row, 1, 1])
        })
        .map(|mut t| t.remove(0))
    };
    let unfused = || {
        let ms = x.sqr()?.mean_keepdim(D::Minus1)?;
        x.broadcast_div(&(ms + eps)?.sqrt()?)?.broadcast_mul(&w)
    };
    compare(&format!("{place} rms_norm"), dev, batch, fused, unfused)?;
    Ok(())
}

/// Checks that the fused result agrees with candle's, then times both.
fn compare(
    name: &str,
    dev: &Device,
    batch: usize,
    fused: impl Fn() -> Result<Tensor, CandleError>,
    unfused: impl Fn() -> candle_core::Result<Tensor>,
) -> Result<(), CandleError> {
    let (ours, theirs) = (fused()?, unfused()?);
    let diff = (ours - &theirs)?
        .abs()?
        .flatten_all()?
        .max(0)?
        .to_scalar::<f32>()?;
    let scale = theirs.abs()?.flatten_all()?.max(0)?.to_scalar::<f32>()?;
    println!("{name}: max |fused - candle| = {diff:.2e} (max |candle| = {scale:.2})");
    if diff.is_nan() || diff > 1e-4 * scale.max(1.0) {
        return Err(CandleError::Unsupported {
            kernel: name.to_string(),
            what: format!("the fused result differs from candle's by {diff}"),
        });
    }
    let time = |f: &dyn Fn() -> Result<(), CandleError>| -> Result<f64, CandleError> {
        for _ in 0..3 {
            f()?;
        }
        dev.synchronize()?;
        let mut samples = Vec::new();
        for _ in 0..21 {
            let start = Instant::now();
            for _ in 0..batch {
                f()?;
            }
            dev.synchronize()?;
            samples.push(start.elapsed().as_secs_f64() * 1e6 / batch as f64);
        }
        samples.sort_by(f64::total_cmp);
        Ok(samples[samples.len() / 2])
    };
    let fused_us = time(&|| fused().map(drop))?;
    let unfused_us = time(&|| unfused().map(drop).map_err(CandleError::from))?;
    println!(
        "{name}: fused {fused_us:.1} us, candle unfused {unfused_us:.1} us ({:.2}x)",
        unfused_us / fused_us
    );
    Ok(())
}
