//! A warm tuned call and the same call untuned, N of one kind in a
//! process, for an instruction count under `valgrind --tool=callgrind`
//! (the difference of two runs over their difference in N is the
//! instructions one call costs; no timing). An investigation of
//! BENCHMARKS.md's warm tuned call figure.
//!
//! Usage: tune_warm_count tuned|untuned N [cpu|cuda]
//! (`cuda`: GPU 0, or tools/fakecuda's stand-in driver on a machine
//! without one)

use kernelkit::{DType, Device, Kernel, TuneConfig, Tuning};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let kind = args.next().unwrap_or_default();
    let n: u64 = args.next().and_then(|n| n.parse().ok()).unwrap_or(1000);
    let device = match args.next().as_deref() {
        Some("cuda") => Device::cuda(0)?,
        _ => Device::cpu(),
    };
    let stream = device.default_stream();
    let kernel = Kernel::builder("tune_warm_count")
        .inputs(["inp"])
        .outputs(["out"])
        .source("uint i = thread_position_in_grid.x * TILE; if (i < inp_shape[0]) out[i] = inp[i] * 2.0f;")
        .build()?;
    let small = device.array_from_slice(&[1.0f32; 256], [256])?;
    let tuning = Tuning::new([TuneConfig::new([64, 1, 1]).template("TILE", 1)]);
    let tuned = || {
        kernel
            .call([&small])
            .output([256], DType::F32)
            .grid([256, 1, 1])
            .on(stream)
            .tuned(&tuning)
            .launch()
    };
    let untuned = || {
        kernel
            .call([&small])
            .output([256], DType::F32)
            .grid([256, 1, 1])
            .on(stream)
            .template("TILE", 1)
            .threadgroup([64, 1, 1])
            .launch()
    };
    tuned()?;
    untuned()?;
    for _ in 0..n {
        std::hint::black_box(if kind == "tuned" {
            tuned()?
        } else {
            untuned()?
        });
    }
    stream.synchronize()?;
    Ok(())
}
