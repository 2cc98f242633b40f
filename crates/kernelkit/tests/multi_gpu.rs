//! Several GPUs (issue 20): every test needs two CUDA GPUs and skips, with
//! a message, where there are fewer (or no `cuda` feature, or no driver).
//!
//! - the seed's repro across devices: 16 threads × 2 GPUs × a distinct
//!   kernel each × 100 rounds, every result right, one compile per
//!   distinct kernel (the second GPU loads the first one's cubin);
//! - inputs on the other GPU refused with a typed error naming the kernel
//!   and the argument;
//! - churn: 10,000 distinct template values through one kernel with
//!   `max_loaded_modules = 64` on GPU 0, results right, at most 64 modules
//!   loaded, resident memory and the C heap printed at every tenth.
//!
//! - unloads racing launches on CUDA: 16 threads, a bound of 4, repeated;
//!   no launch may reach a function of an unloaded module.
//!
//! Run on a two-GPU machine: `scripts/gpu-remote.sh` (step `multi_gpu`).
//! `scripts/test.sh` runs them on the stand-in driver of `tools/fakecuda`
//! with two stand-in GPUs (`FAKECUDA_DEVICES=2`), where kernels do not run:
//! there every check but the computed values holds (compiles, bounds,
//! errors; a launch of an unloaded module's function fails there).

use std::sync::{Arc, Barrier};

use kernelkit::{CacheMode, CallError, DType, Device, Error, Kernel};

/// Every test of this file also runs against two stand-in GPUs
/// (`scripts/test.sh` selects the tests of every module named
/// `standin_two_gpus` and runs them with `FAKECUDA_DEVICES=2`).
mod standin_two_gpus {
    use super::*;

    /// Both GPUs' process-wide devices, or `None` (and a message) when there
    /// are not two.
    fn two_gpus() -> Option<(Device, Device)> {
        match Device::cuda_count() {
            Ok(n) if n >= 2 => Some((Device::cuda(0).ok()?, Device::cuda(1).ok()?)),
            Ok(n) => {
                eprintln!("skipped: {n} CUDA GPU(s), these tests need 2");
                None
            }
            Err(e) => {
                eprintln!("skipped: no CUDA ({e})");
                None
            }
        }
    }

    /// The stand-in driver (kernels do not run there: values are not checked).
    fn stand_in(device: &Device) -> bool {
        device.description().contains("fakecuda")
    }

    /// A number no earlier run used, so that kernels built from it are new to
    /// every cache (the disk store included).
    fn nonce() -> u128 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    }

    #[test]
    fn the_seed_repro_across_two_gpus() {
        let Some((d0, d1)) = two_gpus() else { return };
        let threads = 16;
        let rounds = 100;
        let nonce = nonce();
        let compiles_before = d0.cache_stats().compiles + d1.cache_stats().compiles;
        let check_values = !stand_in(&d0);
        let barrier = Arc::new(Barrier::new(threads));
        let handles: Vec<_> = (0..threads)
        .map(|t| {
            let (d0, d1, barrier) = (d0.clone(), d1.clone(), barrier.clone());
            std::thread::spawn(move || -> Result<usize, String> {
                let kernel = Kernel::builder(format!("repro{t}"))
                    .inputs(["inp"])
                    .outputs(["out"])
                    .source(format!(
                        "// {nonce}\nuint i = thread_position_in_grid.x; out[i] = inp[i] * 2.0f + {t}.0f;"
                    ))
                    .build()
                    .map_err(|e| e.to_string())?;
                let per_device: Vec<_> = [&d0, &d1]
                    .iter()
                    .map(|d| {
                        let s = d.new_stream().unwrap();
                        let x = d.array_from_slice(&[1.5f32; 1024], [1024]).unwrap();
                        (s, x)
                    })
                    .collect();
                let mut failures = 0;
                for _ in 0..rounds {
                    barrier.wait();
                    for (s, x) in &per_device {
                        let out = kernel
                            .call([x])
                            .output([1024], DType::F32)
                            .grid([1024, 1, 1])
                            .threadgroup([256, 1, 1])
                            .on(s)
                            .launch();
                        match out.and_then(|o| o[0].to_vec::<f32>()) {
                            Ok(v) if !check_values || v.iter().all(|&y| y == 3.0 + t as f32) => {}
                            Ok(v) => {
                                eprintln!("thread {t} on {}: computed {}", s.device().label(), v[0]);
                                failures += 1
                            }
                            Err(e) => {
                                eprintln!("thread {t} on {}: {e}", s.device().label());
                                failures += 1
                            }
                        }
                    }
                }
                Ok(failures)
            })
        })
        .collect();
        let failures: usize = handles
            .into_iter()
            .map(|h| h.join().unwrap().unwrap())
            .sum();
        assert_eq!(failures, 0);
        let compiles = d0.cache_stats().compiles + d1.cache_stats().compiles - compiles_before;
        assert_eq!(compiles, threads as u64, "one compile per distinct kernel");
        println!(
        "repro: {threads} threads x 2 GPUs x {rounds} rounds, 0 failures, {compiles} compiles; \
         cuda:0 {}; cuda:1 {}",
        d0.cache_stats().summary(),
        d1.cache_stats().summary()
    );
    }

    #[test]
    fn an_input_on_the_other_gpu_is_a_typed_error() {
        let Some((d0, d1)) = two_gpus() else { return };
        let kernel = Kernel::builder("other_gpu")
            .inputs(["inp"])
            .outputs(["out"])
            .source("uint i = thread_position_in_grid.x; out[i] = inp[i];")
            .build()
            .unwrap();
        let x1 = d1.array_from_slice(&[1.0f32; 8], [8]).unwrap();
        let err = kernel
            .call([&x1])
            .output([8], DType::F32)
            .grid([8, 1, 1])
            .on(d0.default_stream())
            .launch()
            .unwrap_err();
        match &err {
            Error::Call(CallError::WrongDevice { kernel, input, .. }) => {
                assert_eq!((kernel.as_str(), input.as_str()), ("other_gpu", "inp"))
            }
            other => panic!("expected WrongDevice, got {other:?}"),
        }
    }

    /// Resident memory in KiB (`/proc/self/status`).
    fn rss_kib() -> u64 {
        std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("VmRSS:"))?
                    .split_whitespace()
                    .nth(1)?
                    .parse()
                    .ok()
            })
            .unwrap_or(0)
    }

    /// The process's memory at one moment: resident, and (glibc) the heap's
    /// bytes in use and kept free in its arenas.
    struct Memory {
        rss_kib: u64,
        heap: Option<(u64, u64, u64)>,
    }

    impl Memory {
        fn now() -> Memory {
            #[cfg(all(target_os = "linux", target_env = "gnu"))]
            // SAFETY: mallinfo2 only reads the allocator's counters.
            let heap = {
                let m = unsafe { libc::mallinfo2() };
                Some((
                    m.uordblks as u64 / 1024,
                    m.fordblks as u64 / 1024,
                    m.hblkhd as u64 / 1024,
                ))
            };
            #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
            let heap = None;
            Memory {
                rss_kib: rss_kib(),
                heap,
            }
        }
    }

    impl std::fmt::Display for Memory {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "rss {} KiB", self.rss_kib)?;
            if let Some((used, free, mapped)) = self.heap {
                write!(
                    f,
                    ", heap {used} KiB in use, {free} KiB free in arenas, {mapped} KiB mapped"
                )?;
            }
            Ok(())
        }
    }

    #[test]
    fn churn_of_ten_thousand_values_stays_bounded() {
        let Ok(device) = Device::builder()
            .cache_mode(CacheMode::Memory)
            .max_loaded_modules(64)
            .cuda(0)
        else {
            eprintln!("skipped: no CUDA GPU (this test needs one)");
            return;
        };
        let n: usize = std::env::var("KK_CHURN")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(10_000);
        let kernel = Kernel::builder("churn")
            .inputs(["inp"])
            .outputs(["out"])
            .source("uint i = thread_position_in_grid.x; out[i] = inp[i] + V;")
            .build()
            .unwrap();
        let threads = 16;
        let check_values = !stand_in(&device);
        // Ten samples, one per tenth of the values, taken by whichever thread
        // reaches the value: resident memory and the C heap's own totals, which
        // tell memory the process holds live from memory malloc keeps after a
        // free (an arena's high-water mark).
        let samples = std::sync::Mutex::new(Vec::new());
        let step = (n / 10).max(1);
        std::thread::scope(|s| {
            for t in 0..threads {
                let (device, kernel, samples) = (&device, &kernel, &samples);
                s.spawn(move || {
                    let stream = device.new_stream().unwrap();
                    let x = device.array_from_slice(&[1i32; 64], [64]).unwrap();
                    for v in (t..n).step_by(threads) {
                        let out = kernel
                            .call([&x])
                            .template("V", v as i32)
                            .output([64], DType::I32)
                            .grid([64, 1, 1])
                            .on(&stream)
                            .launch()
                            .unwrap();
                        let got = out[0].to_vec::<i32>().unwrap();
                        if check_values {
                            assert_eq!(got, vec![1 + v as i32; 64]);
                        }
                        assert!(device.loaded_modules() <= 64);
                        if v > 0 && v % step == 0 {
                            samples.lock().unwrap().push((v, Memory::now()));
                        }
                    }
                });
            }
        });
        let stats = device.cache_stats();
        let mut samples = samples.into_inner().unwrap();
        samples.sort_by_key(|&(v, _)| v);
        samples.push((n, Memory::now()));
        for (v, m) in &samples {
            println!("churn.sample {v} values: {m}");
        }
        let rss_at = |v: usize| {
            samples
                .iter()
                .find(|&&(at, _)| at >= v)
                .map_or(0, |(_, m)| m.rss_kib)
        };
        let (early, half, end) = (rss_at(n / 10), rss_at(n / 2), rss_at(n));
        // Growth that levels off (the memo filling to its cap, allocator
        // arenas) is not a leak; growth per value from half-way to the end is.
        println!(
            "churn: {n} values, max 64: {} loaded now, {} loaded in all, {} unloaded, \
         rss {early} KiB at {} values, {half} KiB at {}, {end} KiB at the end ({:+.1}% from \
         the first point, {:+.1}% over the second half)",
            device.loaded_modules(),
            stats.loaded,
            stats.unloaded,
            n / 10,
            n / 2,
            (end as f64 / early.max(1) as f64 - 1.0) * 100.0,
            (end as f64 / half.max(1) as f64 - 1.0) * 100.0
        );
        assert_eq!(stats.loaded, n as u64);
        assert_eq!(stats.unloaded, n as u64 - 64);
        assert_eq!(stats.failures, 0);
    }

    /// 16 threads, a bound of 4 modules, each round behind a barrier: every
    /// thread launches a hot variant, one of 24 others and its own prepared
    /// launch on its own stream, so modules are unloaded while other threads'
    /// launches of them are queued. Repeated. Every launch succeeds (on the
    /// stand-in, a launch of an unloaded module's function fails), the bound
    /// holds, and the values are right on a GPU.
    #[test]
    fn unloads_race_launches_on_cuda() {
        for repeat in 0..3 {
            let Ok(device) = Device::builder()
                .cache_mode(CacheMode::Memory)
                .max_loaded_modules(4)
                .cuda(0)
            else {
                eprintln!("skipped: no CUDA GPU (this test needs one)");
                return;
            };
            let check_values = !stand_in(&device);
            let kernel = Kernel::builder("race")
                .inputs(["inp"])
                .outputs(["out"])
                .source("uint i = thread_position_in_grid.x; out[i] = inp[i] + V;")
                .build()
                .unwrap();
            let threads = 16;
            let barrier = Barrier::new(threads);
            std::thread::scope(|scope| {
                for t in 0..threads {
                    let (device, kernel, barrier) = (&device, &kernel, &barrier);
                    scope.spawn(move || {
                        let s = device.new_stream().unwrap();
                        let x = device.array_from_slice(&[1i32; 256], [256]).unwrap();
                        let call = |v: i32| {
                            kernel
                                .call([&x])
                                .template("V", v)
                                .output([256], DType::I32)
                                .grid([256, 1, 1])
                                .on(&s)
                        };
                        let own = 1000 + t as i32;
                        let prepared = call(own).prepare().unwrap();
                        for round in 0..30 {
                            barrier.wait();
                            let v = (t * 7 + round) as i32 % 24;
                            let outs = [
                                (0, call(0).launch().unwrap()),
                                (v, call(v).launch().unwrap()),
                                (own, prepared.run().unwrap()),
                            ];
                            assert!(device.loaded_modules() <= 4);
                            if check_values {
                                for (v, out) in outs {
                                    assert_eq!(out[0].to_vec::<i32>().unwrap(), vec![1 + v; 256]);
                                }
                            }
                        }
                        s.synchronize().unwrap();
                    });
                }
            });
            let stats = device.cache_stats();
            assert!(
                stats.unloaded > 0 && stats.reloads > 0,
                "repeat {repeat}: {stats:?}"
            );
            assert_eq!(stats.failures, 0);
        }
    }
}
