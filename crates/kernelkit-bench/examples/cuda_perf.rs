//! The three CUDA performance ratios of issue 4, measured in one process on
//! GPU 0, printed as `key = value` lines and a summary:
//!
//! 1. warm dispatch (memo hit + cache hit + output allocation + launch,
//!    enqueue only) per call, over a raw `cuLaunchKernel` loop of the same
//!    function with its arguments marshalled once (`time_raw_launches`),
//!    sampled in alternation, the ratio taken per pair (median of the
//!    pairs; the ratio of the two series' medians is printed too);
//! 2. `y = a * x + b` over 1 GiB of f32 (float4 loads) as a fraction of a
//!    plain float4 copy kernel's bandwidth (the caller's script adds the
//!    driver's device-to-device copy, measured with CuPy in the same run);
//! 3. a cold compile of a trivial kernel (first call on a fresh device:
//!    NVRTC + load + launch) over NVRTC alone on the same source and options.
//!
//! Plus, for information: N distinct cold kernels from N threads, wall time
//! over the slowest single compile (NVRTC serializes inside one process).
//!
//! `cuda_perf parallel` measures only compiles in parallel (issue 6's
//! `parallel_compile_speedup`): the first compile of the process, then for
//! N = 8 and 16, N new kernels one after another against N new kernels from
//! N threads, compiled in this process only and with compile workers (a
//! first burst, which starts them, and a second one on warm workers). Run
//! it with `KERNELKIT_CACHE=memory`, next to a `kernelkit` binary (or with
//! `KERNELKIT_WORKER`) for workers, and again with
//! `KERNELKIT_COMPILE_WORKERS=0` to see the variable turn them off.
//!
//! `cuda_perf dispatch` measures only the first ratio.
//!
//! Run: `cargo run --release -p kernelkit-bench --features cuda --example
//! cuda_perf [parallel|dispatch]`.

use std::ffi::CString;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use std::sync::Barrier;

use kernelkit::{
    Array, BodyLanguage, CompileWorkers, CudaCompileOptions, DType, Device, Dialect, Kernel,
    Outputs, Stream,
};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn us(d: Duration, n: u32) -> f64 {
    d.as_secs_f64() * 1e6 / n as f64
}

fn trivial(name: &str, body: &str) -> Res<Kernel> {
    Ok(Kernel::builder(name)
        .inputs(["inp"])
        .outputs(["out"])
        .source(body)
        .build()?)
}

fn dispatch(dev: &Device, s: &Stream) -> Res<Dispatch> {
    let k = trivial(
        "trivial",
        "uint i = thread_position_in_grid.x; out[i] = inp[i];",
    )?;
    let x = dev.array_from_slice(&[1.0f32; 256], [256])?;
    let call = || {
        k.call([&x])
            .output([256], DType::F32)
            .grid([256, 1, 1])
            .threadgroup([256, 1, 1])
            .on(s)
    };
    for _ in 0..200 {
        call().launch()?;
    }
    s.synchronize()?;
    let n = 2000u32;
    let launch = call().prepare()?;
    // Where the time over the raw launch goes, each sampled in alternation
    // with the others: `run` is a prepared launch (output allocation,
    // argument marshalling, launch, the output's drop: no call building,
    // checks or memo); `host` is the call's host side alone (building,
    // checks, memo hit, function), no output and no launch.
    let (mut raw, mut warm, mut nomemo, mut run, mut host) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    // Samples alternate, so a machine's drift hits all series alike; the
    // medians of 11 are steadier than of 7 on the GPU host's noisy vCPUs.
    for _ in 0..11 {
        raw.push(us(launch.time_raw_launches(n)?, n));
        s.synchronize()?;
        let t = Instant::now();
        for _ in 0..n {
            drop(call().launch()?);
        }
        warm.push(us(t.elapsed(), n));
        s.synchronize()?;
        let t = Instant::now();
        for _ in 0..n {
            drop(launch.run()?);
        }
        run.push(us(t.elapsed(), n));
        s.synchronize()?;
        let t = Instant::now();
        for _ in 0..n {
            call().compile()?;
        }
        host.push(us(t.elapsed(), n));
        let t = Instant::now();
        for _ in 0..n {
            drop(call().prepare_without_memo()?.run()?);
        }
        nomemo.push(us(t.elapsed(), n));
        s.synchronize()?;
    }
    println!("dispatch.raw_us.all = {raw:.3?}");
    println!("dispatch.warm_us.all = {warm:.3?}");
    println!("dispatch.prepared_run_us = {:.3}", median(run));
    println!("dispatch.host_hit_us = {:.3}", median(host));
    // Each warm sample follows its raw sample on the same machine state, so
    // the ratio is taken per pair, then the median: the medians of the two
    // series alone can come from different moments of a drifting machine
    // (both are printed; see BENCHMARKS.md).
    let pairs: Vec<f64> = warm.iter().zip(&raw).map(|(w, r)| w / r).collect();
    println!("dispatch.ratio_pairs.all = {pairs:.3?}");
    let ratio_of_medians = median(warm.clone()) / median(raw.clone());
    println!("dispatch.ratio_of_medians = {ratio_of_medians:.3}");
    Ok(Dispatch {
        raw: median(raw),
        warm: median(warm),
        nomemo: median(nomemo),
        ratio: median(pairs),
    })
}

/// The dispatch figures: medians, and the median of the per-pair ratios.
struct Dispatch {
    raw: f64,
    warm: f64,
    nomemo: f64,
    ratio: f64,
}

fn bandwidth(dev: &Device, s: &Stream) -> Res<(f64, f64)> {
    let n: usize = 1 << 28; // 1 GiB of f32
    let x = dev.array_from_slice(&vec![1.5f32; n], [n])?;
    let a = dev.array_from_slice(&[2.0f32], [])?;
    let b = dev.array_from_slice(&[0.25f32], [])?;
    // CUDA C++ bodies (CUDA's own float4 and make_float4: 16-byte loads
    // and stores), as a hand-written CUDA kernel would be.
    let axpb = Kernel::builder("axpb")
        .inputs(["x", "a", "b"])
        .outputs(["y"])
        .language(BodyLanguage::Cuda)
        .source(concat!(
            "unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;\n",
            "const float4 v = reinterpret_cast<const float4*>(x)[i];\n",
            "const float av = a, bv = b;\n",
            "reinterpret_cast<float4*>(y)[i] = make_float4(av * v.x + bv, av * v.y + bv, av * v.z + bv, av * v.w + bv);"
        ))
        .build()?;
    let copy = Kernel::builder("copy4")
        .inputs(["x"])
        .outputs(["y"])
        .language(BodyLanguage::Cuda)
        .source(concat!(
            "unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;\n",
            "reinterpret_cast<float4*>(y)[i] = reinterpret_cast<const float4*>(x)[i];"
        ))
        .build()?;
    let grid = [(n / 4) as u64, 1, 1];
    let run_axpb = || -> Res<Outputs> {
        Ok(axpb
            .call([&x, &a, &b])
            .output([n as i64], DType::F32)
            .grid(grid)
            .threadgroup([256, 1, 1])
            .on(s)
            .launch()?)
    };
    let run_copy = || -> Res<Outputs> {
        Ok(copy
            .call([&x])
            .output([n as i64], DType::F32)
            .grid(grid)
            .threadgroup([256, 1, 1])
            .on(s)
            .launch()?)
    };
    let y = run_axpb()?;
    let host: Vec<f32> = y[0].to_vec()?;
    assert!(host.iter().all(|v| *v == 3.25), "axpb result is wrong");
    drop((y, host));
    let bytes = 2.0 * (n * 4) as f64;
    let time = |f: &dyn Fn() -> Res<Outputs>| -> Res<f64> {
        for _ in 0..3 {
            f()?;
        }
        s.synchronize()?;
        let iters = 20;
        let t = Instant::now();
        for _ in 0..iters {
            f()?;
        }
        s.synchronize()?;
        Ok(bytes * iters as f64 / t.elapsed().as_secs_f64() / 1e12)
    };
    let (mut ax, mut cp) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        ax.push(time(&run_axpb)?);
        cp.push(time(&run_copy)?);
    }
    Ok((median(ax), median(cp)))
}

/// NVRTC options as kernelkit builds them (arch from the description).
fn nvrtc_options(dev: &Device) -> Vec<String> {
    let d = dev.description();
    let sm = d
        .split("(sm_")
        .nth(1)
        .and_then(|r| r.split(',').next())
        .unwrap_or("90")
        .to_string();
    let major: u32 = sm[..sm.len() - 1].parse().unwrap_or(9);
    // As kernelkit's own compile (backend/cuda/compile.rs): its preludes
    // declare device functions without `__device__`.
    let mut opts = vec![
        format!(
            "--gpu-architecture=sm_{sm}{}",
            if major >= 9 { "a" } else { "" }
        ),
        "--device-as-default-execution-space".to_string(),
    ];
    let homes: Vec<PathBuf> = ["CUDA_HOME", "CUDA_PATH"]
        .iter()
        .filter_map(std::env::var_os)
        .map(PathBuf::from)
        .chain([PathBuf::from("/usr/local/cuda")])
        .collect();
    if let Some(home) = homes
        .iter()
        .find(|h| h.join("include/cuda_fp16.h").is_file())
    {
        opts.push(format!("-I{}", home.join("include").display()));
        if home.join("include/cccl").is_dir() {
            opts.push(format!("-I{}", home.join("include/cccl").display()));
        }
    }
    opts.extend(
        std::env::var("KERNELKIT_NVRTC_FLAGS")
            .unwrap_or_default()
            .split_whitespace()
            .map(str::to_string),
    );
    opts
}

/// NVRTC alone: create + compile + fetch the cubin.
fn nvrtc_alone(source: &str, opts: &[String]) -> Res<f64> {
    use cudarc::nvrtc::result as nv;
    let src = CString::new(source)?;
    let t = Instant::now();
    let prog = nv::create_program(&src, None)?;
    // SAFETY: the program is live; the options are NUL-free strings.
    let r = unsafe { nv::compile_program(prog, opts) };
    let mut size = 0usize;
    // SAFETY: the program compiled; size then bytes.
    unsafe {
        cudarc::nvrtc::sys::nvrtcGetCUBINSize(prog, &mut size);
        let mut cubin = vec![0u8; size];
        cudarc::nvrtc::sys::nvrtcGetCUBIN(prog, cubin.as_mut_ptr().cast());
    }
    let elapsed = t.elapsed().as_secs_f64() * 1e3;
    // SAFETY: destroys the program created above.
    unsafe { nv::destroy_program(prog)? };
    r?;
    Ok(elapsed)
}

fn cold(dev: &Device) -> Res<(f64, f64)> {
    let opts = nvrtc_options(dev);
    println!("cold.nvrtc_options = {opts:?}");
    let (mut raw, mut kk) = (Vec::new(), Vec::new());
    for r in 0..5 {
        let fresh = Device::new_cuda(0)?;
        let s = fresh.new_stream()?;
        let x = fresh.array_from_slice(&[1.0f32; 256], [256])?;
        // A body no earlier run compiled: the artifact store on the machine
        // must not answer for a cold compile.
        let tag = unique_tag();
        let k = trivial(
            &format!("cold{r}"),
            &format!("uint i = thread_position_in_grid.x; out[i] = inp[i] + {r}.5f; // {tag}"),
        )?;
        let call = || {
            k.call([&x])
                .output([256], DType::F32)
                .grid([256, 1, 1])
                .on(&s)
        };
        let source = call().generate(Dialect::Cuda)?.source;
        raw.push(nvrtc_alone(&source, &opts)?);
        let t = Instant::now();
        call().launch()?;
        s.synchronize()?;
        kk.push(t.elapsed().as_secs_f64() * 1e3);
    }
    println!("cold.nvrtc_ms.all = {raw:.2?}");
    println!("cold.kernelkit_ms.all = {kk:.2?}");
    Ok((median(raw), median(kk)))
}

/// One new trivial kernel (`tag` makes it new) ready to run on `dev`:
/// its stream and input exist, nothing is compiled yet.
struct NewKernel {
    s: Stream,
    x: Array,
    k: Kernel,
    want: f32,
}

impl NewKernel {
    fn new(dev: &Device, tag: &str) -> Res<NewKernel> {
        Ok(NewKernel {
            s: dev.new_stream()?,
            x: dev.array_from_slice(&[1.0f32; 64], [64])?,
            k: trivial(
                "par",
                &format!("uint i = thread_position_in_grid.x; out[i] = inp[i] * {tag}.25f;"),
            )?,
            want: format!("{tag}.25").parse()?,
        })
    }

    /// Compiles, launches and waits; milliseconds.
    fn run(&self) -> Res<f64> {
        let t = Instant::now();
        let out = self
            .k
            .call([&self.x])
            .output([64], DType::F32)
            .grid([64, 1, 1])
            .on(&self.s)
            .launch()?;
        self.s.synchronize()?;
        let ms = t.elapsed().as_secs_f64() * 1e3;
        let v: Vec<f32> = out[0].to_vec()?;
        assert!(v.iter().all(|&y| y == self.want), "computed {}", v[0]);
        Ok(ms)
    }
}

/// `threads` new kernels from `threads` threads released together: wall
/// milliseconds and each thread's.
fn burst(dev: &Device, threads: usize, tag: u64) -> Res<(f64, Vec<f64>)> {
    let jobs = (0..threads)
        .map(|i| NewKernel::new(dev, &format!("{tag}{i:02}")))
        .collect::<Res<Vec<_>>>()?;
    let barrier = Barrier::new(threads + 1);
    let (wall, singles) = std::thread::scope(|scope| {
        let handles: Vec<_> = jobs
            .iter()
            .map(|job| {
                let barrier = &barrier;
                scope.spawn(move || {
                    barrier.wait();
                    job.run().map_err(|e| e.to_string())
                })
            })
            .collect();
        barrier.wait();
        let t = Instant::now();
        let singles: Result<Vec<f64>, String> =
            handles.into_iter().map(|h| h.join().unwrap()).collect();
        (t.elapsed().as_secs_f64() * 1e3, singles)
    });
    Ok((wall, singles?))
}

/// The same new kernels one after another on this thread: total ms and
/// each one's.
fn serial(dev: &Device, n: usize, tag: u64) -> Res<(f64, Vec<f64>)> {
    let jobs = (0..n)
        .map(|i| NewKernel::new(dev, &format!("{tag}{i:02}")))
        .collect::<Res<Vec<_>>>()?;
    let t = Instant::now();
    let each = jobs.iter().map(NewKernel::run).collect::<Res<Vec<_>>>()?;
    Ok((t.elapsed().as_secs_f64() * 1e3, each))
}

fn parallel_cold(threads: usize) -> Res<(f64, f64)> {
    let fresh = Device::new_cuda(0)?;
    let (wall, singles) = burst(&fresh, threads, unique_tag())?;
    println!("parallel_cold.thread_ms = {singles:.1?}");
    Ok((
        wall,
        fresh.cache_stats().compile_ns as f64 / 1e6 / threads as f64,
    ))
}

/// A number no earlier run of this program used (kernels built from it
/// are new to every cache).
fn unique_tag() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let base = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() % 100_000)
        .unwrap_or(0);
    (base * 1000 + NEXT.fetch_add(1, Ordering::Relaxed)) * 100
}

/// `cuda_perf parallel`: see the module documentation. Each figure is the
/// median of three rounds, interleaved, so that the machine's drift (its
/// clock varies by tens of percent over seconds) hits all of them alike.
fn parallel_main() -> Res<()> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let dev = Device::new_cuda(0)?;
    println!("device = {}", dev.description());
    println!("parallel.cores = {cores}");
    let first = NewKernel::new(&dev, &unique_tag().to_string())?.run()?;
    println!("parallel.first_compile_ms = {first:.1}");
    let in_process = CudaCompileOptions::default().workers(CompileWorkers::InProcess);
    let (serial_dev, inproc_dev) = (Device::new_cuda(0)?, Device::new_cuda_with(0, &in_process)?);
    let workers_dev = Device::new_cuda(0)?;
    let mut summary = Vec::new();
    for n in [8usize, 16] {
        let (first_burst, each) = burst(&workers_dev, n, unique_tag())?;
        println!("parallel.n{n}.workers_first_burst_ms = {first_burst:.1} (threads {each:.1?})");
        let (mut ser, mut inproc, mut warm) = (Vec::new(), Vec::new(), Vec::new());
        for round in 0..3 {
            let (ms, each) = serial(&serial_dev, n, unique_tag())?;
            println!("parallel.n{n}.r{round}.serial_ms = {ms:.1} (each {each:.1?})");
            ser.push(ms);
            let (ms, each) = burst(&inproc_dev, n, unique_tag())?;
            println!("parallel.n{n}.r{round}.in_process_ms = {ms:.1} (threads {each:.1?})");
            inproc.push(ms);
            let (ms, each) = burst(&workers_dev, n, unique_tag())?;
            println!("parallel.n{n}.r{round}.workers_ms = {ms:.1} (threads {each:.1?})");
            warm.push(ms);
        }
        let (ser, inproc, warm) = (median(ser), median(inproc), median(warm));
        let target = 0.75 * n.min(cores) as f64;
        println!(
            "parallel.n{n}.speedup: in-process {:.2}, workers {:.2}, workers' first burst {:.2} (target >= {target:.2}; serial {ser:.0} ms)",
            ser / inproc,
            ser / warm,
            ser / first_burst
        );
        summary.push(format!(
            "N={n}: serial {ser:.0} ms; in-process x{:.2}; workers x{:.2} (first burst x{:.2}; target {target:.2})",
            ser / inproc,
            ser / warm,
            ser / first_burst
        ));
    }
    println!(
        "SUMMARY parallel: first compile {first:.1} ms; {}",
        summary.join("; ")
    );
    Ok(())
}

/// `cold [SOURCE]`: one cold compile's parts, in this process: NVRTC alone
/// on SOURCE (a file of generated CUDA, e.g. `kernelkit source --dialect
/// cuda SPEC`) from the main thread and from a new one, then kernelkit's
/// cold call beside NVRTC alone on its own source (as in the full run).
fn cold_main() -> Res<()> {
    let dev = Device::cuda(0)?;
    println!("device = {}", dev.description());
    if let Some(path) = std::env::args().nth(2) {
        let text = std::fs::read_to_string(&path)?;
        let opts = nvrtc_options(&dev);
        // Six compiles of the file, each with its `TAG` made new.
        let turns = |text: &str, opts: &[String]| -> Result<Vec<f64>, String> {
            (0..6)
                .map(|n| {
                    let src = text.replace("TAG", &format!("{}_{n}", unique_tag()));
                    nvrtc_alone(&src, opts).map_err(|e| e.to_string())
                })
                .collect()
        };
        let main = turns(&text, &opts)?;
        let spawned = std::thread::scope(|s| s.spawn(|| turns(&text, &opts)).join())
            .map_err(|_| "the compiling thread panicked")??;
        println!(
            "cold.file_nvrtc_main_ms = {:.1} (all {main:.1?})",
            median(main.clone())
        );
        println!(
            "cold.file_nvrtc_thread_ms = {:.1} (all {spawned:.1?})",
            median(spawned.clone())
        );
    }
    let (nvrtc, kk) = cold(&dev)?;
    println!("cold.nvrtc_ms = {nvrtc:.2}");
    println!("cold.kernelkit_ms = {kk:.2}");
    Ok(())
}

fn main() -> Res<()> {
    if std::env::args().nth(1).as_deref() == Some("parallel") {
        return parallel_main();
    }
    if std::env::args().nth(1).as_deref() == Some("cold") {
        return cold_main();
    }
    let dev = Device::cuda(0)?;
    println!("device = {}", dev.description());
    let s = dev.new_stream()?;
    let Dispatch {
        raw,
        warm,
        nomemo,
        ratio,
    } = dispatch(&dev, &s)?;
    println!("dispatch.raw_us = {raw:.3}");
    println!("dispatch.warm_us = {warm:.3}");
    println!("dispatch.without_memo_us = {nomemo:.3}");
    println!("dispatch.ratio = {ratio:.3}");
    if std::env::args().nth(1).as_deref() == Some("dispatch") {
        return Ok(());
    }
    let (axpb, copy) = bandwidth(&dev, &s)?;
    println!("bandwidth.axpb_tbs = {axpb:.3}");
    println!("bandwidth.copy_kernel_tbs = {copy:.3}");
    println!("bandwidth.ratio_to_copy_kernel = {:.3}", axpb / copy);
    let (nvrtc, kk) = cold(&dev)?;
    println!("cold.nvrtc_ms = {nvrtc:.2}");
    println!("cold.kernelkit_ms = {kk:.2}");
    println!("cold.ratio = {:.3}", kk / nvrtc);
    let (wall, mean_compile) = parallel_cold(8)?;
    println!("parallel_cold.wall_ms = {wall:.1}");
    println!("parallel_cold.mean_compile_ms = {mean_compile:.1}");
    println!(
        "SUMMARY dispatch {:.2} us vs raw {:.2} us (x{:.3} per pair, target <= 1.15); axpb {:.2} TB/s = {:.1}% of copy kernel; cold {:.1} ms vs NVRTC {:.1} ms (x{:.3}, target <= 1.10)",
        warm,
        raw,
        ratio,
        axpb,
        100.0 * axpb / copy,
        kk,
        nvrtc,
        kk / nvrtc
    );
    Ok(())
}
