//! The bounded loaded-module cache (`max_loaded_modules`): modules past
//! the bound are unloaded, least recently used first, never under a
//! launch that uses them; a variant or a prepared launch whose module was
//! unloaded reloads it transparently; pinned modules stay.
//!
//! The null device's functions, like `CUfunction`s, do not keep their
//! module, and its launches fail on a function of an unloaded module: the
//! concurrency tests below would fail on any launch that raced its
//! module's unload. The CPU churn test compiles 500 real libraries.

use std::sync::{Arc, Barrier};

use kernelkit::{Array, Call, DType, Device, Kernel, NullOptions};

fn add_kernel(name: &str) -> Kernel {
    Kernel::builder(name)
        .inputs(["inp"])
        .outputs(["out"])
        .source("uint i = thread_position_in_grid.x; out[i] = inp[i] + V;")
        .build()
        .unwrap()
}

/// `kernel` on `x` (`n` elements) with template value `v`, over `n` threads.
fn add_call<'a>(kernel: &'a Kernel, x: &'a Array, n: usize, v: i32) -> Call<'a> {
    kernel
        .call([x])
        .template("V", v)
        .output([n as i64], DType::I32)
        .grid([n as u64, 1, 1])
}

fn null_device(max: usize) -> Device {
    Device::builder()
        .cache_mode(kernelkit::CacheMode::Memory)
        .max_loaded_modules(max)
        .null(NullOptions::default())
}

/// 16 threads, each round behind a barrier: every thread calls a hot
/// variant and a value of its own, so modules are unloaded (bound 4) while
/// other threads launch them. 0 failures (a launch of an unloaded module
/// fails on the null device), the bound holds, unloads and reloads happen.
#[test]
fn unloads_race_launches_without_a_failure() {
    for repeat in 0..3 {
        let device = null_device(4);
        let kernel = add_kernel("race");
        let threads = 16;
        let barrier = Arc::new(Barrier::new(threads));
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (device, kernel, barrier) = (device.clone(), kernel.clone(), barrier.clone());
                std::thread::spawn(move || {
                    let x = device.array_from_slice(&[1i32; 8], [8]).unwrap();
                    let call = |v: i32| add_call(&kernel, &x, 8, v).on(device.default_stream());
                    let prepared = call(1000 + t as i32).prepare().unwrap();
                    for round in 0..40 {
                        barrier.wait();
                        call(0).launch().unwrap();
                        call((t * 7 + round) as i32 % 24).launch().unwrap();
                        prepared.run().unwrap();
                        assert!(device.loaded_modules() <= 4);
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        let stats = device.cache_stats();
        assert!(device.loaded_modules() <= 4, "repeat {repeat}");
        assert!(stats.unloaded > 0, "repeat {repeat}: {stats:?}");
        assert!(stats.reloads > 0, "repeat {repeat}: {stats:?}");
        assert_eq!(
            stats.loaded - stats.unloaded,
            device.loaded_modules() as u64
        );
        assert_eq!(stats.failures, 0);
    }
}

/// A prepared launch keeps running after its module was unloaded: it
/// reloads, counted once, and its warm path works again afterwards.
#[test]
fn a_prepared_launch_reloads_its_unloaded_module() {
    let device = null_device(2);
    let kernel = add_kernel("prepared");
    let x = device.array_from_slice(&[1i32; 4], [4]).unwrap();
    let call = |v: i32| add_call(&kernel, &x, 4, v).on(device.default_stream());
    let launch = call(0).prepare().unwrap();
    launch.run().unwrap();
    for v in 1..6 {
        call(v).launch().unwrap();
    }
    assert_eq!(device.cache_stats().unloaded, 4);
    launch.run().unwrap();
    launch.run().unwrap();
    let stats = device.cache_stats();
    assert_eq!(stats.reloads, 1, "{stats:?}");
    assert_eq!(stats.loaded, 7);
    assert_eq!(stats.failures, 0);
}

/// A pinned module is never unloaded, whatever passes through the cache.
#[test]
fn a_pinned_module_stays_loaded() {
    let device = null_device(2);
    let kernel = add_kernel("pinned");
    let x = device.array_from_slice(&[1i32; 4], [4]).unwrap();
    let call = |v: i32| add_call(&kernel, &x, 4, v).on(device.default_stream());
    let launch = call(0).prepare().unwrap();
    launch.pin_module().unwrap();
    for v in 1..50 {
        call(v).launch().unwrap();
    }
    let before = device.cache_stats();
    launch.run().unwrap();
    let after = device.cache_stats();
    assert_eq!(after.loaded, before.loaded, "no reload: it stayed loaded");
    assert_eq!(after.hits, before.hits + 1);
    assert!(device.loaded_modules() <= 3);
}

/// Two devices of one kind alternate on one variant (they share its slot):
/// each resolves its own module, every call is right, nothing dangles when
/// one device goes.
#[test]
fn devices_sharing_a_slot_alternate_safely() {
    let (a, b) = (null_device(8), null_device(8));
    let kernel = add_kernel("two");
    for round in 0..20 {
        for d in [&a, &b] {
            let x = d.array_from_slice(&[1i32; 4], [4]).unwrap();
            add_call(&kernel, &x, 4, 1)
                .on(d.default_stream())
                .launch()
                .unwrap_or_else(|e| panic!("round {round}: {e}"));
        }
    }
    assert_eq!(a.cache_stats().compiles, 1);
    assert_eq!(b.cache_stats().compiles, 1);
    drop(a);
    let x = b.array_from_slice(&[1i32; 4], [4]).unwrap();
    add_call(&kernel, &x, 4, 1).launch().unwrap();
}

/// Libraries of this process's kernels still mapped (`/proc/self/maps`):
/// a CPU module is a `dlopen`ed file in a `kernelkit-so-*` directory.
fn live_libraries() -> Option<usize> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    let mut paths: Vec<&str> = maps
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .filter(|p| p.contains("kernelkit-so-"))
        .collect();
    paths.sort_unstable();
    paths.dedup();
    Some(paths.len())
}

/// Resident memory in KiB (`/proc/self/status`).
fn rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// 500 distinct template values through one kernel on the CPU with
/// `max_loaded_modules = 64`: every result right, at most 64 modules
/// loaded, and (where `/proc` tells) at most 64 libraries mapped: each
/// unloaded library was `dlclose`d. Resident memory is printed.
#[test]
fn cpu_churn_stays_bounded() {
    let device = Device::builder()
        .cache_mode(kernelkit::CacheMode::Memory)
        .max_loaded_modules(64)
        .cpu()
        .unwrap();
    let kernel = add_kernel("churn");
    let x = device.array_from_slice(&[1i32; 16], [16]).unwrap();
    let n = 500;
    let threads = 2;
    let mut rss = Vec::new();
    let device = &device;
    let kernel = &kernel;
    let x = &x;
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                s.spawn(move || {
                    for v in (t..n).step_by(threads) {
                        let out = kernel
                            .call([x])
                            .template("V", v as i32)
                            .output([16], DType::I32)
                            .grid([16, 1, 1])
                            .launch()
                            .unwrap();
                        assert_eq!(out[0].to_vec::<i32>().unwrap(), vec![1 + v as i32; 16]);
                        assert!(device.loaded_modules() <= 64);
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().unwrap();
        }
    });
    rss.extend(rss_kib());
    let stats = device.cache_stats();
    assert_eq!(stats.compiles, n as u64);
    assert_eq!(stats.loaded, n as u64);
    assert_eq!(stats.unloaded, n as u64 - 64);
    assert_eq!(device.loaded_modules(), 64);
    if let Some(live) = live_libraries() {
        assert!(live <= 64, "{live} kernel libraries still mapped");
    }
    println!(
        "cpu churn: {n} values, {} loaded now, {} unloaded, rss {:?} KiB",
        device.loaded_modules(),
        stats.unloaded,
        rss
    );
}
