//! A fused kernel on candle tensors, checked against candle's own result
//! and timed against candle's unfused sequence:
//!
//! - `silu(a) * b` (candle: `silu`, then `mul`: two kernels, one
//!   intermediate tensor), with `a` a transposed view, read in place;
//! - RMSNorm, `x / sqrt(mean(x^2) + eps) * w` over the last axis (candle:
//!   `sqr`, `mean_keepdim`, `add`, `sqrt`, `broadcast_div`,
//!   `broadcast_mul`: six kernels).
//!
//! `cargo run --release -p kernelkit --features candle --example candle_fused [-- ROWS COLS]`

use std::time::Instant;

use candle_core::{DType, Device, Tensor, D};
use kernelkit::interop::candle::{launch, CandleError};
use kernelkit::Kernel;

fn main() -> Result<(), CandleError> {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let (rows, cols) = (
        args.first().copied().unwrap_or(1024),
        args.get(1).copied().unwrap_or(1024),
    );
    let dev = Device::Cpu;

    // silu(a) * b, `a` transposed (strides (1, rows)): a view, not a copy.
    let silu_mul = Kernel::builder("silu_mul")
        .inputs(["a", "b"])
        .outputs(["y"])
        .source(
            "uint i = thread_position_in_grid.x;\n\
             uint r = i / b_shape[1], c = i % b_shape[1];\n\
             float x = a[r * a_strides[0] + c * a_strides[1]];\n\
             y[i] = x / (1.0f + metal::exp(-x)) * b[i];",
        )
        .ensure_row_contiguous(false)
        .build()?;
    let a = Tensor::randn(0f32, 1.0, (cols, rows), &dev)?.t()?;
    let b = Tensor::randn(0f32, 1.0, (rows, cols), &dev)?;
    let n = (rows * cols) as u64;
    let fused = || {
        launch(&silu_mul, &[&a, &b], &[(&[rows, cols], DType::F32)], |c| {
            c.grid([n, 1, 1]).threadgroup([256, 1, 1])
        })
        .map(|mut t| t.remove(0))
    };
    let unfused = || candle_nn_free_silu(&a)?.mul(&b);
    compare("silu(a) * b", fused, unfused)?;

    // RMSNorm over the last axis: one thread per row.
    let rms_norm = Kernel::builder("rms_norm")
        .inputs(["x", "w"])
        .outputs(["y"])
        .source(
            "uint r = thread_position_in_grid.x; uint n = x_shape[1]; float ss = 0.0f;\n\
             for (uint c = 0; c < n; ++c) ss += x[r * n + c] * x[r * n + c];\n\
             float inv = 1.0f / metal::sqrt(ss / n + EPS_E6 * 1e-6f);\n\
             for (uint c = 0; c < n; ++c) y[r * n + c] = x[r * n + c] * inv * w[c];",
        )
        .build()?;
    let x = Tensor::randn(0f32, 1.0, (rows, cols), &dev)?;
    let w = Tensor::randn(1f32, 0.1, cols, &dev)?;
    let eps = 1e-5;
    let fused = || {
        launch(&rms_norm, &[&x, &w], &[(&[rows, cols], DType::F32)], |c| {
            c.template("EPS_E6", 10)
                .grid([rows as u64, 1, 1])
                .threadgroup([32, 1, 1])
        })
        .map(|mut t| t.remove(0))
    };
    let unfused = || {
        let ms = x.sqr()?.mean_keepdim(D::Minus1)?;
        x.broadcast_div(&(ms + eps)?.sqrt()?)?.broadcast_mul(&w)
    };
    compare("rms_norm", fused, unfused)?;
    Ok(())
}

/// candle's `silu` as candle-nn writes it (candle-core has the op).
fn candle_nn_free_silu(t: &Tensor) -> candle_core::Result<Tensor> {
    t.silu()
}

/// Checks that the fused result agrees with candle's, then times both
/// (median of 15 runs after a warm-up).
fn compare(
    name: &str,
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
        f()?;
        let mut runs = Vec::new();
        for _ in 0..15 {
            let start = Instant::now();
            f()?;
            runs.push(start.elapsed().as_secs_f64() * 1e3);
        }
        runs.sort_by(f64::total_cmp);
        Ok(runs[runs.len() / 2])
    };
    let fused_ms = time(&|| fused().map(drop))?;
    let unfused_ms = time(&|| unfused().map(drop).map_err(CandleError::from))?;
    println!(
        "{name}: fused {fused_ms:.3} ms, candle unfused {unfused_ms:.3} ms ({:.2}x)",
        unfused_ms / fused_ms
    );
    Ok(())
}
