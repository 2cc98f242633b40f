//! What NVTX ranges add to a warm launch, off and on, in one process:
//! `KERNELKIT_NVTX=1 NVTX_INJECTION64_PATH=<tool> cargo run --release -p
//! kernelkit-bench --example nvtx_overhead [cpu|cuda] [launches] [turns]`.
//!
//! The tool is any NVTX injection library; the test's recording tool
//! (`crates/kernelkit/tests/nvtx_tool/record.c`) without `KK_NVTX_LOG`
//! only counts, so the difference is kernelkit's own work (the range's
//! name, the calls through the tool's slots) plus a trivial tool's. Turns
//! alternate off and on (`kernelkit::set_nvtx`); the medians are printed,
//! and their difference per launch: `nvtx.added_ns` (target <= 100 ns).

use std::time::Instant;

use kernelkit::{DType, Device, Kernel};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let device = match args.next().as_deref() {
        Some("cuda") => Device::cuda(0)?,
        _ => Device::cpu(),
    };
    let launches: u32 = args.next().map_or(Ok(200_000), |s| s.parse())?;
    let turns: usize = args.next().map_or(Ok(7), |s| s.parse())?;
    if !kernelkit::set_nvtx(true) {
        println!(
            "nvtx: no tool loaded (set KERNELKIT_NVTX=1 and NVTX_INJECTION64_PATH): nothing to \
             compare"
        );
        return Ok(());
    }
    let stream = device.new_stream()?;
    let kernel = Kernel::builder("nvtx_trivial")
        .inputs(["inp"])
        .outputs(["out"])
        .source("uint i = thread_position_in_grid.x; out[i] = inp[i];")
        .build()?;
    let x = device.array_from_slice(&[1.0f32], [1])?;
    let launch = kernel
        .call([&x])
        .output([1], DType::F32)
        .grid([1, 1, 1])
        .threadgroup([1, 1, 1])
        .on(&stream)
        .prepare()?;
    drop(launch.run()?);
    stream.synchronize()?;
    let time = |on: bool| -> Result<f64, kernelkit::Error> {
        kernelkit::set_nvtx(on);
        let t = Instant::now();
        for _ in 0..launches {
            drop(launch.run()?);
        }
        stream.synchronize()?;
        Ok(t.elapsed().as_secs_f64() * 1e9 / launches as f64)
    };
    let (mut off, mut on) = (Vec::new(), Vec::new());
    for _ in 0..turns {
        off.push(time(false)?);
        on.push(time(true)?);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (off, on) = (median(&mut off), median(&mut on));
    println!("nvtx.device = {}", device.label());
    println!("nvtx.off_ns = {off:.0}");
    println!("nvtx.on_ns = {on:.0}");
    println!("nvtx.added_ns = {:.0} (target <= 100)", on - off);
    Ok(())
}
