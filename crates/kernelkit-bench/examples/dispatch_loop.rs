//! A warm dispatch loop for profiling the host path (`perf record`):
//! `cargo run --release -p kernelkit-bench --example dispatch_loop [cpu|cuda] [calls] [call|run|host]`.
//! Prints the time per `Call::launch` of a trivial kernel (`call`), per
//! `Launch::run` of it prepared (`run`), or per `Call::compile` (`host`).

use std::time::Instant;

use kernelkit::{DType, Device, Kernel};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let device = match args.next().as_deref() {
        Some("cuda") => Device::cuda(0)?,
        _ => Device::cpu(),
    };
    let calls: u32 = args.next().map_or(Ok(2_000_000), |s| s.parse())?;
    let stream = device.new_stream()?;
    let kernel = Kernel::builder("trivial")
        .inputs(["inp"])
        .outputs(["out"])
        .source("uint i = thread_position_in_grid.x; out[i] = inp[i];")
        .build()?;
    let x = device.array_from_slice(&[1.0f32], [1])?;
    let call = || {
        kernel
            .call([&x])
            .output([1], DType::F32)
            .grid([1, 1, 1])
            .threadgroup([1, 1, 1])
            .on(&stream)
    };
    call().launch()?;
    stream.synchronize()?;
    let mode = args.next().unwrap_or_else(|| "call".into());
    let launch = call().prepare()?;
    let t = Instant::now();
    match mode.as_str() {
        // A prepared launch: output allocation, launch, the output's drop.
        "run" => {
            for _ in 0..calls {
                drop(launch.run()?);
            }
        }
        // The call's host side alone: building, checks, memo hit, function.
        "host" => {
            for _ in 0..calls {
                call().compile()?;
            }
        }
        _ => {
            for _ in 0..calls {
                drop(call().launch()?);
            }
        }
    }
    stream.synchronize()?;
    let ns = t.elapsed().as_secs_f64() * 1e9 / calls as f64;
    println!("{ns:.0} ns per {mode} on {}", device.label());
    Ok(())
}
