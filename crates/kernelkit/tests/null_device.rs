//! The null device (`Device::new_null`): what it records, and what its
//! records make testable without a compiler or a GPU — arguments as the
//! backend receives them (contiguous copies, views with their strides,
//! offsets), the function each launch resolved to (the thread's recent
//! variants never answer for another kernel or value), a variant's kept
//! function per device, failure delivery to waiting threads, and the
//! disk tier between devices and past a corrupt entry.
//!
//! The behavioural suite (`behaviour.rs`) runs on it too (`null::`).

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::Path;
use std::sync::{Arc, Barrier};
use std::time::Duration;

use kernelkit::{
    Array, CompileError, DType, Device, Dialect, Error, Kernel, LaunchRecord, NullOptions,
};

mod common;
use common::{in_child, is_child};

fn kernel(name: &str, inputs: &[&str], body: &str) -> Kernel {
    Kernel::builder(name)
        .inputs(inputs.iter().copied())
        .outputs(["out"])
        .source(body)
        .build()
        .unwrap()
}

/// The one launch `device` recorded since the last take.
fn only_launch(device: &Device) -> LaunchRecord {
    let mut launches = device.take_recorded_launches();
    assert_eq!(launches.len(), 1, "{launches:?}");
    launches.pop().unwrap()
}

#[test]
fn a_launch_is_recorded_with_its_grid_threadgroup_and_arguments() {
    let device = Device::new_null();
    let k = kernel(
        "scale",
        &["a", "s"],
        "uint i = thread_position_in_grid.x; out[i] = a[i] * s;",
    );
    let a = device.array_from_slice(&[1.0f32; 10], [2, 5]).unwrap();
    let s = device.array_from_slice(&[3i32], []).unwrap();
    let call = || {
        k.call([&a, &s])
            .output([10], DType::F16)
            .grid([10, 1, 1])
            .threadgroup([256, 1, 1])
    };
    let variant = call().variant_on(&device).unwrap();
    let out = call().launch().unwrap();

    let r = only_launch(&device);
    assert_eq!(r.kernel, "scale");
    assert_eq!(r.function, variant.name());
    assert_eq!(r.grid, [10, 1, 1]);
    assert_eq!(r.threadgroup, [10, 1, 1], "clamped to the grid");
    assert_eq!(r.shared_mem_bytes, 0);
    assert_eq!(r.inputs.len(), 2);
    assert_eq!(
        (
            r.inputs[0].dtype,
            &r.inputs[0].shape[..],
            &r.inputs[0].strides[..]
        ),
        (DType::F32, &[2usize, 5][..], &[5isize, 1][..])
    );
    assert_eq!(r.inputs[1].dtype, DType::I32);
    assert!(r.inputs[1].shape.is_empty() && r.inputs[1].strides.is_empty());
    assert_eq!(r.outputs.len(), 1);
    assert_eq!(
        (
            r.outputs[0].dtype,
            &r.outputs[0].shape[..],
            &r.outputs[0].strides[..]
        ),
        (DType::F16, &[10usize][..], &[1isize][..])
    );
    let addrs = [r.inputs[0].addr, r.inputs[1].addr, r.outputs[0].addr];
    assert!(addrs[0] != addrs[1] && addrs[1] != addrs[2] && addrs[0] != addrs[2]);

    // The same arrays again: the same input addresses, and the output of
    // the first call is still alive, so the new one lies elsewhere.
    let _again = call().launch().unwrap();
    let r2 = only_launch(&device);
    assert_eq!(r2.inputs, r.inputs);
    assert_ne!(r2.outputs[0].addr, r.outputs[0].addr);
    assert_eq!(out[0].to_vec::<kernelkit::f16>().unwrap().len(), 10);
    assert_eq!(device.cache_stats().compiles, 1);
}

#[test]
fn a_prepared_launch_records_each_run_and_records_can_be_taken() {
    let device = Device::new_null();
    let k = kernel(
        "twice",
        &["inp"],
        "uint i = thread_position_in_grid.x; out[i] = 2 * inp[i];",
    );
    let x = device.array_from_slice(&[1i32; 4], [4]).unwrap();
    let launch = k
        .call([&x])
        .output([4], DType::I32)
        .grid([4, 1, 1])
        .prepare()
        .unwrap();
    for _ in 0..3 {
        launch.run().unwrap();
    }
    let seen = device.recorded_launches();
    assert_eq!(seen.len(), 3);
    assert!(seen.iter().all(|r| r.function == launch.variant().name()));
    assert_eq!(device.take_recorded_launches(), seen);
    assert!(device.recorded_launches().is_empty());
    assert_eq!(device.cache_stats().compiles, 1);
}

/// Views reach the backend with their strides and offset when the kernel
/// reads its layout, and as contiguous copies (another address, row-major
/// strides) when it asks for row-contiguous inputs. On a real device only
/// the values tell, and both paths give the same values.
#[test]
fn strided_inputs_reach_the_backend_as_copies_or_with_their_strides() {
    let device = Device::new_null();
    let body = "uint i = thread_position_in_grid.x;\n\
                out[i] = inp[elem_to_loc((int64_t)i, inp_shape, inp_strides, inp_ndim)];";
    let strided = Kernel::builder("strided")
        .inputs(["inp"])
        .outputs(["out"])
        .source(body)
        .ensure_row_contiguous(false)
        .build()
        .unwrap();
    let copied = Kernel::builder("copied")
        .inputs(["inp"])
        .outputs(["out"])
        .source(body)
        .build()
        .unwrap();
    let data: Vec<i32> = (0..24).collect();
    let base = device.array_from_slice(&data, [4, 6]).unwrap();
    let run = |k: &Kernel, a: &Array| {
        k.call([a])
            .output([a.size() as i64], DType::I32)
            .grid([a.size() as u64, 1, 1])
            .launch()
            .unwrap();
        only_launch(&device).inputs.remove(0)
    };
    let base_arg = run(&strided, &base);
    assert_eq!(base_arg.strides, vec![6, 1]);

    let t = base.transpose();
    let arg = run(&strided, &t);
    assert_eq!(
        (arg.addr, arg.shape, arg.strides),
        (base_arg.addr, vec![6, 4], vec![1, 6])
    );
    let arg = run(&copied, &t);
    assert_ne!(arg.addr, base_arg.addr, "a contiguous copy");
    assert_eq!((arg.shape, arg.strides), (vec![6, 4], vec![4, 1]));

    // Rows 1 and 3, columns 0 and 3: element 0 is element 6 of the base.
    let s = base.slice(&[[1, 4, 2], [0, 6, 3]]).unwrap();
    let arg = run(&strided, &s);
    assert_eq!(arg.addr, base_arg.addr + 6 * 4);
    assert_eq!((arg.shape, arg.strides), (vec![2, 2], vec![12, 3]));
    let arg = run(&copied, &s);
    assert_eq!((arg.shape, arg.strides), (vec![2, 2], vec![2, 1]));

    // A contiguous input is passed as it is, whatever the kernel asks.
    let arg = run(&copied, &base);
    assert_eq!(arg.addr, base_arg.addr);
}

#[test]
fn outputs_hold_zeros_or_the_init_value() {
    let device = Device::new_null();
    let k = Kernel::builder("two")
        .inputs(["inp"])
        .outputs(["f", "n"])
        .source("uint i = thread_position_in_grid.x; f[i] = inp[i]; n[i] = 1;")
        .build()
        .unwrap();
    let x = device.array_from_slice(&[9.0f32; 6], [6]).unwrap();
    let call = || {
        k.call([&x])
            .output([6], DType::F32)
            .output([2, 3], DType::I64)
            .grid([6, 1, 1])
    };
    let out = call().launch().unwrap();
    assert_eq!(out[0].to_vec::<f32>().unwrap(), vec![0.0; 6]);
    assert_eq!(out[1].to_vec::<i64>().unwrap(), vec![0; 6]);
    assert_eq!(out[1].shape(), &[2, 3]);
    let out = call().init_value(2.5).launch().unwrap_err();
    assert!(
        matches!(out, Error::Call(kernelkit::CallError::InitValue { .. })),
        "{out:?}"
    );
    let out = call().init_value(7.0).launch().unwrap();
    assert_eq!(out[0].to_vec::<f32>().unwrap(), vec![7.0; 6]);
    assert_eq!(out[1].to_vec::<i64>().unwrap(), vec![7; 6]);
}

/// A null device of the CUDA dialect has dynamic shared memory and runs
/// bodies that synchronize a threadgroup (as the CPU dialect now does);
/// its sources are CUDA's.
#[test]
fn the_cuda_dialect_records_shared_memory_and_accepts_barriers() {
    let device = Device::new_null_with(NullOptions::default().dialect(Dialect::Cuda));
    assert_eq!(device.dialect(), Dialect::Cuda);
    let k = kernel(
        "block",
        &["inp"],
        "threadgroup_barrier(mem_flags::mem_threadgroup);\n\
         out[thread_position_in_grid.x] = inp[0];",
    );
    let x = device.array_from_slice(&[1.0f32], [1]).unwrap();
    let call = || k.call([&x]).output([64], DType::F32).grid([64, 1, 1]);
    let launch = call().shared_memory(4096).prepare().unwrap();
    assert!(launch
        .variant()
        .source()
        .contains("extern \"C\" __global__ void"));
    launch.run().unwrap();
    assert_eq!(only_launch(&device).shared_mem_bytes, 4096);

    // The CPU dialect runs a group's threads as fibers, so it takes the
    // barrier too (it used to refuse it).
    let cpu_dialect = Device::new_null();
    let y = cpu_dialect.array_from_slice(&[1.0f32], [1]).unwrap();
    k.call([&y])
        .output([64], DType::F32)
        .grid([64, 1, 1])
        .launch()
        .unwrap();
}

/// A null device of the Metal dialect runs Metal sources through the whole
/// path of a call (the sources `generate` gives), and has no 64-bit floats.
#[test]
fn the_metal_dialect_generates_what_generate_gives() {
    let device = Device::new_null_with(NullOptions::default().dialect(Dialect::Metal));
    let k = kernel(
        "m",
        &["inp"],
        "uint i = thread_position_in_grid.x; out[i] = inp[i];",
    );
    let x = device.array_from_slice(&[1.0f32; 8], [8]).unwrap();
    let call = || k.call([&x]).output([8], DType::F32).grid([8, 1, 1]);
    let generated = call().generate(Dialect::Metal).unwrap();
    let launch = call().prepare().unwrap();
    assert_eq!(launch.variant().source(), generated.source);
    launch.run().unwrap();
    assert_eq!(only_launch(&device).function, generated.name);
    assert!(!device.supports(DType::F64));
    assert!(device.array_from_slice(&[1.0f64], [1]).is_err());
}

/// One thread cycles over more kernels and template values than its cache
/// of recent variants holds (8 sets of 2): every launch resolves to the
/// function of its own kernel and value, round after round.
#[test]
fn recent_variants_never_answer_for_another_kernel_or_value() {
    let device = Device::new_null();
    let kernels: Vec<Kernel> = (0..24)
        .map(|n| {
            kernel(
                &format!("k{n}"),
                &["inp"],
                "uint i = thread_position_in_grid.x; out[i] = inp[i] + V;",
            )
        })
        .collect();
    let x = device.array_from_slice(&[0i32; 4], [4]).unwrap();
    fn call<'a>(k: &'a Kernel, x: &'a Array, v: i32) -> kernelkit::Call<'a> {
        k.call([x])
            .template("V", v)
            .output([4], DType::I32)
            .grid([4, 1, 1])
    }
    let mut expected = HashMap::new();
    for (n, k) in kernels.iter().enumerate() {
        for v in 0..3 {
            let name = call(k, &x, v).generate(Dialect::Cpu).unwrap().name;
            expected.insert((n, v), name);
        }
    }
    let names: std::collections::HashSet<_> = expected.values().collect();
    assert_eq!(
        names.len(),
        expected.len(),
        "every variant has its own name"
    );
    for round in 0..3 {
        for v in 0..3 {
            for (n, k) in kernels.iter().enumerate() {
                call(k, &x, v).launch().unwrap();
                let r = only_launch(&device);
                assert_eq!(r.kernel, format!("k{n}"));
                assert_eq!(r.function, expected[&(n, v)], "round {round}");
            }
        }
        // Clearing a memo drops that kernel's variants, including from
        // this thread's recent ones; its modules stay on the device.
        kernels[round].clear_memo();
    }
    assert_eq!(device.cache_stats().compiles, expected.len() as u64);
}

/// A variant keeps the function of the first device it ran on; another
/// device resolves (and compiles) its own, and the first keeps hitting.
#[test]
fn a_variant_keeps_one_function_per_device() {
    let (a, b) = (Device::new_null(), Device::new_null());
    let k = kernel(
        "shared",
        &["inp"],
        "uint i = thread_position_in_grid.x; out[i] = inp[i];",
    );
    let on = |d: &Device| {
        let x = d.array_from_slice(&[1.0f32; 4], [4]).unwrap();
        k.call([&x])
            .output([4], DType::F32)
            .grid([4, 1, 1])
            .launch()
            .unwrap();
    };
    on(&a);
    on(&b);
    on(&a);
    on(&b);
    for d in [&a, &b] {
        let stats = d.cache_stats();
        assert_eq!(
            (stats.compiles, stats.misses, stats.hits),
            (1, 1, 1),
            "{}",
            stats.summary()
        );
        let launches = d.take_recorded_launches();
        assert_eq!(launches.len(), 2);
        assert_eq!(launches[0].function, launches[1].function);
    }
    assert_eq!(k.memoized_variants(), 1);
}

/// Threads that wait on one compile that fails all get its error; the
/// failure is not kept, so a later call compiles again.
#[test]
fn a_failed_compile_reaches_every_waiting_thread() {
    let device =
        Device::new_null_with(NullOptions::default().compile_time(Duration::from_millis(50)));
    let k = kernel(
        "broken",
        &["inp"],
        "uint i = thread_position_in_grid.x;\n#error not today\nout[i] = inp[i];",
    );
    let x = device.array_from_slice(&[1.0f32; 4], [4]).unwrap();
    let threads = 16;
    let barrier = Arc::new(Barrier::new(threads));
    std::thread::scope(|s| {
        for _ in 0..threads {
            let (k, x, barrier) = (k.clone(), x.clone(), barrier.clone());
            s.spawn(move || {
                barrier.wait();
                let result = k
                    .call([&x])
                    .output([4], DType::F32)
                    .grid([4, 1, 1])
                    .launch();
                match result {
                    Err(Error::Compile(e @ CompileError::Rejected { .. })) => {
                        let log = e.log().unwrap();
                        assert!(log.contains("#error not today    [body line 2]"), "{log}");
                    }
                    other => panic!("expected the compile error, got {other:?}"),
                }
            });
        }
    });
    let stats = device.cache_stats();
    assert_eq!(stats.compiles, stats.failures);
    // One compile for the threads that met at it (a thread that came after
    // the failure was delivered compiles again, so a few are possible; one
    // per thread would mean no single flight).
    assert!(stats.compiles < threads as u64 / 2, "{}", stats.summary());
    let before = stats.compiles;
    assert!(k
        .call([&x])
        .output([4], DType::F32)
        .grid([4, 1, 1])
        .launch()
        .is_err());
    assert_eq!(
        device.cache_stats().compiles,
        before + 1,
        "a failure is not cached"
    );
    assert!(device.recorded_launches().is_empty());
}

fn entries(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "kka") {
                found.push(p);
            }
        }
    }
    found
}

/// The disk tier without a compiler: a second device loads what the first
/// stored; a corrupt entry is a miss and a counted error, never a failed
/// call, and the compile that follows rewrites it.
#[test]
fn the_disk_tier_answers_other_devices_and_survives_a_corrupt_entry() {
    const TEST: &str = "the_disk_tier_answers_other_devices_and_survives_a_corrupt_entry";
    if !is_child(TEST) {
        let store = tempfile::tempdir().unwrap();
        let env: Vec<(&str, OsString)> = vec![
            ("KERNELKIT_CACHE", "disk".into()),
            ("KERNELKIT_CACHE_DIR", store.path().into()),
        ];
        assert!(!in_child(TEST, &env));
        return;
    }
    let dir = std::path::PathBuf::from(std::env::var_os("KERNELKIT_CACHE_DIR").unwrap());
    let k = kernel(
        "stored",
        &["inp"],
        "uint i = thread_position_in_grid.x; out[i] = inp[i];",
    );
    let run = || {
        // A null device has no disk tier unless given one: the builder
        // reads the environment this child was started with.
        let device = Device::builder().null(NullOptions::default());
        let x = device.array_from_slice(&[1.0f32; 4], [4]).unwrap();
        k.call([&x])
            .output([4], DType::F32)
            .grid([4, 1, 1])
            .launch()
            .expect("a call never fails for the disk tier");
        assert_eq!(device.recorded_launches().len(), 1);
        device.cache_stats()
    };
    let first = run();
    assert_eq!(
        (first.compiles, first.disk_writes),
        (1, 1),
        "{}",
        first.summary()
    );
    let second = run();
    assert_eq!(
        (second.compiles, second.disk_hits),
        (0, 1),
        "{}",
        second.summary()
    );

    let stored = entries(&dir);
    assert_eq!(stored.len(), 1, "{stored:?}");
    let mut bytes = std::fs::read(&stored[0]).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&stored[0], &bytes).unwrap();
    let third = run();
    assert_eq!(
        (
            third.compiles,
            third.disk_hits,
            third.disk_errors,
            third.disk_writes
        ),
        (1, 0, 1, 1),
        "{}",
        third.summary()
    );
    let fourth = run();
    assert_eq!(
        (fourth.compiles, fourth.disk_hits),
        (0, 1),
        "{}",
        fourth.summary()
    );
}
