//! A short soak: 8 threads call random kernels — shared and per thread,
//! random dtypes (f32, i32, f16), random template values, random sizes and
//! threadgroups, with failing compiles mixed in — and check every result
//! against a Rust reference. At the end, every distinct successful variant
//! must have been compiled exactly once.
//!
//! On the null device, which runs nothing, results are checked for their
//! length only (they hold zeros), and the failing compiles fail by an
//! `#error` line; everything else is checked as on the others.
//!
//! Bounded for a 2-core CI machine: about 30 distinct variants (the CPU
//! compiler costs ~0.3–0.5 s each), reused by all threads. The seed and the
//! length can be changed with `KERNELKIT_SOAK_SEED` and
//! `KERNELKIT_SOAK_CALLS` (calls per thread).

use std::collections::HashSet;
use std::sync::{Arc, Barrier, Mutex};

use kernelkit::{f16, Array, CompileError, DType, Device, Error, Kernel};

use super::runs_kernels;

/// splitmix64: small, deterministic, good enough to pick cases.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize]
    }
}

const DTYPES: [DType; 3] = [DType::F32, DType::I32, DType::F16];

/// Values as the test sees them: small integers, exact in every dtype used
/// (|v| ≤ 32, so squares ≤ 1024 are exact in f16 too).
fn upload(device: &Device, values: &[i64], shape: &[usize], dtype: DType) -> Array {
    let shape = shape.iter().copied();
    match dtype {
        DType::F32 => {
            let v: Vec<f32> = values.iter().map(|&x| x as f32).collect();
            device.array_from_slice(&v, shape)
        }
        DType::I32 => {
            let v: Vec<i32> = values.iter().map(|&x| x as i32).collect();
            device.array_from_slice(&v, shape)
        }
        DType::F16 => {
            let v: Vec<f16> = values.iter().map(|&x| f16::from_f32(x as f32)).collect();
            device.array_from_slice(&v, shape)
        }
        other => panic!("the soak does not use {other}"),
    }
    .unwrap()
}

fn download(a: &Array) -> Vec<i64> {
    match a.dtype() {
        DType::F32 => a
            .to_vec::<f32>()
            .unwrap()
            .iter()
            .map(|&x| exact(x))
            .collect(),
        DType::I32 => a
            .to_vec::<i32>()
            .unwrap()
            .iter()
            .map(|&x| x as i64)
            .collect(),
        DType::F16 => a
            .to_vec::<f16>()
            .unwrap()
            .iter()
            .map(|&x| exact(x.to_f32()))
            .collect(),
        other => panic!("the soak does not use {other}"),
    }
}

fn exact(x: f32) -> i64 {
    assert_eq!(
        x.fract(),
        0.0,
        "{x} is not the integer the reference expects"
    );
    x as i64
}

/// The kernels every thread shares (one object, cloned).
struct Shared {
    scale_add: Kernel,
    square: Kernel,
    sum2: Kernel,
    reverse: Kernel,
    cast: Kernel,
    transpose: Kernel,
}

fn shared_kernels() -> Shared {
    let k = |name: &str, inputs: &[&str], body: &str| {
        Kernel::builder(name)
            .inputs(inputs.iter().copied())
            .outputs(["out"])
            .source(body)
            .build()
            .unwrap()
    };
    Shared {
        scale_add: k(
            "soak_scale_add",
            &["inp"],
            "uint i = thread_position_in_grid.x; out[i] = inp[i] * S + 1;",
        ),
        square: k(
            "soak_square",
            &["inp"],
            "uint i = thread_position_in_grid.x;\nif (NEG) { out[i] = -(inp[i] * inp[i]); } else { out[i] = inp[i] * inp[i]; }",
        ),
        sum2: k(
            "soak_sum2",
            &["a", "b"],
            "uint i = thread_position_in_grid.x; out[i] = a[i] + b[i];",
        ),
        reverse: k(
            "soak_reverse",
            &["inp"],
            "uint i = thread_position_in_grid.x; out[i] = inp[inp_shape[0] - 1 - i];",
        ),
        cast: k(
            "soak_cast",
            &["inp"],
            "uint i = thread_position_in_grid.x; out[i] = static_cast<T>(inp[i]);",
        ),
        transpose: Kernel::builder("soak_strided")
            .inputs(["inp"])
            .outputs(["out"])
            .source(
                "uint i = thread_position_in_grid.x;\n\
                 uint r = i / inp_shape[1], c = i % inp_shape[1];\n\
                 out[i] = inp[r * inp_strides[0] + c * inp_strides[1]];",
            )
            .ensure_row_contiguous(false)
            .build()
            .unwrap(),
    }
}

/// What a thread did, for the final checks.
#[derive(Default)]
struct Tally {
    /// Distinct (kernel, variant) pairs that compiled and ran.
    variants: HashSet<String>,
    calls: usize,
    failures: usize,
}

fn run_case(
    device: &Device,
    shared: &Shared,
    own: &Kernel,
    thread: usize,
    rng: &mut Rng,
    tally: &Mutex<Tally>,
) {
    let stream = device.default_stream();
    let n = 1 + rng.below(300) as usize;
    let tg = rng.pick(&[1u64, 7, 32, 64, 256]);
    let values: Vec<i64> = (0..n).map(|_| rng.below(65) as i64 - 32).collect();
    let dtype = rng.pick(&DTYPES);
    let case = rng.below(16);
    let grid = [n as u64, 1, 1];
    let x = upload(device, &values, &[n], dtype);

    let (variant, result, expected): (String, kernelkit::Result<kernelkit::Outputs>, Vec<i64>) =
        match case {
            0..=2 => {
                let s = rng.pick(&[2, 3]);
                let out = shared
                    .scale_add
                    .call([&x])
                    .template("S", s)
                    .output([n as i64], dtype)
                    .grid(grid)
                    .threadgroup([tg, 1, 1])
                    .on(stream)
                    .launch();
                (
                    format!("scale_add {dtype} {s}"),
                    out,
                    values.iter().map(|v| v * s as i64 + 1).collect(),
                )
            }
            3..=5 => {
                let neg = rng.below(2) == 0;
                let out = shared
                    .square
                    .call([&x])
                    .template("NEG", neg)
                    .output([n as i64], dtype)
                    .grid(grid)
                    .threadgroup([tg, 1, 1])
                    .on(stream)
                    .launch();
                let sign = if neg { -1 } else { 1 };
                (
                    format!("square {dtype} {neg}"),
                    out,
                    values.iter().map(|v| sign * v * v).collect(),
                )
            }
            6..=7 => {
                let other: Vec<i64> = (0..n).map(|_| rng.below(65) as i64 - 32).collect();
                let y = upload(device, &other, &[n], dtype);
                let out = shared
                    .sum2
                    .call([&x, &y])
                    .output([n as i64], dtype)
                    .grid(grid)
                    .threadgroup([tg, 1, 1])
                    .on(stream)
                    .launch();
                (
                    format!("sum2 {dtype}"),
                    out,
                    values.iter().zip(&other).map(|(a, b)| a + b).collect(),
                )
            }
            8..=9 => {
                let out = shared
                    .reverse
                    .call([&x])
                    .output([n as i64], dtype)
                    .grid(grid)
                    .threadgroup([tg, 1, 1])
                    .on(stream)
                    .launch();
                (
                    format!("reverse {dtype}"),
                    out,
                    values.iter().rev().copied().collect(),
                )
            }
            10 => {
                let to = rng.pick(&[DType::I32, DType::F32]);
                let out = shared
                    .cast
                    .call([&x])
                    .template("T", to)
                    .output([n as i64], to)
                    .grid(grid)
                    .threadgroup([tg, 1, 1])
                    .on(stream)
                    .launch();
                (format!("cast {dtype} {to}"), out, values.clone())
            }
            11..=12 => {
                // A transposed view, read through its strides.
                let (rows, cols) = (1 + rng.below(12) as usize, 1 + rng.below(12) as usize);
                let data: Vec<i64> = (0..rows * cols)
                    .map(|_| rng.below(65) as i64 - 32)
                    .collect();
                let m = upload(device, &data, &[rows, cols], dtype).transpose();
                let out = shared
                    .transpose
                    .call([&m])
                    .output([(rows * cols) as i64], dtype)
                    .grid([(rows * cols) as u64, 1, 1])
                    .threadgroup([tg, 1, 1])
                    .on(stream)
                    .launch();
                let expected = (0..cols)
                    .flat_map(|c| (0..rows).map(move |r| (r, c)))
                    .map(|(r, c)| data[r * cols + c])
                    .collect();
                (format!("strided {dtype}"), out, expected)
            }
            13..=14 => {
                // This thread's own kernel (f32 only, one variant per thread).
                let x = upload(device, &values, &[n], DType::F32);
                let out = own
                    .call([&x])
                    .output([n as i64], DType::F32)
                    .grid(grid)
                    .threadgroup([tg, 1, 1])
                    .on(stream)
                    .launch();
                (
                    format!("own {thread}"),
                    out,
                    values.iter().map(|v| v + thread as i64).collect(),
                )
            }
            _ => {
                // A compile failure with a fresh template value: a new variant,
                // so a new compile, which must fail cleanly. (The null
                // device's compile rejects only `#error`.)
                let broken = if runs_kernels(device) {
                    "out[i] = inp[i] + ;"
                } else {
                    "#error soak_broken"
                };
                let bad = Kernel::builder("soak_broken")
                    .inputs(["inp"])
                    .outputs(["out"])
                    .source(format!("uint i = thread_position_in_grid.x;\n{broken}"))
                    .build()
                    .unwrap();
                let v = rng.below(1 << 20) as i32;
                let result = bad
                    .call([&x])
                    .template("V", v)
                    .output([n as i64], dtype)
                    .grid(grid)
                    .on(stream)
                    .launch();
                match result {
                    Err(Error::Compile(CompileError::Rejected { kernel, log, .. })) => {
                        assert_eq!(kernel, "soak_broken");
                        assert!(log.contains("[body line 2]"), "{log}");
                    }
                    other => panic!("a broken body must be rejected, got {other:?}"),
                }
                let mut t = tally.lock().unwrap();
                t.calls += 1;
                t.failures += 1;
                return;
            }
        };
    // Inputs of fewer than 8 elements are passed as constants: another
    // variant of the same kernel.
    let small = if case == 11 || case == 12 {
        expected.len() < 8
    } else {
        n < 8
    };
    let variant = format!("{variant} small={small}");
    let outputs = result.unwrap_or_else(|e| panic!("{variant}: {e}"));
    // The null device ran nothing: its output holds zeros.
    let expected = if runs_kernels(device) {
        expected
    } else {
        vec![0; expected.len()]
    };
    assert_eq!(download(&outputs[0]), expected, "{variant}, n={n}, tg={tg}");
    let mut t = tally.lock().unwrap();
    t.calls += 1;
    t.variants.insert(variant);
}

/// See the module documentation.
pub fn soak_random_kernels_on_many_threads(device: Device) {
    let seed: u64 = std::env::var("KERNELKIT_SOAK_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_c0de);
    let calls: usize = std::env::var("KERNELKIT_SOAK_CALLS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(40);
    let threads = 8;
    println!(
        "soak on {}: seed {seed}, {threads} threads x {calls} calls",
        device.label()
    );

    // The final check counts compiles: the device was opened without the
    // disk tier (`behaviour.rs`), so artifacts an earlier run left on disk
    // cannot answer for them.
    let shared = Arc::new(shared_kernels());
    let tally = Arc::new(Mutex::new(Tally::default()));
    let barrier = Arc::new(Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let (device, shared, tally, barrier) = (
                device.clone(),
                shared.clone(),
                tally.clone(),
                barrier.clone(),
            );
            std::thread::spawn(move || {
                let own = Kernel::builder(format!("soak_own_{t}"))
                    .inputs(["inp"])
                    .outputs(["out"])
                    .source(format!(
                        "uint i = thread_position_in_grid.x; out[i] = inp[i] + {t};"
                    ))
                    .build()
                    .unwrap();
                let mut rng = Rng(seed ^ (t as u64).wrapping_mul(0x1234_5678_9abc_def1));
                barrier.wait();
                for _ in 0..calls {
                    run_case(&device, &shared, &own, t, &mut rng, &tally);
                }
            })
        })
        .collect();
    for h in handles {
        h.join()
            .expect("a soak thread failed (see its panic above)");
    }

    let tally = tally.lock().unwrap();
    let stats = device.cache_stats();
    println!(
        "soak: {} calls, {} distinct variants, {} compile failures; {}",
        tally.calls,
        tally.variants.len(),
        tally.failures,
        stats.summary()
    );
    assert_eq!(tally.calls, threads * calls);
    assert!(tally.failures > 0, "the seed mixed in no failure");
    // Successes are cached: each distinct variant compiled exactly once,
    // however many threads asked for it at once. Failures are not cached.
    assert_eq!(stats.compiles - stats.failures, tally.variants.len() as u64);
    assert!(stats.failures >= 1 && stats.failures <= tally.failures as u64);
}
