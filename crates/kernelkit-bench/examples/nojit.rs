//! The 100-variant workload of production without JIT (issue 43,
//! docs/production.md): record it, replay it from a bundle with JIT
//! forbidden, and measure what recording costs a warm call.
//!
//! ```text
//! nojit record  --manifest M [--backend cpu|cuda]
//! nojit replay  --bundle B --trusted K.pub [--backend cpu|cuda] [--exclude-target sm_90a] [--settle-ms N]
//!               [--imports N] [--keep-device]
//! nojit warm    [--backend cpu|cuda]
//! ```
//!
//! The workload: 100 distinct variants of three kernels, 40 of an
//! offset kernel (one per template value; the last 10 called with a
//! transposed, strided input, which kernelkit copies row-major first: on a
//! GPU with its own strided-copy kernel, found in the bundle as the
//! variants are), 40 of a cast kernel (two dtypes by 20 values), 20 of a
//! kernel reading a transposed (strided) input through its strides; each
//! call's result is checked.
//!
//! `replay` imports the bundle into a fresh store (timed; entries whose
//! target is `--exclude-target` are left out, to make a GPU fall back to
//! PTX), sets `KERNELKIT_JIT=forbid`, and calls every variant once on a
//! fresh device: it prints compiles (0 expected), PTX loads, disk hits,
//! and the first calls' times beside a warm-disk first call (a second fresh
//! device on the same store, where every artifact was read once already).
//! Then, on a store holding the bundle without kernelkit's strided-copy
//! kernel, a strided call must be the typed `JitForbidden` naming it, and
//! the device must go on.
//! With `KERNELKIT_LOG=kernelkit::cache::store=debug` the import's
//! phases (files written, renames, sync) are logged.
//! `warm` times warm calls of one variant with recording off and on, in
//! turns, in one process.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use kernelkit::cache::bundle::{self, TrustedKeys};
use kernelkit::cache::store::ArtifactStore;
use kernelkit::kernel::jit::{self, JitPolicy};
use kernelkit::kernel::record;
use kernelkit::{CacheMode, DType, Device, Kernel};

fn kernels() -> [Kernel; 3] {
    let offset = Kernel::builder("nojit_offset")
        .inputs(["inp"])
        .outputs(["out"])
        .source("uint i = thread_position_in_grid.x; out[i] = inp[i] + float(S);")
        .build()
        .unwrap();
    let cast = Kernel::builder("nojit_cast")
        .inputs(["inp"])
        .outputs(["out"])
        .source("uint i = thread_position_in_grid.x; out[i] = float(T(inp[i])) + float(K);")
        .build()
        .unwrap();
    let strided = Kernel::builder("nojit_strided")
        .inputs(["inp"])
        .outputs(["out"])
        .source(
            "uint i = thread_position_in_grid.x; uint r = i / 8, c = i % 8;\n\
             out[i] = inp[r * inp_strides[0] + c * inp_strides[1]] * float(M);",
        )
        .ensure_row_contiguous(false)
        .build()
        .unwrap();
    [offset, cast, strided]
}

/// Runs variant `n` (0..100) on `device`; checks its result.
fn run(ks: &[Kernel; 3], device: &Device, n: usize) -> kernelkit::Result<()> {
    let data: Vec<f32> = (0..64).map(|i| i as f32).collect();
    let x = device.array_from_slice(&data, [8, 8])?;
    let (out, want): (Vec<f32>, Box<dyn Fn(usize) -> f32>) = if n < 30 {
        let s = n as i32;
        let out = ks[0]
            .call([&x])
            .template("S", s)
            .output([64], DType::F32)
            .grid([64, 1, 1])
            .on(device.default_stream())
            .launch()?;
        (out[0].to_vec()?, Box::new(move |i| i as f32 + s as f32))
    } else if n < 40 {
        // A strided input of a kernel that asks for row-contiguous ones:
        // kernelkit copies it first.
        let s = n as i32;
        let xt = x.transpose();
        let out = ks[0]
            .call([&xt])
            .template("S", s)
            .output([64], DType::F32)
            .grid([64, 1, 1])
            .on(device.default_stream())
            .launch()?;
        (
            out[0].to_vec()?,
            Box::new(move |i| ((i % 8) * 8 + i / 8) as f32 + s as f32),
        )
    } else if n < 80 {
        let k = (n - 40) as i32 % 20;
        let t = if n - 40 < 20 { DType::F32 } else { DType::I32 };
        let out = ks[1]
            .call([&x])
            .template("T", t)
            .template("K", k)
            .output([64], DType::F32)
            .grid([64, 1, 1])
            .on(device.default_stream())
            .launch()?;
        (out[0].to_vec()?, Box::new(move |i| i as f32 + k as f32))
    } else {
        let m = (n - 80) as i32;
        let xt = x.transpose();
        let out = ks[2]
            .call([&xt])
            .template("M", m)
            .output([64], DType::F32)
            .grid([64, 1, 1])
            .on(device.default_stream())
            .launch()?;
        (
            out[0].to_vec()?,
            Box::new(move |i| ((i % 8) * 8 + i / 8) as f32 * m as f32),
        )
    };
    for (i, v) in out.iter().enumerate() {
        if *v != want(i) {
            panic!("variant {n}: element {i} is {v}, expected {}", want(i));
        }
    }
    Ok(())
}

fn open(backend: &str, store: Option<&std::path::Path>) -> Device {
    let b = Device::builder();
    let b = match store {
        Some(dir) => b.cache_dir(dir),
        None => b.cache_mode(CacheMode::Memory),
    };
    match backend {
        "cuda" => b.cuda(0).expect("a CUDA device"),
        _ => b.cpu().unwrap(),
    }
}

/// The process's page faults and the calling thread's context switches
/// (Linux `/proc`; zeros elsewhere): what an import waited for.
#[derive(Clone, Copy, Default)]
struct Counters {
    minor_faults: u64,
    major_faults: u64,
    voluntary: u64,
    involuntary: u64,
}

impl Counters {
    fn now() -> Counters {
        let mut c = Counters::default();
        if let Ok(stat) = std::fs::read_to_string("/proc/self/stat") {
            // The fields after the command's closing parenthesis: state is
            // the first, minflt the eighth, majflt the tenth.
            if let Some((_, rest)) = stat.rsplit_once(')') {
                let f: Vec<&str> = rest.split_whitespace().collect();
                c.minor_faults = f.get(7).and_then(|v| v.parse().ok()).unwrap_or(0);
                c.major_faults = f.get(9).and_then(|v| v.parse().ok()).unwrap_or(0);
            }
        }
        if let Ok(status) = std::fs::read_to_string("/proc/thread-self/status") {
            for line in status.lines() {
                let value = |l: &str| l.split_whitespace().nth(1).and_then(|v| v.parse().ok());
                if line.starts_with("voluntary_ctxt_switches") {
                    c.voluntary = value(line).unwrap_or(0);
                } else if line.starts_with("nonvoluntary_ctxt_switches") {
                    c.involuntary = value(line).unwrap_or(0);
                }
            }
        }
        c
    }

    /// What changed since `self`, in words.
    fn since(&self) -> String {
        let n = Counters::now();
        format!(
            "page faults {} minor, {} major; this thread waited {} times, was preempted {} times",
            n.minor_faults - self.minor_faults,
            n.major_faults - self.major_faults,
            n.voluntary - self.voluntary,
            n.involuntary - self.involuntary
        )
    }
}

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// On a store holding the bundle's entries for this device except those
/// of kernelkit's strided-copy kernel, with JIT forbidden: a strided input
/// of a row-contiguous kernel (variant 30) must be refused with
/// `JitForbidden` naming the copy kernel, before anything is queued, and
/// the device must go on (variant 0). Where copies need no kernel (the
/// CPU), the strided call simply runs. Exits 1 otherwise.
fn without_copy_kernel(backend: &str, bytes: &[u8], trusted: &TrustedKeys, ks: &[Kernel; 3]) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("store");
    let store = ArtifactStore::create(&dir).unwrap();
    let device = open(backend, Some(&dir));
    let identities = device.artifact_identities();
    let verified = bundle::verify(bytes, trusted).unwrap();
    for e in &verified.entries {
        if e.header.kernel != "kernelkit_strided_copy" && identities.contains(&e.header.identity) {
            store.write(&e.header.key, &e.contents()).unwrap();
        }
    }
    let refused = run(ks, &device, 30);
    let usable = run(ks, &device, 0);
    let compiles = device.cache_stats().compiles;
    let verdict = match (&refused, backend) {
        (Err(kernelkit::Error::Call(kernelkit::CallError::JitForbidden { kernel, .. })), _)
            if kernel == "kernelkit_strided_copy" =>
        {
            "JitForbidden naming kernelkit_strided_copy"
        }
        (Ok(()), "cpu") => "ran (the CPU copies on the host)",
        _ => {
            println!("without the copy kernel: expected JitForbidden, got {refused:?}");
            std::process::exit(1);
        }
    };
    if let Err(e) = usable {
        println!("without the copy kernel: the device did not go on: {e}");
        std::process::exit(1);
    }
    println!("without the copy kernel (JIT forbidden): strided call {verdict}; compiles={compiles}; the device goes on");
    if compiles != 0 {
        std::process::exit(1);
    }
}

fn main() {
    // kernelkit's log where `KERNELKIT_LOG` asks for it (the import's
    // phases: `kernelkit::cache::store=debug`).
    if let Ok(filter) = tracing_subscriber::EnvFilter::try_from_env("KERNELKIT_LOG") {
        tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(std::io::stderr)
            .with_ansi(false)
            .init();
    }
    let args: Vec<String> = std::env::args().collect();
    let backend = arg(&args, "--backend").unwrap_or_else(|| "cpu".into());
    let ks = kernels();
    match args.get(1).map(String::as_str) {
        Some("record") => {
            let manifest = PathBuf::from(arg(&args, "--manifest").expect("--manifest M"));
            let device = open(&backend, None);
            record::start(&manifest).unwrap();
            for n in 0..100 {
                run(&ks, &device, n).unwrap();
            }
            record::stop();
            let text = std::fs::read_to_string(&manifest).unwrap();
            let variants = text.lines().filter(|l| l.contains("\"spec\"")).count();
            let builtins = text.lines().count() - variants;
            println!(
                "recorded {variants} variants into {} (and {builtins} line(s) of kernelkit's \
                 strided copy)",
                manifest.display()
            );
        }
        Some("replay") => {
            let bundle_path = PathBuf::from(arg(&args, "--bundle").expect("--bundle B"));
            let trusted = TrustedKeys::read(&PathBuf::from(
                arg(&args, "--trusted").expect("--trusted K"),
            ))
            .unwrap();
            let exclude = arg(&args, "--exclude-target");
            let tmp = tempfile::tempdir().unwrap();
            let dir = tmp.path().join("store");
            let store = ArtifactStore::create(&dir).unwrap();
            // `--keep-device`: the device that names this machine's
            // identities stays open through the import (else it is
            // dropped before).
            let identity_device = open(&backend, Some(&dir));
            let identities = identity_device.artifact_identities();
            let identity_device = args
                .iter()
                .any(|a| a == "--keep-device")
                .then_some(identity_device);
            // The signature check alone, first (the import repeats it).
            {
                let bytes = bundle::read(&bundle_path, u64::MAX).unwrap();
                let t = Instant::now();
                bundle::verify(&bytes, &trusted).unwrap();
                println!("verify alone: {:.2} ms", ms(t.elapsed()));
            }
            // `--settle-ms N`: a pause between opening the device and the
            // import (what the device's own start leaves running meanwhile).
            if let Some(ms) = arg(&args, "--settle-ms").and_then(|m| m.parse().ok()) {
                std::thread::sleep(Duration::from_millis(ms));
            }
            let counters = Counters::now();
            let started = Instant::now();
            let bytes = bundle::read(&bundle_path, u64::MAX).unwrap();
            let (mut imported, mut left_out) = (0, 0);
            match &exclude {
                None => {
                    imported = bundle::import(&bytes, &trusted, &identities, &store)
                        .unwrap()
                        .imported
                }
                Some(t) => {
                    let verified = bundle::verify(&bytes, &trusted).unwrap();
                    for e in &verified.entries {
                        if &e.header.target == t || !identities.contains(&e.header.identity) {
                            left_out += 1;
                            continue;
                        }
                        store.write(&e.header.key, &e.contents()).unwrap();
                        imported += 1;
                    }
                }
            }
            let import_time = started.elapsed();
            println!(
                "import: {imported} entries for this device ({left_out} left out) in {:.2} ms ({})",
                ms(import_time),
                counters.since()
            );
            if exclude.is_none() {
                // The same import into a second fresh store: how much of the
                // first was the filesystem's state when it ran (a node
                // imports right after unpacking an image, too).
                // `--imports N`: N imports in all, each into a fresh store.
                let imports = arg(&args, "--imports")
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(2usize);
                for i in 1..imports {
                    let again_dir = tmp.path().join(format!("store-again-{i}"));
                    let again = ArtifactStore::create(&again_dir).unwrap();
                    let counters = Counters::now();
                    let t = Instant::now();
                    let n = bundle::import(&bytes, &trusted, &identities, &again)
                        .unwrap()
                        .imported;
                    println!(
                        "import again (another fresh store): {n} entries in {:.2} ms ({})",
                        ms(t.elapsed()),
                        counters.since()
                    );
                }
            }
            drop(identity_device);
            jit::set_policy(JitPolicy::Forbid);
            let mut firsts = Vec::new();
            let device = open(&backend, Some(&dir));
            // The device's own first use (its context, allocator, stream),
            // which the warm-disk device below has made as well: an array
            // up and back, no kernel.
            let probe = device.array_from_slice(&[0.0f32; 64], [64]).unwrap();
            probe.to_vec::<f32>().unwrap();
            for n in 0..100 {
                let t = Instant::now();
                if let Err(e) = run(&ks, &device, n) {
                    println!("variant {n}: {e}");
                    std::process::exit(1);
                }
                firsts.push(t.elapsed());
            }
            let s = device.cache_stats();
            // Warm disk: a second fresh device on the same store.
            let again = open(&backend, Some(&dir));
            let fresh = kernels();
            let mut warm = Vec::new();
            for n in 0..100 {
                let t = Instant::now();
                run(&fresh, &again, n).unwrap();
                warm.push(t.elapsed());
            }
            let mut gaps: Vec<(f64, usize)> = firsts
                .iter()
                .zip(&warm)
                .enumerate()
                .map(|(n, (f, w))| (ms(*f) - ms(*w), n))
                .collect();
            gaps.sort_by(|a, b| b.0.total_cmp(&a.0));
            let worst = gaps[0].0;
            println!(
                "largest first-minus-warm: {}",
                gaps[..3]
                    .iter()
                    .map(|(g, n)| format!("variant {n} {g:+.3} ms"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            firsts.sort();
            warm.sort();
            println!(
                "replay (JIT forbidden): compiles={} ptx_loads={} disk_hits={} \
                 first call median {:.3} ms max {:.3} ms; warm-disk first call median {:.3} ms; \
                 worst first-minus-warm {:.3} ms",
                s.compiles,
                s.ptx_loads,
                s.disk_hits,
                ms(firsts[50]),
                ms(firsts[99]),
                ms(warm[50]),
                worst
            );
            if s.compiles != 0 {
                std::process::exit(1);
            }
            without_copy_kernel(&backend, &bytes, &trusted, &ks);
        }
        Some("warm") => {
            let device = open(&backend, None);
            let tmp = tempfile::tempdir().unwrap();
            let manifest = tmp.path().join("warm.jsonl");
            run(&ks, &device, 0).unwrap();
            let x = device.array_from_slice(&[1.0f32; 64], [64]).unwrap();
            let call = || {
                ks[0]
                    .call([&x])
                    .template("S", 0)
                    .output([64], DType::F32)
                    .grid([64, 1, 1])
                    .on(device.default_stream())
                    .launch()
                    .unwrap()
            };
            let time = |n: usize| {
                let t = Instant::now();
                for _ in 0..n {
                    std::hint::black_box(call());
                }
                t.elapsed().as_secs_f64() * 1e9 / n as f64
            };
            let (mut off, mut on) = (Vec::new(), Vec::new());
            for _ in 0..7 {
                off.push(time(20_000));
                record::start(&manifest).unwrap();
                on.push(time(20_000));
                record::stop();
            }
            off.sort_by(f64::total_cmp);
            on.sort_by(f64::total_cmp);
            println!(
                "warm call: {:.0} ns recording off, {:.0} ns recording on (medians of 7 turns)",
                off[3], on[3]
            );
        }
        _ => {
            eprintln!("usage: nojit record|replay|warm ... (see the source's header)");
            std::process::exit(2);
        }
    }
}
