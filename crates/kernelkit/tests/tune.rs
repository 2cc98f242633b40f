//! Autotuning on the CPU: a tuned call gives the same results as an
//! untuned one, times a key once per process, writes the caller's arrays
//! exactly once (an accumulating `out[i] += inp[i]` through `output_into`,
//! an atomic counter with `init_value`), skips configurations that fail
//! with their error kept, times only new configurations beside the
//! recorded best, and refuses what it cannot do with typed errors.

use kernelkit::{CacheStats, Config, DType, Device, Error, Kernel, TuneConfig, TuneError, Tuning};

mod common;
use common::salt;

/// A new CPU device keeping nothing on disk: counters start at zero.
fn device() -> Device {
    let config = Config::from_env().cache_mode(kernelkit::CacheMode::Memory);
    Device::builder().config(config).cpu().unwrap()
}

/// `out[i] = inp[i] * 2`, each thread doing TILE elements.
fn tiled(salt: &str) -> Kernel {
    tile_loop("tiled_double", salt, "inp[i] * 2.0f")
}

/// Kernel `name` writing `out[i] = value` for TILE elements per thread.
fn tile_loop(name: &str, salt: &str, value: &str) -> Kernel {
    Kernel::builder(name)
        .inputs(["inp"])
        .outputs(["out"])
        .source(format!(
            "// {salt}\n\
             uint base = thread_position_in_grid.x * TILE;\n\
             for (int k = 0; k < TILE; k++) {{\n\
               uint i = base + k;\n\
               if (i < inp_shape[0]) out[i] = {value};\n\
             }}"
        ))
        .build()
        .unwrap()
}

fn tiles(sizes: &[i32]) -> Tuning {
    Tuning::new(
        sizes
            .iter()
            .map(|&t| TuneConfig::new([64, 1, 1]).template("TILE", t)),
    )
    .grid_fn(|config, inputs| {
        let tile = config
            .template_values()
            .find_map(|(n, v)| match (n, v) {
                ("TILE", kernelkit::TemplateArg::Int(t)) => Some(*t as u64),
                _ => None,
            })
            .unwrap_or(1);
        [(inputs[0].shape()[0] as u64).div_ceil(tile), 1, 1]
    })
}

fn delta(a: CacheStats, b: CacheStats) -> (u64, u64, u64) {
    (
        b.tunes - a.tunes,
        b.tune_hits - a.tune_hits,
        b.tune_launches - a.tune_launches,
    )
}

#[test]
fn a_tuned_call_runs_right_and_times_its_key_once() {
    let device = device();
    let kernel = tiled(&salt("once"));
    let tuning = tiles(&[1, 2, 4, 8]);
    let data: Vec<f32> = (0..1000).map(|i| i as f32).collect();
    let x = device.array_from_slice(&data, [1000]).unwrap();
    let want: Vec<f32> = data.iter().map(|v| v * 2.0).collect();

    let before = device.cache_stats();
    for _ in 0..3 {
        let out = kernel
            .call([&x])
            .output([1000], DType::F32)
            .tuned(&tuning)
            .launch()
            .unwrap();
        assert_eq!(out[0].to_vec::<f32>().unwrap(), want);
    }
    let (tunes, hits, launches) = delta(before, device.cache_stats());
    assert_eq!((tunes, hits), (1, 0), "{}", device.cache_stats().summary());
    assert!(launches >= 4 * 5, "every configuration timed: {launches}");

    // Another tuning over the same configurations finds the record in
    // memory: a hit, no timing.
    let again = tiles(&[1, 2, 4, 8]);
    let mid = device.cache_stats();
    let best = again
        .best(&kernel.call([&x]).output([1000], DType::F32))
        .unwrap()
        .clone();
    assert_eq!(delta(mid, device.cache_stats()), (0, 1, 0));
    assert!(tuning.configs().contains(&best));

    // Another shape is another key.
    let y = device.array_from_slice(&data[..300], [300]).unwrap();
    let out = kernel
        .call([&y])
        .output([300], DType::F32)
        .tuned(&tuning)
        .launch()
        .unwrap();
    assert_eq!(out[0].to_vec::<f32>().unwrap(), want[..300]);
    assert_eq!(device.cache_stats().tunes - before.tunes, 2);

    // The record ranks every configuration and names the device.
    let record = tuning
        .record(&kernel.call([&x]).output([1000], DType::F32))
        .unwrap();
    assert_eq!(record.configs.len(), 4);
    assert!(record.configs.iter().all(|c| c.time_ns.is_some()));
    assert_eq!(record.target, device.tuning_target());
    assert_eq!(record.version, env!("CARGO_PKG_VERSION"));
}

#[test]
fn an_accumulating_output_is_written_once() {
    let device = device();
    let kernel = Kernel::builder("accumulate")
        .inputs(["inp"])
        .outputs(["out"])
        .source(format!(
            "// {}\nuint i = thread_position_in_grid.x;\nif (i < inp_shape[0]) out[i] += inp[i] * SCALE;",
            salt("acc")
        ))
        .build()
        .unwrap();
    let tuning = Tuning::new(
        [[1, 1, 1], [32, 1, 1], [128, 1, 1]].map(|tg| TuneConfig::new(tg).template("SCALE", 1)),
    );
    let inp = device.array_from_slice(&[10.0f32; 256], [256]).unwrap();
    let start: Vec<f32> = (0..256).map(|i| i as f32).collect();
    let out = device.array_from_slice(&start, [256]).unwrap();
    let before = device.cache_stats();
    kernel
        .call([&inp])
        .output_into(&out)
        .grid([256, 1, 1])
        .tuned(&tuning)
        .launch()
        .unwrap();
    let stats = device.cache_stats();
    assert_eq!(stats.tunes - before.tunes, 1);
    assert!(stats.tune_launches - before.tune_launches >= 3);
    let want: Vec<f32> = start.iter().map(|v| v + 10.0).collect();
    assert_eq!(out.to_vec::<f32>().unwrap(), want, "written by one run");

    // In place (the output is the input): still once.
    let both = device.array_from_slice(&start, [256]).unwrap();
    let other = Kernel::builder("accumulate_self")
        .inputs(["inp"])
        .outputs(["out"])
        .source(format!(
            "// {}\nuint i = thread_position_in_grid.x;\nif (i < inp_shape[0]) out[i] = inp[i] + 1.0f + (SCALE - 1);",
            salt("self")
        ))
        .build()
        .unwrap();
    other
        .call([&both])
        .output_into(&both)
        .allow_overlap(true)
        .grid([256, 1, 1])
        .tuned(&tuning)
        .launch()
        .unwrap();
    let want: Vec<f32> = start.iter().map(|v| v + 1.0).collect();
    assert_eq!(both.to_vec::<f32>().unwrap(), want, "in place, once");
}

#[test]
fn an_atomic_counter_with_init_value_counts_one_run() {
    let device = device();
    let kernel = Kernel::builder("count_threads")
        .inputs(["inp"])
        .outputs(["count"])
        .atomic_outputs(true)
        .source(format!(
            "// {}\nuint i = thread_position_in_grid.x;\n\
             if (i < inp_shape[0] && WEIGHT > 0) atomic_fetch_add_explicit(&count[0], 1u, memory_order_relaxed);",
            salt("atomic")
        ))
        .build()
        .unwrap();
    let tuning = Tuning::new(
        [[8, 1, 1], [64, 1, 1], [256, 1, 1]].map(|tg| TuneConfig::new(tg).template("WEIGHT", 1)),
    );
    let inp = device.array_from_slice(&[0u32; 1000], [1000]).unwrap();
    let count = device.array_from_slice(&[77u32], [1]).unwrap();
    kernel
        .call([&inp])
        .output_into(&count)
        .init_value(0.0)
        .grid([1000, 1, 1])
        .tuned(&tuning)
        .launch()
        .unwrap();
    assert_eq!(count.to_vec::<u32>().unwrap(), [1000]);
    let fresh = kernel
        .call([&inp])
        .output([1], DType::U32)
        .init_value(0.0)
        .grid([1000, 1, 1])
        .tuned(&tuning)
        .launch()
        .unwrap();
    assert_eq!(fresh[0].to_vec::<u32>().unwrap(), [1000]);
}

#[test]
fn failing_configurations_are_skipped_with_their_errors_kept() {
    let device = device();
    let kernel = Kernel::builder("picky")
        .inputs(["inp"])
        .outputs(["out"])
        .source(format!(
            "// {}\nstatic_assert(TILE != 3, \"TILE 3 is refused\");\n\
             uint i = thread_position_in_grid.x;\nif (i < inp_shape[0]) out[i] = inp[i] + TILE;",
            salt("picky")
        ))
        .build()
        .unwrap();
    let tuning = Tuning::new([
        TuneConfig::new([32, 1, 1]).template("TILE", 3),
        TuneConfig::new([1 << 30, 1, 1]).template("TILE", 1),
        TuneConfig::new([32, 1, 1]).template("TILE", 2),
    ]);
    let x = device.array_from_slice(&[1.0f32; 64], [64]).unwrap();
    let call = || kernel.call([&x]).output([64], DType::F32).grid([64, 1, 1]);
    let out = call().tuned(&tuning).launch().unwrap();
    assert_eq!(out[0].to_vec::<f32>().unwrap(), [3.0f32; 64]);
    let record = tuning.record(&call()).unwrap();
    assert_eq!(record.choice, tuning.configs()[2].id());
    let failed: Vec<_> = record
        .configs
        .iter()
        .filter(|c| c.error.is_some())
        .collect();
    assert_eq!(failed.len(), 2, "{record:?}");
    assert!(failed.iter().all(|c| c.time_ns.is_none()));

    // Nothing usable: a typed error naming every configuration.
    let none = Tuning::new([TuneConfig::new([32, 1, 1]).template("TILE", 3)]);
    let y = device.array_from_slice(&[1.0f32; 8], [8]).unwrap();
    let err = kernel
        .call([&y])
        .output([8], DType::F32)
        .grid([8, 1, 1])
        .tuned(&none)
        .launch()
        .unwrap_err();
    assert!(
        matches!(err, Error::Tune(TuneError::AllFailed { .. })),
        "{err}"
    );
    assert!(err.to_string().contains("picky"), "{err}");
}

#[test]
fn an_added_configuration_is_timed_beside_the_recorded_best_only() {
    let device = device();
    let kernel = tiled(&salt("added"));
    let data = vec![1.0f32; 4096];
    let x = device.array_from_slice(&data, [4096]).unwrap();
    let call = || kernel.call([&x]).output([4096], DType::F32);
    let first = tiles(&[1, 2, 4]);
    first.best(&call()).unwrap();
    let recorded = first.record(&call()).unwrap();
    assert!(recorded.configs.iter().all(|c| c.round == 0));

    let wider = tiles(&[1, 2, 4, 16]);
    let before = device.cache_stats();
    wider.best(&call()).unwrap();
    let (tunes, _, launches) = delta(before, device.cache_stats());
    assert_eq!(tunes, 1);
    let record = wider.record(&call()).unwrap();
    let second: Vec<&str> = record
        .configs
        .iter()
        .filter(|c| c.round == 1)
        .map(|c| c.config.as_str())
        .collect();
    assert_eq!(second.len(), 2, "{record:?}");
    assert!(second.contains(&recorded.choice.as_str()));
    assert!(second.contains(&wider.configs()[3].id()));
    assert_eq!(record.configs.len(), 4);
    // Two configurations timed: each its warm-up (2), one probe, and at
    // least 5 samples of at most 100 batches of at most 64 launches.
    assert!(
        (2 * (2 + 1 + 5)..=2 * (2 + 1 + 100 * 64)).contains(&launches),
        "{launches}"
    );

    // The same four again: the record covers them, nothing is timed.
    let mid = device.cache_stats();
    tiles(&[16, 4, 2, 1]).best(&call()).unwrap();
    assert_eq!(delta(mid, device.cache_stats()), (0, 1, 0));
}

#[test]
fn a_configuration_that_clashes_with_the_call_is_refused() {
    let device = device();
    let kernel = tiled(&salt("clash"));
    let x = device.array_from_slice(&[1.0f32; 8], [8]).unwrap();
    let err = kernel
        .call([&x])
        .output([8], DType::F32)
        .template("TILE", 2)
        .tuned(&tiles(&[1, 2]))
        .launch()
        .unwrap_err();
    assert!(
        matches!(err, Error::Tune(TuneError::BadConfig { .. })),
        "{err}"
    );
    let err = kernel
        .call([&x])
        .output([8], DType::F32)
        .tuned(&Tuning::new([]))
        .launch()
        .unwrap_err();
    assert!(
        matches!(err, Error::Tune(TuneError::NoConfigs { .. })),
        "{err}"
    );
}

#[test]
fn a_user_key_shares_one_choice_across_shapes() {
    let device = device();
    let kernel = tiled(&salt("userkey"));
    let tuning = tiles(&[1, 4]).key_fn(|inputs| format!("bucket{}", inputs[0].shape()[0] / 1000));
    let before = device.cache_stats();
    for n in [1000usize, 1500, 1999] {
        let x = device.array_from_slice(&vec![1.0f32; n], [n]).unwrap();
        let out = kernel
            .call([&x])
            .output([n as i64], DType::F32)
            .tuned(&tuning)
            .launch()
            .unwrap();
        assert_eq!(out[0].to_vec::<f32>().unwrap(), vec![2.0f32; n]);
    }
    assert_eq!(device.cache_stats().tunes - before.tunes, 1);
}

/// With compiling forbidden, a key without a record runs the first
/// configuration (compiled before) and times nothing. In a process of its
/// own: the JIT policy is the process's.
#[test]
fn with_the_jit_forbidden_an_untuned_key_runs_the_first_configuration_untimed() {
    const TEST: &str = "with_the_jit_forbidden_an_untuned_key_runs_the_first_configuration_untimed";
    if !common::in_child(TEST, &[]) {
        return;
    }
    let device = device();
    let kernel = tiled(&salt("forbid"));
    let tuning = tiles(&[2, 4]);
    let x = device.array_from_slice(&[1.0f32; 100], [100]).unwrap();
    // The first configuration's variant, compiled while allowed.
    kernel
        .call([&x])
        .output([100], DType::F32)
        .template("TILE", 2)
        .threadgroup([64, 1, 1])
        .grid([50, 1, 1])
        .compile()
        .unwrap();
    kernelkit::kernel::jit::set_policy(kernelkit::config::JitPolicy::Forbid);
    let out = kernel
        .call([&x])
        .output([100], DType::F32)
        .tuned(&tuning)
        .launch()
        .unwrap();
    assert_eq!(out[0].to_vec::<f32>().unwrap(), vec![2.0f32; 100]);
    let s = device.cache_stats();
    assert_eq!(
        (s.tunes, s.tune_launches, s.compiles),
        (0, 0, 1),
        "{}",
        s.summary()
    );
}

/// `out[i] = inp[i] + TILE * 1000`: the result names the configuration run.
fn tile_marking(salt: &str) -> Kernel {
    tile_loop("tile_marking", salt, "inp[i] + float(TILE * 1000)")
}

#[test]
fn threads_sharing_tunings_each_run_their_own_tunings_stable_choice() {
    // Two tunings of one kernel (disjoint configurations) and more shapes
    // than a thread keeps recent choices for, called by eight threads at
    // once in different orders: every call runs a configuration of its own
    // tuning, and one (tuning, shape) runs one configuration throughout.
    use std::collections::HashMap;
    use std::sync::{Arc, Barrier, Mutex};
    let device = device();
    let kernel = tile_marking(&salt("threads"));
    let tunings = [tiles(&[1, 2]), tiles(&[4, 8])];
    let sizes = [96usize, 160, 224, 288, 352, 416];
    let seen: Mutex<HashMap<(usize, usize), i64>> = Mutex::new(HashMap::new());
    let barrier = Arc::new(Barrier::new(8));
    std::thread::scope(|s| {
        for t in 0..8usize {
            let (device, kernel, tunings, seen, barrier) =
                (&device, &kernel, &tunings, &seen, barrier.clone());
            s.spawn(move || {
                barrier.wait();
                for round in 0..12usize {
                    for j in 0..sizes.len() * 2 {
                        let pick = (j + t + round) % (sizes.len() * 2);
                        let (which, n) = (pick % 2, sizes[pick / 2]);
                        let data: Vec<f32> = (0..n).map(|i| i as f32).collect();
                        let x = device.array_from_slice(&data, [n]).unwrap();
                        let out = kernel
                            .call([&x])
                            .output([n as i64], DType::F32)
                            .tuned(&tunings[which])
                            .launch()
                            .unwrap()[0]
                            .to_vec::<f32>()
                            .unwrap();
                        let tile = ((out[0] - data[0]) / 1000.0).round() as i64;
                        let allowed: &[i64] = if which == 0 { &[1, 2] } else { &[4, 8] };
                        assert!(
                            allowed.contains(&tile),
                            "tuning {which} ran TILE={tile}, not one of its configurations"
                        );
                        for (o, d) in out.iter().zip(&data) {
                            assert_eq!(*o, d + (tile * 1000) as f32);
                        }
                        let mut seen = seen.lock().unwrap();
                        let first = *seen.entry((which, n)).or_insert(tile);
                        assert_eq!(first, tile, "tuning {which} at {n} changed its choice");
                    }
                }
            });
        }
    });
    assert_eq!(seen.lock().unwrap().len(), 12);
}
