//! The behavioural suite: written once, run against every backend present
//! (see `behaviour.rs`, which instantiates it per backend). Each test takes
//! a fresh device, so cache counters start at zero.
//!
//! Besides the tests here: the soak ([`soak`]), the hot path ([`hot_path`])
//! and the bad-input matrix ([`bad_input`]).
//!
//! The null device runs the tests whose checks do not depend on what a
//! kernel computes: compile counts, single flight, the memo and its bounds,
//! errors. Where such a test also reads an output, it reads it through
//! [`assert_output`], which on the null device checks what can be known
//! there (length, dtype, zeros).

#![allow(dead_code)]

pub mod bad_input;
pub mod hot_path;
pub mod precompile;
pub mod rebind;
pub mod soak;

pub use bad_input::{
    arrays_of_another_device_kind_are_refused, arrays_of_another_device_object_are_accepted,
    every_bad_input_is_a_typed_error_naming_its_argument, the_unchanged_call_is_accepted,
};
pub use hot_path::a_memo_hit_allocates_nothing;
pub use precompile::{
    a_dropped_precompile_still_fills_the_cache, precompile_reports_each_variants_error,
    precompiled_variants_are_compiled_once_and_calls_find_them,
};
pub use rebind::{
    a_donated_call_writes_its_input_in_place, a_rebindable_launch_checks_its_addresses,
    a_rebindable_launch_runs_with_new_addresses,
    calls_that_need_more_than_a_launch_are_not_rebindable,
};
pub use soak::soak_random_kernels_on_many_threads;

use std::fmt::Debug;
use std::sync::{Arc, Barrier};

use kernelkit::{
    bf16, f16, Array, CompileError, Complex32, DType, Device, DeviceKind, Element, Error, Kernel,
    MathMode, MemoConfig,
};

/// Whether `device` runs kernels. The null device records them instead: its
/// outputs hold zeros (or the call's `init_value`), and its compiles reject
/// only `#error` lines.
pub fn runs_kernels(device: &Device) -> bool {
    device.kind() != DeviceKind::Null
}

/// Checks what a kernel wrote into `out`: `expected`, on a device that runs
/// kernels. The null device runs none; there `out` must still be an output
/// of `expected`'s length and `T`'s dtype that reads back, holding zeros.
#[track_caller]
pub fn assert_output<T: Element + PartialEq + Debug>(out: &Array, expected: &[T], context: &str) {
    let got: Vec<T> = out.to_vec().unwrap();
    if runs_kernels(out.device()) {
        assert_eq!(got, expected, "{context}");
    } else {
        assert_eq!(got.len(), expected.len(), "{context}: the output's length");
        assert!(
            out.to_bytes().unwrap().iter().all(|&b| b == 0),
            "{context}: an output of the null device holds more than zeros"
        );
    }
}

/// A line of a body that the device's compiler rejects: a syntax error,
/// or, for the null device, which checks nothing else, an `#error` line.
pub fn rejected_line(device: &Device) -> &'static str {
    if runs_kernels(device) {
        "out[i] = inp[i] +* 2;"
    } else {
        "#error broken on purpose"
    }
}

fn iota_f32(n: usize) -> Vec<f32> {
    (0..n).map(|i| i as f32).collect()
}

/// `sizeof(V)` for a template value `V`: 4 for `int`, 1 for `bool`.
fn sizeof_kernel() -> Kernel {
    Kernel::builder("sizeof_v")
        .inputs(["inp"])
        .outputs(["out"])
        .source("uint i = thread_position_in_grid.x; out[i] = inp[i] + (int)sizeof(V);")
        .build()
        .unwrap()
}

/// Runs `sizeof_kernel` with `V = v`: its output and its variant's source.
fn run_sizeof(kernel: &Kernel, device: &Device, v: kernelkit::TemplateArg) -> (Array, String) {
    let x = device.array_from_slice(&[0i32; 8], [8]).unwrap();
    let call = kernel
        .call([&x])
        .template("V", v)
        .output([8], DType::I32)
        .grid([8, 1, 1])
        .threadgroup([8, 1, 1]);
    let launch = call.prepare().unwrap();
    let source = launch.variant().source().to_string();
    (launch.run().unwrap()[0].clone(), source)
}

/// The seed's int-vs-bool case: `1` and `true` print alike but are
/// different variants with different sources and results.
pub fn int_one_and_bool_true_are_different_variants(device: Device) {
    let kernel = sizeof_kernel();
    for _ in 0..3 {
        let (int_out, int_src) = run_sizeof(&kernel, &device, 1.into());
        let (bool_out, bool_src) = run_sizeof(&kernel, &device, true.into());
        assert_output(&int_out, &[4; 8], "sizeof(int)");
        assert_output(&bool_out, &[1; 8], "sizeof(bool)");
        assert_ne!(int_src, bool_src);
    }
    assert_eq!(kernel.memoized_variants(), 2);
}

/// Memoized name and source equal what a fresh kernel generates, over pass
/// modes, input dtypes and template kinds, in two rounds.
pub fn memoized_variant_equals_fresh_generation(device: Device) {
    let spec = || {
        Kernel::builder("memo_eq")
            .inputs(["a", "b"])
            .outputs(["out"])
            .source("uint i = thread_position_in_grid.x; out[i] = (float)a[0] + (float)b_ndim;")
            .build()
            .unwrap()
    };
    let kernel = spec();
    let shapes: [&[usize]; 3] = [&[], &[3], &[16]];
    let dtypes = [DType::I32, DType::F32, DType::F16];
    let templates: [kernelkit::TemplateArg; 4] =
        [7.into(), false.into(), DType::F16.into(), (-2).into()];
    for round in 0..2 {
        for shape in shapes {
            for dtype in dtypes {
                for t in templates {
                    let n: usize = shape.iter().product();
                    let a = Array::zeros(&device, shape.iter().copied(), dtype).unwrap();
                    let b = Array::zeros(&device, [n.max(1)], DType::I32).unwrap();
                    let call = |k: &Kernel| {
                        k.call([&a, &b])
                            .template("T", t)
                            .output([4], DType::F32)
                            .grid([4, 1, 1])
                            .variant_on(&device)
                            .unwrap()
                    };
                    let memoized = call(&kernel);
                    let fresh = call(&spec());
                    assert_eq!(memoized.name(), fresh.name(), "round {round}");
                    assert_eq!(memoized.source(), fresh.source(), "round {round}");
                    assert_eq!(memoized.source_hash(), fresh.source_hash());
                    if round == 1 {
                        // The second round hits: same Arc as the first.
                        assert!(Arc::ptr_eq(&memoized, &call(&kernel)));
                    }
                }
            }
        }
    }
    assert_eq!(
        kernel.memoized_variants(),
        shapes.len() * dtypes.len() * templates.len()
    );
}

/// 8 threads × 64 calls on clones of one kernel, alternating int and bool.
pub fn clones_share_one_memo_across_threads(device: Device) {
    let kernel = sizeof_kernel();
    let barrier = Arc::new(Barrier::new(8));
    std::thread::scope(|s| {
        for t in 0..8 {
            let (kernel, barrier, device) = (kernel.clone(), barrier.clone(), device.clone());
            s.spawn(move || {
                barrier.wait();
                for call in 0..64 {
                    let use_bool = (t + call) % 2 == 0;
                    let v = if use_bool { true.into() } else { 1.into() };
                    let (out, _) = run_sizeof(&kernel, &device, v);
                    assert_output(&out, &[if use_bool { 1 } else { 4 }; 8], "sizeof");
                }
            });
        }
    });
    assert_eq!(kernel.memoized_variants(), 2);
    assert_eq!(device.cache_stats().compiles, 2);
}

/// A kernel `out[i] = inp[i] + V` whose memo keeps at most `entries`
/// variants, and a call of it with `V = v`.
fn plus_v_kernel(name: &str, memo: MemoConfig) -> Kernel {
    Kernel::builder(name)
        .inputs(["inp"])
        .outputs(["out"])
        .source("uint i = thread_position_in_grid.x; out[i] = inp[i] + V;")
        .memo(memo)
        .build()
        .unwrap()
}

/// The memo bounded to the seed's 64 entries: 196 template values give
/// correct results, at most 64 variants stay alive (and the one a pending
/// launch holds), an evicted variant is rebuilt equal, and a launch
/// prepared before its eviction still runs.
pub fn bounded_memo_evicts_without_breaking_launches(device: Device) {
    let kernel = plus_v_kernel("bounded", MemoConfig::default().max_entries(64));
    let x = device.array_from_slice(&[10i32; 8], [8]).unwrap();
    let call = |v: i32| {
        kernel
            .call([&x])
            .template("V", v)
            .output([8], DType::I32)
            .grid([8, 1, 1])
    };
    let pending = call(0).prepare().unwrap();
    let first_source = pending.variant().source().to_string();
    let mut weak = Vec::new();
    for v in 0..196 {
        let launch = call(v).prepare().unwrap();
        weak.push(Arc::downgrade(launch.variant()));
        assert_output(&launch.run().unwrap()[0], &[10 + v; 8], "V + 10");
        assert!(kernel.memoized_variants() <= 64);
    }
    let alive = weak.iter().filter(|w| w.upgrade().is_some()).count();
    // The pending launch keeps variant 0 alive on top of the memo's 64
    // (and each thread's few recent ones).
    assert!(alive <= 64 + 1 + 16, "{alive} variants alive");
    // Variant 0 was evicted; building it again gives an equal source.
    let again = call(0).prepare().unwrap();
    assert!(!Arc::ptr_eq(again.variant(), pending.variant()));
    assert_eq!(again.variant().source(), first_source);
    // The launch prepared before the eviction still runs correctly.
    assert_output(&pending.run().unwrap()[0], &[10; 8], "the pending launch");
}

/// A hot variant called between the variants of a long tail, in a memo of
/// 16 entries (where the seed's clear-all policy threw it out with the
/// tail every time the memo filled): it stays memoized, one `Arc`
/// throughout, compiled once; every tail variant is compiled once too.
pub fn a_hot_variant_survives_a_long_tail(device: Device) {
    let kernel = plus_v_kernel("hot_tail", MemoConfig::default().max_entries(16));
    let x = device.array_from_slice(&[1i32; 8], [8]).unwrap();
    let variant = |v: i32| {
        kernel
            .call([&x])
            .template("V", v)
            .output([8], DType::I32)
            .grid([8, 1, 1])
            .variant_on(&device)
            .unwrap()
    };
    let compiles = device.cache_stats().compiles;
    let hot = variant(-1);
    kernel
        .call([&x])
        .template("V", -1)
        .output([8], DType::I32)
        .grid([8, 1, 1])
        .compile()
        .unwrap();
    for v in 0..40 {
        assert!(Arc::ptr_eq(&variant(-1), &hot), "tail variant {v}");
        let tail = kernel
            .call([&x])
            .template("V", v)
            .output([8], DType::I32)
            .grid([8, 1, 1]);
        tail.compile().unwrap();
    }
    assert!(Arc::ptr_eq(&variant(-1), &hot));
    assert_eq!(device.cache_stats().compiles - compiles, 41);
    assert!(kernel.memoized_variants() <= 16);
}

/// A small byte budget bounds the memo's bytes (the shared text counted
/// once), and a variant evicted by it and asked for again finds its module
/// loaded: no compile.
pub fn memo_bytes_stay_within_the_budget(device: Device) {
    let budget = 16 << 10;
    let kernel = plus_v_kernel("byte_budget", MemoConfig::default().max_bytes(budget));
    let x = device.array_from_slice(&[1i32; 8], [8]).unwrap();
    let call = |v: i32| {
        kernel
            .call([&x])
            .template("V", v)
            .output([8], DType::I32)
            .grid([8, 1, 1])
    };
    call(0).compile().unwrap();
    let one = kernel.memo_bytes();
    for v in 1..50 {
        call(v).compile().unwrap();
        assert!(
            kernel.memo_bytes() <= budget.max(one),
            "{}",
            kernel.memo_bytes()
        );
    }
    let held = kernel.memoized_variants();
    assert!(held < 50, "{held} variants in {budget} bytes");
    assert!(held > 1, "{held} variants in {budget} bytes");
    let compiles = device.cache_stats().compiles;
    for v in 0..50 {
        call(v).compile().unwrap();
    }
    assert_eq!(
        device.cache_stats().compiles,
        compiles,
        "modules stay loaded"
    );
}

/// The seed's reproduction: 16 threads at a barrier, each its own kernel,
/// 20 rounds; results equal the index; one compile per distinct kernel.
pub fn concurrent_distinct_kernels(device: Device) {
    let threads = 16;
    for round in 0..20 {
        let barrier = Arc::new(Barrier::new(threads));
        std::thread::scope(|s| {
            for index in 0..threads {
                let (barrier, device) = (barrier.clone(), device.clone());
                s.spawn(move || {
                    let stream = device.new_stream().unwrap();
                    let value = Array::zeros(&device, [1], DType::F32).unwrap();
                    let kernel = Kernel::builder("concurrent_kernel")
                        .inputs(["inp"])
                        .outputs(["out"])
                        .source(format!(
                            "uint i = thread_position_in_grid.x; out[i] = inp[i] + {index}.0f;"
                        ))
                        .build()
                        .unwrap();
                    barrier.wait();
                    let out = kernel
                        .call([&value])
                        .output([1], DType::F32)
                        .grid([1, 1, 1])
                        .threadgroup([1, 1, 1])
                        .on(&stream)
                        .launch()
                        .unwrap();
                    assert_output(&out[0], &[index as f32], &format!("round {round}"));
                });
            }
        });
    }
    let stats = device.cache_stats();
    assert_eq!(stats.compiles, threads as u64);
    assert_eq!(stats.hits + stats.misses, 20 * threads as u64);
}

/// 32 threads at a barrier ask for one new kernel: exactly one compile.
pub fn single_flight_compiles_once(device: Device) {
    let kernel = Kernel::builder("herd")
        .inputs(["inp"])
        .outputs(["out"])
        .source("uint i = thread_position_in_grid.x; out[i] = inp[i] * 3.0f;")
        .build()
        .unwrap();
    let x = device.array_from_slice(&iota_f32(64), [64]).unwrap();
    let barrier = Arc::new(Barrier::new(32));
    std::thread::scope(|s| {
        for _ in 0..32 {
            let (kernel, barrier, x) = (kernel.clone(), barrier.clone(), x.clone());
            s.spawn(move || {
                barrier.wait();
                let out = kernel
                    .call([&x])
                    .output([64], DType::F32)
                    .grid([64, 1, 1])
                    .launch()
                    .unwrap();
                let expected: Vec<f32> = iota_f32(64).iter().map(|v| v * 3.0).collect();
                assert_output(&out[0], &expected, "inp * 3");
            });
        }
    });
    assert_eq!(device.cache_stats().compiles, 1);
    assert_eq!(device.cache_stats().failures, 0);
}

/// MLX's `compile_options={"math_mode": ...}`: one name, one body, three
/// modes, each its own source and compile, told apart by the compiler
/// (`__FAST_MATH__`, which only `fast` defines; infinities, which `safe`
/// and `relaxed` keep). A second safe kernel finds the first one's module.
pub fn math_modes_reach_the_compiler(device: Device) {
    let body = r#"
        uint i = thread_position_in_grid.x;
        #if defined(__FAST_MATH__) && __FAST_MATH__
        out[i] = 1.0f;
        #else
        out[i] = isinf(inp[i]) ? 2.0f : 3.0f;
        #endif
    "#;
    let x = device.array_from_slice(&[f32::INFINITY; 4], [4]).unwrap();
    let mut sources = Vec::new();
    for (mode, expected) in [
        (MathMode::Safe, 2.0f32),
        (MathMode::Fast, 1.0),
        (MathMode::Relaxed, 2.0),
        (MathMode::Safe, 2.0),
    ] {
        let kernel = Kernel::builder("math_mode")
            .inputs(["inp"])
            .outputs(["out"])
            .source(body)
            .math_mode(mode)
            .build()
            .unwrap();
        assert_eq!(kernel.spec().math_mode(), mode);
        let launch = kernel
            .call([&x])
            .output([4], DType::F32)
            .grid([4, 1, 1])
            .prepare()
            .unwrap();
        sources.push(launch.variant().source().to_string());
        let out = launch.run().unwrap();
        assert_output(&out[0], &[expected; 4], mode.name());
    }
    assert!(sources[0] != sources[1] && sources[1] != sources[2] && sources[0] != sources[2]);
    assert_eq!(
        sources[0], sources[3],
        "a safe kernel's source does not depend on the others"
    );
    assert_eq!(device.cache_stats().compiles, 3);
}

/// A compile error is typed, carries the log with the line in the body, is
/// not cached, and leaves other kernels alone.
pub fn compile_errors_are_reported_and_not_cached(device: Device) {
    let rejected = rejected_line(&device);
    let bad = Kernel::builder("broken")
        .inputs(["inp"])
        .outputs(["out"])
        .source(format!("uint i = thread_position_in_grid.x;\n{rejected}\n"))
        .build()
        .unwrap();
    let good = Kernel::builder("fine")
        .inputs(["inp"])
        .outputs(["out"])
        .source("uint i = thread_position_in_grid.x; out[i] = inp[i] + 1.0f;")
        .build()
        .unwrap();
    let x = device.array_from_slice(&iota_f32(4), [4]).unwrap();
    let call_bad = || {
        bad.call([&x])
            .output([4], DType::F32)
            .grid([4, 1, 1])
            .launch()
    };
    for attempt in 1..=2u64 {
        match call_bad() {
            Err(Error::Compile(e @ CompileError::Rejected { .. })) => {
                let log = e.log().unwrap();
                assert!(log.contains("body line 2"), "log: {log}");
                assert!(e.to_string().contains("broken"));
                assert!(e.source_code().unwrap().contains(rejected));
            }
            other => panic!("expected a compile error, got {other:?}"),
        }
        let stats = device.cache_stats();
        assert_eq!(stats.compiles, attempt, "a failure must not be cached");
        assert_eq!(stats.failures, attempt);
    }
    let out = good
        .call([&x])
        .output([4], DType::F32)
        .grid([4, 1, 1])
        .launch()
        .unwrap();
    assert_output(&out[0], &[1.0f32, 2.0, 3.0, 4.0], "inp + 1");
}

fn strided_kernel(ensure_row_contiguous: bool) -> Kernel {
    Kernel::builder("strided_copy")
        .inputs(["inp"])
        .outputs(["out"])
        .source(
            "uint i = thread_position_in_grid.x;\n\
             int64_t loc = elem_to_loc((int64_t)i, inp_shape, inp_strides, inp_ndim);\n\
             out[i] = inp[loc];",
        )
        .ensure_row_contiguous(ensure_row_contiguous)
        .build()
        .unwrap()
}

/// Views reach the kernel as real strides when `ensure_row_contiguous` is
/// false, and as contiguous copies when it is true; either way the body
/// (which uses `_shape`/`_strides`/`_ndim`) reads the view's elements.
pub fn strided_views_with_and_without_row_contiguous(device: Device) {
    let data: Vec<i32> = (0..24).collect();
    let base = device.array_from_slice(&data, [4, 6]).unwrap();
    let views = [
        base.transpose(),
        base.slice(&[[1, 4, 2], [0, 6, 3]]).unwrap(),
        device
            .array_from_slice(&data[..6], [1, 6])
            .unwrap()
            .broadcast_to(&[3, 6])
            .unwrap(),
    ];
    for contiguous in [true, false] {
        let kernel = strided_kernel(contiguous);
        for view in &views {
            let expected: Vec<i32> = view.to_vec().unwrap();
            let n = expected.len();
            let out = kernel
                .call([view])
                .output([n as i64], DType::I32)
                .grid([n as u64, 1, 1])
                .launch()
                .unwrap();
            assert_eq!(
                out[0].to_vec::<i32>().unwrap(),
                expected,
                "contiguous={contiguous}"
            );
        }
    }
}

/// `init_value` fills outputs before an atomic reduction.
pub fn init_value_with_atomic_outputs(device: Device) {
    let kernel = Kernel::builder("atomic_sum")
        .inputs(["inp"])
        .outputs(["total", "count"])
        .source(
            "uint i = thread_position_in_grid.x;\n\
             atomic_fetch_add_explicit(&total[0], inp[i], memory_order_relaxed);\n\
             atomic_fetch_add_explicit(&count[0], 1, memory_order_relaxed);",
        )
        .atomic_outputs(true)
        .build()
        .unwrap();
    let x = device.array_from_slice(&iota_f32(1000), [1000]).unwrap();
    let out = kernel
        .call([&x])
        .output([1], DType::F32)
        .output([1], DType::I32)
        .grid([1000, 1, 1])
        .threadgroup([128, 1, 1])
        .init_value(5.0)
        .launch()
        .unwrap();
    assert_eq!(out[0].to_vec::<f32>().unwrap(), vec![5.0 + 499500.0]);
    assert_eq!(out[1].to_vec::<i32>().unwrap(), vec![5 + 1000]);
}

/// 0-d inputs are passed by value; small inputs through constant memory.
pub fn scalar_and_small_inputs(device: Device) {
    let kernel = Kernel::builder("axpy")
        .inputs(["x", "a", "b"])
        .outputs(["out"])
        .source("uint i = thread_position_in_grid.x; out[i] = a * x[i] + b[i % 3];")
        .build()
        .unwrap();
    let x = device.array_from_slice(&iota_f32(10), [10]).unwrap();
    let a = device.array_from_slice(&[2.0f32], []).unwrap();
    let b = device.array_from_slice(&[0.5f32, 1.5, 2.5], [3]).unwrap();
    let out = kernel
        .call([&x, &a, &b])
        .output([10], DType::F32)
        .grid([10, 1, 1])
        .launch()
        .unwrap();
    let expected: Vec<f32> = (0..10)
        .map(|i| 2.0 * i as f32 + [0.5, 1.5, 2.5][i % 3])
        .collect();
    assert_eq!(out[0].to_vec::<f32>().unwrap(), expected);
    assert!(out[0].to_vec::<f32>().is_ok());
}

fn roundtrip<T: Element + PartialEq + std::fmt::Debug>(
    device: &Device,
    kernel: &Kernel,
    data: &[T],
    expected: &[T],
) {
    let x = device.array_from_slice(data, [data.len()]).unwrap();
    let out = kernel
        .call([&x])
        .template("T", T::DTYPE)
        .output([data.len() as i64], T::DTYPE)
        .grid([data.len() as u64, 1, 1])
        .launch()
        .unwrap();
    assert_eq!(out[0].to_vec::<T>().unwrap(), expected, "{}", T::DTYPE);
}

/// Every dtype the backend supports goes in and out of a kernel intact, and
/// arithmetic on it works through the prelude's types.
pub fn every_dtype(device: Device) {
    let double = Kernel::builder("twice")
        .inputs(["inp"])
        .outputs(["out"])
        .source("uint i = thread_position_in_grid.x; out[i] = static_cast<T>(inp[i] + inp[i]);")
        .build()
        .unwrap();
    let copy = Kernel::builder("copy")
        .inputs(["inp"])
        .outputs(["out"])
        .source("uint i = thread_position_in_grid.x; out[i] = inp[i];")
        .build()
        .unwrap();
    for dtype in DType::ALL {
        if !device.supports(dtype) {
            println!(
                "{}: skipping {dtype}, which it does not support",
                device.label()
            );
        }
    }
    let bools = [true, false, true, true, false, false, true, false, true];
    roundtrip(&device, &copy, &bools, &bools);
    macro_rules! ints {
        ($($t:ty),*) => {$(
            let v: Vec<$t> = (0..9).map(|i| i as $t).collect();
            let twice: Vec<$t> = v.iter().map(|x| x.wrapping_add(*x)).collect();
            roundtrip(&device, &double, &v, &twice);
        )*};
    }
    ints!(u8, u16, u32, u64, i8, i16, i32, i64);
    let f: Vec<f32> = (0..9).map(|i| i as f32 * 0.5 - 1.0).collect();
    roundtrip(
        &device,
        &double,
        &f,
        &f.iter().map(|x| x * 2.0).collect::<Vec<_>>(),
    );
    let d: Vec<f64> = (0..9).map(|i| i as f64 * 0.25).collect();
    roundtrip(
        &device,
        &double,
        &d,
        &d.iter().map(|x| x * 2.0).collect::<Vec<_>>(),
    );
    let h: Vec<f16> = f.iter().map(|&x| f16::from_f32(x)).collect();
    roundtrip(
        &device,
        &double,
        &h,
        &f.iter()
            .map(|&x| f16::from_f32(x * 2.0))
            .collect::<Vec<_>>(),
    );
    let b: Vec<bf16> = f.iter().map(|&x| bf16::from_f32(x)).collect();
    roundtrip(
        &device,
        &double,
        &b,
        &f.iter()
            .map(|&x| bf16::from_f32(x * 2.0))
            .collect::<Vec<_>>(),
    );
    let c: Vec<Complex32> = (0..9)
        .map(|i| Complex32::new(i as f32, -(i as f32)))
        .collect();
    roundtrip(
        &device,
        &double,
        &c,
        &c.iter().map(|x| x + x).collect::<Vec<_>>(),
    );
}

/// Multi-dimensional grids and threadgroups that do not divide the grid:
/// every thread of the grid runs exactly once, and none outside it.
pub fn uneven_3d_grid_runs_each_thread_once(device: Device) {
    let kernel = Kernel::builder("grid3d")
        .inputs(["inp"])
        .outputs(["out"])
        .source(
            "uint3 p = thread_position_in_grid; uint3 n = threads_per_grid;\n\
             uint i = (p.z * n.y + p.y) * n.x + p.x;\n\
             out[i] = inp[0] + (float)i;",
        )
        .build()
        .unwrap();
    let one = device.array_from_slice(&[1.0f32], [1]).unwrap();
    let (x, y, z) = (13u64, 7u64, 3u64);
    let n = (x * y * z) as usize;
    let out = kernel
        .call([&one])
        .output([n as i64], DType::F32)
        .grid([x, y, z])
        .threadgroup([4, 4, 2])
        .init_value(-1.0)
        .launch()
        .unwrap();
    let expected: Vec<f32> = (0..n).map(|i| 1.0 + i as f32).collect();
    assert_eq!(out[0].to_vec::<f32>().unwrap(), expected);
}
