//! `kernelkit demo`: the reproduction from the concurrent-kernel-cache fix.
//!
//! Each round, `--threads` threads meet at a barrier; thread `i` builds its
//! own kernel `out[i] = inp[i] + i`, compiles and runs it on its own stream,
//! and checks the result. Later rounds build the same sources again from
//! new kernel objects, so they must hit the device's kernel cache: the
//! summary shows exactly one compile per distinct kernel.

use std::process::ExitCode;
use std::sync::{Arc, Barrier};
use std::time::Instant;

use kernelkit::{DType, Device, Kernel};

/// Arguments of `kernelkit demo`.
#[derive(clap::Args)]
pub struct Args {
    /// Threads per round, each with its own distinct kernel.
    #[arg(long, default_value_t = 16)]
    threads: usize,
    /// Rounds; every round after the first should compile nothing.
    #[arg(long, default_value_t = 1)]
    rounds: usize,
    /// `cpu`, `cuda` or `cuda:N` (default: CUDA if available, else the CPU).
    #[arg(long)]
    device: Option<String>,
    /// Elements per array.
    #[arg(long, default_value_t = 1024)]
    elements: usize,
    /// Text put in a comment of every kernel's source: another salt makes
    /// the same kernels new to every cache (to measure cold fleets).
    #[arg(long)]
    salt: Option<String>,
}

/// One thread's work: build, compile, run and check kernel `index`.
fn worker(
    device: &Device,
    index: usize,
    elements: usize,
    salt: Option<&str>,
    barrier: &Barrier,
) -> Result<(), String> {
    let stream = device.new_stream().map_err(|e| e.to_string())?;
    let data: Vec<f32> = (0..elements).map(|i| i as f32).collect();
    let input = device
        .array_from_slice(&data, [elements])
        .map_err(|e| e.to_string())?;
    let kernel = Kernel::builder("concurrent_kernel")
        .inputs(["inp"])
        .outputs(["out"])
        .source(format!(
            "{}uint i = thread_position_in_grid.x; out[i] = inp[i] + {index}.0f;",
            salt.map_or(String::new(), |s| format!(
                "/* {} */\n",
                s.replace("*/", "* /")
            ))
        ))
        .build()
        .map_err(|e| e.to_string())?;
    barrier.wait();
    let out = kernel
        .call([&input])
        .output([elements as i64], DType::F32)
        .grid([elements as u64, 1, 1])
        .threadgroup([256, 1, 1])
        .on(&stream)
        .launch()
        .map_err(|e| e.to_string())?;
    let host: Vec<f32> = out[0].to_vec().map_err(|e| e.to_string())?;
    match host
        .iter()
        .enumerate()
        .find(|(i, v)| **v != *i as f32 + index as f32)
    {
        None => Ok(()),
        Some((i, v)) => Err(format!(
            "kernel {index}: out[{i}] = {v}, expected {}",
            i as f32 + index as f32
        )),
    }
}

/// Runs the demo.
pub fn main(args: Args) -> ExitCode {
    let device = match args.device.as_deref() {
        Some(name) => Device::from_name(name),
        None => Device::default_device(),
    };
    let device = match device {
        Ok(d) => d,
        Err(e) => {
            eprintln!("kernelkit demo: {e}");
            return ExitCode::from(2);
        }
    };
    let threads = args.threads.max(1);
    let elements = args.elements.max(1);
    println!(
        "demo: {} threads x {} rounds on {} ({})",
        threads,
        args.rounds,
        device.label(),
        device.description()
    );
    let mut failed = false;
    for round in 1..=args.rounds {
        let started = Instant::now();
        let barrier = Arc::new(Barrier::new(threads));
        let errors: Vec<String> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..threads)
                .map(|index| {
                    let (device, barrier, salt) = (&device, &barrier, args.salt.as_deref());
                    scope.spawn(move || worker(device, index, elements, salt, barrier))
                })
                .collect();
            handles
                .into_iter()
                .filter_map(|h| match h.join() {
                    Ok(Ok(())) => None,
                    Ok(Err(e)) => Some(e),
                    Err(_) => Some("a worker thread panicked".to_string()),
                })
                .collect()
        });
        let stats = device.cache_stats();
        if errors.is_empty() {
            println!(
                "round {round}: {threads} kernels, all results right, {:.1} ms (compiles so far: {})",
                started.elapsed().as_secs_f64() * 1e3,
                stats.compiles
            );
        } else {
            failed = true;
            println!(
                "round {round}: {} of {threads} kernels FAILED",
                errors.len()
            );
            for e in &errors {
                println!("  {e}");
            }
        }
    }
    println!("cache: {}", device.cache_stats().summary());
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
