//! Behaviour of the CUDA backend on a real GPU. Every test skips, with the
//! reason printed, where `Device::cuda(0)` cannot be opened (no `cuda`
//! feature, no driver, no GPU): CI runs them as skips, the GPU machine runs
//! them for real (`scripts/gpu-remote.sh`).

use std::sync::{Arc, Barrier};

use kernelkit::{
    bf16, f16, CacheMode, CallError, CompileError, Complex32, DType, Device, DeviceKind, Element,
    Error, Kernel,
};

mod common;
use common::{in_child, is_child};

/// Each test gets its own device object (its own kernel cache), so cache
/// counts are its own; its disk tier is off (as in the behavioural suite),
/// so artifacts an earlier run left on the machine cannot answer for the
/// compiles a test counts.
fn gpu() -> Option<Device> {
    match Device::builder().cache_mode(CacheMode::Memory).cuda(0) {
        Ok(d) => Some(d),
        Err(e) => {
            println!("skipped: {e}");
            None
        }
    }
}

fn kernel(name: &str, inputs: &[&str], outputs: &[&str], body: &str) -> Kernel {
    Kernel::builder(name)
        .inputs(inputs.iter().copied())
        .outputs(outputs.iter().copied())
        .source(body)
        .build()
        .unwrap()
}

#[test]
fn default_device_falls_back_to_the_cpu() {
    let d = Device::default_device().expect("some device always opens");
    match Device::cuda(0) {
        Ok(_) => assert_eq!(d.kind(), DeviceKind::Cuda),
        Err(e) => {
            println!("no CUDA ({e}); the default device must be the CPU");
            assert_eq!(d.kind(), DeviceKind::Cpu);
        }
    }
}

#[test]
fn grid_not_a_multiple_of_the_block_is_guarded() {
    let Some(dev) = gpu() else { return };
    let s = dev.new_stream().unwrap();
    let k = kernel(
        "add_offset",
        &["inp"],
        &["out"],
        "uint i = thread_position_in_grid.x; out[i] = inp[i] + OFFSET;",
    );
    let data: Vec<f32> = (0..1024).map(|i| i as f32).collect();
    let x = dev.array_from_slice(&data, [1024]).unwrap();
    let out = k
        .call([&x])
        .template("OFFSET", 3)
        .output([1024], DType::F32)
        .init_value(-7.0)
        .grid([1000, 1, 1])
        .threadgroup([256, 1, 1])
        .on(&s)
        .launch()
        .unwrap();
    let host: Vec<f32> = out[0].to_vec().unwrap();
    for (i, v) in host.iter().enumerate() {
        let want = if i < 1000 { i as f32 + 3.0 } else { -7.0 };
        assert_eq!(*v, want, "out[{i}]");
    }
}

fn scaled<T: Element>(dev: &Device, data: &[T], dtype: DType, tail: f64) -> Vec<T> {
    let k = kernel(
        "twice",
        &["inp"],
        &["out"],
        "uint i = thread_position_in_grid.x; out[i] = static_cast<T>(inp[i] + inp[i]);",
    );
    let n = data.len();
    let x = dev.array_from_slice(data, [n]).unwrap();
    let out = k
        .call([&x])
        .template("T", dtype)
        .output([n as i64 + 5], dtype)
        .init_value(tail)
        .grid([n as u64, 1, 1])
        .launch()
        .unwrap();
    out[0].to_vec().unwrap()
}

#[test]
fn every_dtype_round_trips_and_fills() {
    let Some(dev) = gpu() else { return };
    macro_rules! check {
        ($t:ty, $d:expr, $make:expr, $tail:expr, $tail_value:expr) => {{
            let data: Vec<$t> = (0..40).map($make).collect();
            let got = scaled(&dev, &data, $d, $tail);
            let twice: Vec<$t> = data.iter().map(|v| *v + *v).collect();
            assert_eq!(&got[..40], &twice[..], "{}", $d);
            let tail: Vec<$t> = vec![$tail_value; 5];
            assert_eq!(&got[40..], &tail[..], "{} tail (fill)", $d);
        }};
    }
    check!(u8, DType::U8, |i: i32| i as u8, 3.0, 3u8);
    check!(i8, DType::I8, |i: i32| i as i8 - 20, -3.0, -3i8);
    check!(u16, DType::U16, |i: i32| i as u16, 3.0, 3u16);
    check!(i16, DType::I16, |i: i32| i as i16 - 20, -3.0, -3i16);
    check!(u32, DType::U32, |i: i32| i as u32, 3.0, 3u32);
    check!(i32, DType::I32, |i: i32| i - 20, -3.0, -3i32);
    check!(u64, DType::U64, |i: i32| i as u64, 3.0, 3u64);
    check!(i64, DType::I64, |i: i32| i as i64 - 20, -3.0, -3i64);
    check!(
        f16,
        DType::F16,
        |i: i32| f16::from_f32(i as f32 * 0.5),
        3.0,
        f16::from_f32(3.0)
    );
    check!(
        bf16,
        DType::BF16,
        |i: i32| bf16::from_f32(i as f32 * 0.5),
        3.0,
        bf16::from_f32(3.0)
    );
    check!(f32, DType::F32, |i: i32| i as f32 * 0.25, 3.0, 3.0f32);
    check!(f64, DType::F64, |i: i32| i as f64 * 0.125, -2.5, -2.5f64);
    check!(
        Complex32,
        DType::Complex64,
        |i: i32| Complex32::new(i as f32, 1.0 - i as f32),
        3.0,
        Complex32::new(3.0, 0.0)
    );
}

#[test]
fn scalar_small_inputs_and_template_values() {
    let Some(dev) = gpu() else { return };
    let k = kernel(
        "mix",
        &["inp", "x", "bias"],
        &["out"],
        "uint i = thread_position_in_grid.x;\nout[i] = B ? inp[i] * x + bias[i % 4] + N : 0.0f;",
    );
    let data: Vec<f32> = (0..64).map(|i| i as f32).collect();
    let inp = dev.array_from_slice(&data, [64]).unwrap();
    let x = dev.array_from_slice(&[3.0f32], []).unwrap();
    let bias = dev.array_from_slice(&[0.5f32, 1.5, 2.5, 3.5], [4]).unwrap();
    let out = k
        .call([&inp, &x, &bias])
        .template("B", true)
        .template("N", -10)
        .output([64], DType::F32)
        .grid([64, 1, 1])
        .threadgroup([32, 1, 1])
        .launch()
        .unwrap();
    let host: Vec<f32> = out[0].to_vec().unwrap();
    for (i, v) in host.iter().enumerate() {
        assert_eq!(*v, i as f32 * 3.0 + (i % 4) as f32 + 0.5 - 10.0, "out[{i}]");
    }
}

#[test]
fn strided_inputs_copied_or_indexed() {
    let Some(dev) = gpu() else { return };
    let data: Vec<i32> = (0..6 * 7).collect();
    let a = dev.array_from_slice(&data, [6, 7]).unwrap();
    let t = a.transpose(); // 7 x 6, strides (1, 7)
    let want: Vec<i32> = t.to_vec().unwrap();

    // ensure_row_contiguous: the backend's gather kernel makes a copy.
    let copy = kernel(
        "copy",
        &["inp"],
        &["out"],
        "uint i = thread_position_in_grid.x; out[i] = inp[i];",
    );
    let out = copy
        .call([&t])
        .output([42], DType::I32)
        .grid([42, 1, 1])
        .launch()
        .unwrap();
    assert_eq!(out[0].to_vec::<i32>().unwrap(), want);

    // Without it the body indexes with the real shape and strides.
    let indexed = Kernel::builder("indexed")
        .inputs(["inp"])
        .outputs(["out"])
        .source(concat!(
            "uint i = thread_position_in_grid.x;\n",
            "out[i] = inp[elem_to_loc(i, inp_shape, inp_strides, inp_ndim)];"
        ))
        .ensure_row_contiguous(false)
        .build()
        .unwrap();
    let out = indexed
        .call([&t])
        .output([42], DType::I32)
        .grid([42, 1, 1])
        .launch()
        .unwrap();
    assert_eq!(out[0].to_vec::<i32>().unwrap(), want);

    // A broadcast view (stride 0) and a stepped slice.
    let row = dev.array_from_slice(&[1i32, 2, 3], [3]).unwrap();
    let b = row.broadcast_to(&[4, 3]).unwrap();
    let out = copy
        .call([&b])
        .output([12], DType::I32)
        .grid([12, 1, 1])
        .launch()
        .unwrap();
    assert_eq!(out[0].to_vec::<i32>().unwrap(), b.to_vec::<i32>().unwrap());
    let s = a.slice(&[[1, 6, 2], [0, 7, 3]]).unwrap();
    let n = s.size();
    let out = copy
        .call([&s])
        .output([n as i64], DType::I32)
        .grid([n as u64, 1, 1])
        .launch()
        .unwrap();
    assert_eq!(out[0].to_vec::<i32>().unwrap(), s.to_vec::<i32>().unwrap());
}

/// Four strided inputs read with their shapes and strides pass more
/// argument data than the launch keeps on the stack (64 words): the launch
/// takes its heap path, with the same parameter layout.
#[test]
fn launches_with_many_layout_parameters() {
    let Some(dev) = gpu() else { return };
    let names = ["a", "b", "c", "d"];
    let body = concat!(
        "uint i = thread_position_in_grid.x;\n",
        "out[i] = a[elem_to_loc(i, a_shape, a_strides, a_ndim)]\n",
        "       + 10 * b[elem_to_loc(i, b_shape, b_strides, b_ndim)]\n",
        "       + 100 * c[elem_to_loc(i, c_shape, c_strides, c_ndim)]\n",
        "       + 1000 * d[elem_to_loc(i, d_shape, d_strides, d_ndim)];"
    );
    let k = Kernel::builder("many_layouts")
        .inputs(names)
        .outputs(["out"])
        .source(body)
        .ensure_row_contiguous(false)
        .build()
        .unwrap();
    let data: Vec<i32> = (0..12).map(|v| v % 10).collect();
    let base = dev.array_from_slice(&data, [3, 4]).unwrap();
    let t = base.transpose(); // 4 x 3, strides (1, 4)
    let plain = dev.array_from_slice(&data, [4, 3]).unwrap();
    let row = dev.array_from_slice(&[7i32, 8, 9], [3]).unwrap();
    let rows = row.broadcast_to(&[4, 3]).unwrap(); // strides (0, 1)
    let inputs = [&t, &plain, &rows, &t];
    let host: Vec<Vec<i32>> = inputs.iter().map(|a| a.to_vec().unwrap()).collect();
    let want: Vec<i32> = (0..12)
        .map(|i| host[0][i] + 10 * host[1][i] + 100 * host[2][i] + 1000 * host[3][i])
        .collect();
    let out = k
        .call(inputs)
        .output([12], DType::I32)
        .grid([12, 1, 1])
        .launch()
        .unwrap();
    assert_eq!(out[0].to_vec::<i32>().unwrap(), want);
}

#[test]
fn atomic_outputs_accumulate() {
    let Some(dev) = gpu() else { return };
    let k = Kernel::builder("histogram")
        .inputs(["values"])
        .outputs(["counts", "total"])
        .source(concat!(
            "uint i = thread_position_in_grid.x;\n",
            "atomic_fetch_add_explicit(&counts[values[i] % 8], 1u, memory_order_relaxed);\n",
            "atomic_fetch_add_explicit(&total[0], 0.5f, memory_order_relaxed);\n",
            "atomic_fetch_max_explicit(&total[1], float(values[i]), memory_order_relaxed);"
        ))
        .atomic_outputs(true)
        .build()
        .unwrap();
    let values: Vec<u32> = (0..10_000).map(|i| (i * 7919) % 1000).collect();
    let v = dev.array_from_slice(&values, [values.len()]).unwrap();
    let out = k
        .call([&v])
        .output([8], DType::U32)
        .output([2], DType::F32)
        .init_value(0.0)
        .grid([values.len() as u64, 1, 1])
        .threadgroup([128, 1, 1])
        .launch()
        .unwrap();
    let counts: Vec<u32> = out[0].to_vec().unwrap();
    let mut want = [0u32; 8];
    for x in &values {
        want[(*x % 8) as usize] += 1;
    }
    assert_eq!(counts, want);
    let total: Vec<f32> = out[1].to_vec().unwrap();
    assert_eq!(total, vec![5000.0, 999.0]);
}

#[test]
fn threadgroup_reduction_with_barriers_and_simd() {
    let Some(dev) = gpu() else { return };
    let k = kernel(
        "block_sum",
        &["inp"],
        &["out"],
        concat!(
            "threadgroup float partial[32];\n",
            "uint gid = thread_position_in_grid.x;\n",
            "float v = gid < threads_per_grid.x ? inp[gid] : 0.0f;\n",
            "v = simd_sum(v);\n",
            "if (thread_index_in_simdgroup == 0) partial[simdgroup_index_in_threadgroup] = v;\n",
            "threadgroup_barrier(mem_flags::mem_threadgroup);\n",
            "if (thread_index_in_threadgroup == 0) {\n",
            "  float s = 0.0f;\n",
            "  for (uint w = 0; w < simdgroups_per_threadgroup; ++w) s += partial[w];\n",
            "  out[threadgroup_position_in_grid.x] = s;\n",
            "}"
        ),
    );
    let n = 1000usize; // not a multiple of the block: the body checks bounds
    let data: Vec<f32> = (0..n).map(|i| (i % 10) as f32).collect();
    let x = dev.array_from_slice(&data, [n]).unwrap();
    let out = k
        .call([&x])
        .output([4], DType::F32)
        .grid([n as u64, 1, 1])
        .threadgroup([256, 1, 1])
        .launch()
        .unwrap();
    let got: Vec<f32> = out[0].to_vec().unwrap();
    let want: Vec<f32> = data.chunks(256).map(|c| c.iter().sum()).collect();
    assert_eq!(got, want);
}

#[test]
fn dynamic_shared_memory_is_set_per_launch() {
    let Some(dev) = gpu() else { return };
    let k = kernel(
        "smem",
        &["inp"],
        &["out"],
        concat!(
            "extern __shared__ float kk_smem[];\n",
            "uint t = threadIdx.x;\n",
            "uint n = WORDS;\n",
            "for (uint j = t; j < n; j += blockDim.x) kk_smem[j] = inp[0];\n",
            "__syncthreads();\n",
            "if (t == 0) { float s = 0; for (uint j = 0; j < n; ++j) s += kk_smem[j]; out[0] = s; }"
        ),
    );
    let x = dev.array_from_slice(&[1.0f32; 8], [8]).unwrap();
    let max = dev.limits().max_shared_bytes;
    for bytes in [16u32 << 10, 64 << 10, (max as u32).min(200 << 10)] {
        let words = (bytes / 4) as i32;
        let out = k
            .call([&x])
            .template("WORDS", words)
            .output([1], DType::F32)
            .grid([128, 1, 1])
            .threadgroup([128, 1, 1])
            .shared_memory(bytes)
            .launch()
            .unwrap();
        let got: Vec<f32> = out[0].to_vec().unwrap();
        assert_eq!(got[0], words as f32, "{bytes} bytes");
    }
    let err = k
        .call([&x])
        .template("WORDS", 4)
        .output([1], DType::F32)
        .grid([1, 1, 1])
        .shared_memory(max as u32 + 1)
        .launch()
        .unwrap_err();
    assert!(matches!(err, Error::Call(CallError::Dims { .. })), "{err}");
}

#[test]
fn compile_errors_name_the_body_line() {
    let Some(dev) = gpu() else { return };
    let k = kernel(
        "broken",
        &["inp"],
        &["out"],
        "uint i = thread_position_in_grid.x;\nout[i] = inp[i] + not_declared;",
    );
    let x = dev.array_from_slice(&[1.0f32; 8], [8]).unwrap();
    let call = || {
        k.call([&x])
            .output([8], DType::F32)
            .grid([8, 1, 1])
            .on(dev.default_stream())
            .launch()
    };
    let err = call().unwrap_err();
    let Error::Compile(c) = &err else {
        panic!("expected a compile error, got {err}")
    };
    let log = c.log().unwrap();
    assert!(
        log.contains("not_declared") && log.contains("[body line 2]"),
        "{log}"
    );
    assert!(c.source_code().unwrap().contains("not_declared"));
    // Not cached as a success: the next call compiles (and fails) again.
    assert!(call().is_err());
    assert_eq!(dev.cache_stats().compiles, 2);
}

#[test]
fn arrays_of_another_device_are_refused() {
    let Some(dev) = gpu() else { return };
    let k = kernel("id", &["inp"], &["out"], "out[0] = inp[0];");
    let cpu = Device::cpu().array_from_slice(&[1.0f32], [1]).unwrap();
    let err = k
        .call([&cpu])
        .output([1], DType::F32)
        .grid([1, 1, 1])
        .on(dev.default_stream())
        .launch()
        .unwrap_err();
    assert!(
        matches!(err, Error::Call(CallError::WrongDevice { .. })),
        "{err}"
    );
}

#[test]
fn many_threads_compile_each_kernel_once() {
    let Some(dev) = gpu() else { return };
    let threads = 8;
    for _round in 0..3 {
        let barrier = Arc::new(Barrier::new(threads));
        std::thread::scope(|scope| {
            for t in 0..threads {
                let (dev, barrier) = (dev.clone(), barrier.clone());
                scope.spawn(move || {
                    let s = dev.new_stream().unwrap();
                    let k = kernel(
                        "concurrent",
                        &["inp"],
                        &["out"],
                        &format!("uint i = thread_position_in_grid.x; out[i] = inp[i] + {t}.0f;"),
                    );
                    let data: Vec<f32> = (0..4096).map(|i| i as f32).collect();
                    let x = dev.array_from_slice(&data, [4096]).unwrap();
                    barrier.wait();
                    for _ in 0..20 {
                        let out = k
                            .call([&x])
                            .output([4096], DType::F32)
                            .grid([4096, 1, 1])
                            .on(&s)
                            .launch()
                            .unwrap();
                        let host: Vec<f32> = out[0].to_vec().unwrap();
                        assert!(host
                            .iter()
                            .enumerate()
                            .all(|(i, v)| *v == i as f32 + t as f32));
                    }
                });
            }
        });
    }
    let stats = dev.cache_stats();
    assert_eq!(stats.compiles, threads as u64, "{}", stats.summary());
    assert_eq!(dev.loaded_modules(), threads);
}

#[test]
fn outputs_chain_across_streams() {
    let Some(dev) = gpu() else { return };
    let (s1, s2) = (dev.new_stream().unwrap(), dev.new_stream().unwrap());
    let k = kernel(
        "inc",
        &["inp"],
        &["out"],
        "uint i = thread_position_in_grid.x; out[i] = inp[i] + 1.0f;",
    );
    let n = 1 << 20;
    let mut x = dev.array_from_slice(&vec![0.0f32; n], [n]).unwrap();
    for step in 0..50 {
        let s = if step % 2 == 0 { &s1 } else { &s2 };
        let next = k
            .call([&x])
            .output([n as i64], DType::F32)
            .grid([n as u64, 1, 1])
            .on(s)
            .launch()
            .unwrap()
            .remove(0);
        x = next;
    }
    let host: Vec<f32> = x.to_vec().unwrap();
    assert!(host.iter().all(|v| *v == 50.0), "{:?}", &host[..4]);
}

/// A dropped output's buffer may be reused whole by the thread's next
/// output (its spare). Reuse must never reach memory something still
/// reads: a view of the output, or another stream that used it.
#[test]
fn dropped_outputs_are_reused_only_when_nothing_else_holds_them() {
    let Some(dev) = gpu() else { return };
    let s = dev.new_stream().unwrap();
    let other = dev.new_stream().unwrap();
    let k = kernel(
        "fill_with",
        &["v"],
        &["out"],
        "uint i = thread_position_in_grid.x; out[i] = v[0] + (float)i;",
    );
    let n = 1000usize;
    let call = |v: f32, stream: &kernelkit::Stream| {
        let v = dev.array_from_slice(&[v], [1]).unwrap();
        let mut outs = k
            .call([&v])
            .output([n as i64], DType::F32)
            .grid([n as u64, 1, 1])
            .on(stream)
            .launch()
            .unwrap();
        outs.remove(0)
    };
    let want = |v: f32| (0..n).map(|i| v + i as f32).collect::<Vec<f32>>();
    // Dropped outputs, one after another: each result is its own.
    for round in 0..20 {
        let out = call(round as f32, &s);
        assert_eq!(out.to_vec::<f32>().unwrap(), want(round as f32));
    }
    // A view outlives its array: the buffer is still held, not reused.
    let out = call(1000.0, &s);
    let view = out.slice(&[[0, n, 2]]).unwrap();
    drop(out);
    let later = call(2000.0, &s);
    let expect: Vec<f32> = want(1000.0).into_iter().step_by(2).collect();
    assert_eq!(view.to_vec::<f32>().unwrap(), expect);
    assert_eq!(later.to_vec::<f32>().unwrap(), want(2000.0));
    // An output read on another stream, then dropped: the next output on
    // its stream must not overwrite it before that read has run.
    let copy = kernel(
        "copy_slow",
        &["inp"],
        &["out"],
        "uint i = thread_position_in_grid.x; float acc = inp[i];\n\
         for (int r = 0; r < 2000; ++r) { acc = acc * 1.0000001f; }\n\
         out[i] = inp[i] + (acc - acc);",
    );
    for round in 0..10 {
        let src = call(round as f32 * 10.0, &s);
        s.synchronize().unwrap();
        let copied = copy
            .call([&src])
            .output([n as i64], DType::F32)
            .grid([n as u64, 1, 1])
            .on(&other)
            .launch()
            .unwrap()
            .remove(0);
        drop(src);
        let next = call(-1.0, &s);
        assert_eq!(copied.to_vec::<f32>().unwrap(), want(round as f32 * 10.0));
        assert_eq!(next.to_vec::<f32>().unwrap(), want(-1.0));
    }
}

#[test]
fn metal_position_names_in_three_dimensions() {
    let Some(dev) = gpu() else { return };
    let k = kernel(
        "pos3",
        &["inp"],
        &["out"],
        concat!(
            "uint3 p = thread_position_in_grid;\n",
            "uint3 g = threads_per_grid;\n",
            "uint i = (p.z * g.y + p.y) * g.x + p.x;\n",
            "out[i] = inp[0] + float(threadgroup_position_in_grid.x * 1000 + thread_position_in_threadgroup.x);"
        ),
    );
    let x = dev.array_from_slice(&[0.5f32; 8], [8]).unwrap();
    let (gx, gy, gz) = (13usize, 5usize, 3usize);
    let out = k
        .call([&x])
        .output([(gx * gy * gz) as i64], DType::F32)
        .grid([gx as u64, gy as u64, gz as u64])
        .threadgroup([4, 2, 2])
        .launch()
        .unwrap();
    let host: Vec<f32> = out[0].to_vec().unwrap();
    for z in 0..gz {
        for y in 0..gy {
            for xx in 0..gx {
                let i = (z * gy + y) * gx + xx;
                let want = 0.5 + ((xx / 4) * 1000 + xx % 4) as f32;
                assert_eq!(host[i], want, "({xx}, {y}, {z})");
            }
        }
    }
}

/// A header that includes a file by absolute path, with the disk store on:
/// each new device object has an empty kernel cache, so only the store can
/// carry a compiled kernel from one to the next. A changed file is compiled
/// again (and its entry rewritten), an unchanged one is a disk hit, and a
/// deleted one is a miss and a compile error that names it. In a child
/// process with a store of its own (this process keeps the disk tier off).
#[test]
fn a_file_the_header_includes_is_checked_on_every_load() {
    const TEST: &str = "a_file_the_header_includes_is_checked_on_every_load";
    if is_child(TEST) {
        let params = std::path::PathBuf::from(std::env::var_os("KK_TEST_PARAMS").unwrap());
        let kernel = Kernel::builder("included_value")
            .inputs(["a"])
            .outputs(["out"])
            .header(format!("#include \"{}\"\n", params.display()))
            .source("uint i = thread_position_in_grid.x; out[i] = a[i] + VAL;")
            .build()
            .unwrap();
        let run = || {
            let dev = Device::new_cuda(0).unwrap();
            let result = (|| {
                let a = dev.array_from_slice(&[0.0f32, 10.0], [2])?;
                let out = kernel
                    .call([&a])
                    .output([2], DType::F32)
                    .grid([2, 1, 1])
                    .on(dev.default_stream())
                    .launch()?;
                out[0].to_vec::<f32>()
            })();
            let s = dev.cache_stats();
            (
                result,
                (s.compiles, s.disk_hits, s.disk_writes, s.disk_errors),
            )
        };
        std::fs::write(&params, "#define VAL 1.0f\n").unwrap();
        let (r, s) = run();
        assert_eq!(r.unwrap(), vec![1.0, 11.0]);
        assert_eq!(s, (1, 0, 1, 0), "first: compiled and stored");
        let (r, s) = run();
        assert_eq!(r.unwrap(), vec![1.0, 11.0]);
        assert_eq!(s, (0, 1, 0, 0), "unchanged: a disk hit");
        std::fs::write(&params, "#define VAL 2.0f\n").unwrap();
        let (r, s) = run();
        assert_eq!(r.unwrap(), vec![2.0, 12.0], "a stale entry was used");
        assert_eq!(s, (1, 0, 1, 0), "changed: compiled and rewritten");
        let (r, s) = run();
        assert_eq!(r.unwrap(), vec![2.0, 12.0]);
        assert_eq!(s, (0, 1, 0, 0), "the rewritten entry is a hit");
        std::fs::remove_file(&params).unwrap();
        let (r, s) = run();
        match r {
            Err(Error::Compile(CompileError::Rejected { log, .. })) => {
                assert!(log.contains("params.h"), "{log}")
            }
            other => panic!("expected a compile error naming params.h, got {other:?}"),
        }
        assert_eq!((s.0, s.1), (1, 0), "deleted: a miss");
        return;
    }
    if let Err(e) = Device::cuda(0) {
        println!("skipped: {e}");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    assert!(!in_child(
        TEST,
        &[
            ("KERNELKIT_CACHE", "disk".into()),
            ("KERNELKIT_CACHE_DIR", tmp.path().join("store").into()),
            ("KK_TEST_PARAMS", tmp.path().join("params.h").into()),
        ]
    ));
}

/// Issue 13, defect 10: a grid of 2^32 - 1 threads in threadgroups of 1000
/// runs 4294968 blocks, and the last block's final 704 threads lie at 2^32
/// or past it. Each position must run the body once: with a guard computed
/// in 32 bits, those threads wrapped to positions 0..703 and ran them a
/// second time. The body counts each position into one of 1024 atomic
/// counters (position mod 1024).
#[test]
fn a_grid_of_nearly_2_32_threads_runs_each_position_once() {
    let Some(dev) = gpu() else { return };
    let k = Kernel::builder("count_positions")
        .outputs(["out"])
        .atomic_outputs(true)
        .source(
            "uint i = thread_position_in_grid.x;\n\
             atomic_fetch_add_explicit(&out[i % 1024u], 1u, memory_order_relaxed);",
        )
        .build()
        .unwrap();
    let none: [&kernelkit::Array; 0] = [];
    let grid = u32::MAX as u64;
    let out = k
        .call(none)
        .output([1024], DType::U32)
        .init_value(0.0)
        .grid([grid, 1, 1])
        .threadgroup([1000, 1, 1])
        .on(dev.default_stream())
        .launch()
        .unwrap();
    let counts: Vec<u32> = out[0].to_vec().unwrap();
    let total: u64 = counts.iter().map(|&c| c as u64).sum();
    assert_eq!(total, grid, "threads that ran the body");
    for (j, &c) in counts.iter().enumerate() {
        let want = grid / 1024 + u64::from((j as u64) < grid % 1024);
        assert_eq!(c as u64, want, "positions congruent to {j} mod 1024");
    }
}

/// Foreign memory and streams on the GPU: cudarc slices borrowed for a
/// scope, written in place on cudarc's own stream (no synchronize between
/// the kernel and cudarc's read-back, which queues after it); DLPack
/// tensors; refusals of memory and streams of the wrong device.
#[cfg(feature = "cuda")]
mod foreign {
    use super::{gpu, kernel};
    use kernelkit::interop::{self, dlpack, ForeignLayout, ForeignOwner};
    use kernelkit::DType;

    #[test]
    fn foreign_cudarc_slices_are_written_in_place_on_their_stream() {
        let Some(dev) = gpu() else { return };
        let ctx = cudarc::driver::CudaContext::new(0).unwrap();
        let stream = ctx.new_stream().unwrap();
        let x: Vec<f32> = (0..4096).map(|i| i as f32).collect();
        let xs = stream.clone_htod(&x).unwrap();
        let mut ys = stream.alloc_zeros::<f32>(4096).unwrap();
        let k = kernel(
            "foreign_twice",
            &["inp"],
            &["out"],
            "uint i = thread_position_in_grid.x; out[i] = 2 * inp[i];",
        );
        let part = xs.slice(1024..2048);
        interop::scope(|s| {
            let a = s.cuda_slice(&dev, &xs, [4096]).unwrap();
            let b = s.cuda_slice_mut(&dev, &mut ys, [4096]).unwrap();
            // No stream named: the first input's own (cudarc's) stream.
            k.call([&a])
                .output_into(&b)
                .grid([4096, 1, 1])
                .launch()
                .unwrap();
            // A view of part of the slice, read in place.
            let p = s.cuda_view(&dev, &part, [1024]).unwrap();
            let out = k
                .call([&p])
                .output([1024], DType::F32)
                .grid([1024, 1, 1])
                .launch()
                .unwrap();
            assert_eq!(
                out[0].to_vec::<f32>().unwrap(),
                x[1024..2048].iter().map(|v| 2.0 * v).collect::<Vec<_>>()
            );
        });
        // cudarc reads the result in place, after the kernel (its events).
        let y = stream.clone_dtoh(&ys).unwrap();
        assert_eq!(y, x.iter().map(|v| 2.0 * v).collect::<Vec<_>>());
    }

    /// Strided views of a cudarc slice (a transposed 4x5 block at an
    /// offset) and an output, all produced by one kernelkit stream over the
    /// slice's cudarc stream: read and written in place, and refused for
    /// another stream or a reach past the slice.
    #[test]
    fn foreign_cudarc_strided_views_share_one_stream() {
        let Some(dev) = gpu() else { return };
        let ctx = cudarc::driver::CudaContext::new(0).unwrap();
        let stream = ctx.new_stream().unwrap();
        let x: Vec<f32> = (0..40).map(|i| i as f32).collect();
        let xs = stream.clone_htod(&x).unwrap();
        let mut ys = stream.alloc_zeros::<f32>(20).unwrap();
        let home = interop::cudarc::stream(&dev, stream.clone()).unwrap();
        let k = kernelkit::Kernel::builder("foreign_strided_copy")
            .inputs(["inp"])
            .outputs(["out"])
            .source(
                "uint i = thread_position_in_grid.x; uint r = i / 5, c = i % 5;\n\
                 out[i] = inp[r * inp_strides[0] + c * inp_strides[1]];",
            )
            .ensure_row_contiguous(false)
            .build()
            .unwrap();
        interop::scope(|s| {
            // Element (r, c) at 3 + r + 4c: a transposed 5x4 block at offset 3.
            let a = s.cuda_strided(&home, &xs, &[4, 5], &[1, 4], 3).unwrap();
            let b = s.cuda_slice_mut_on(&home, &mut ys, [20]).unwrap();
            k.call([&a])
                .output_into(&b)
                .grid([20, 1, 1])
                .on(&home)
                .launch()
                .unwrap();
            // Past the slice's 40 elements: 3 + 3 + 4 * 9 = 42.
            let far = s.cuda_strided(&home, &xs, &[4, 10], &[1, 4], 3);
            assert!(far.is_err(), "{far:?}");
            // A stream over another cudarc stream is not the slice's.
            let other = interop::cudarc::stream(&dev, ctx.new_stream().unwrap()).unwrap();
            let r = s.cuda_strided(&other, &xs, &[4, 5], &[1, 4], 3);
            assert!(r.is_err(), "{r:?}");
        });
        let y = stream.clone_dtoh(&ys).unwrap();
        let want: Vec<f32> = (0..20).map(|i| (3 + i / 5 + 4 * (i % 5)) as f32).collect();
        assert_eq!(y, want);
    }

    #[test]
    fn foreign_cudarc_memory_needs_a_cudarc_stream() {
        let Some(dev) = gpu() else { return };
        let ctx = cudarc::driver::CudaContext::new(0).unwrap();
        let stream = ctx.new_stream().unwrap();
        let xs = stream.clone_htod(&[1.0f32; 16]).unwrap();
        let k = kernel("foreign_own_stream", &["inp"], &["out"], "out[0] = inp[0];");
        let own = dev.new_stream().unwrap();
        interop::scope(|s| {
            let a = s.cuda_slice(&dev, &xs, [16]).unwrap();
            let r = k
                .call([&a])
                .output([1], DType::F32)
                .grid([1, 1, 1])
                .on(&own)
                .launch();
            assert!(
                matches!(
                    r,
                    Err(kernelkit::Error::Call(kernelkit::CallError::Foreign { .. }))
                ),
                "{r:?}"
            );
        });
    }

    #[test]
    fn foreign_dlpack_cuda_tensors_round_trip_and_are_written_in_place() {
        let Some(dev) = gpu() else { return };
        let s = dev.new_stream().unwrap();
        let x = dev.array_from_slice(&[5.0f32; 256], [256]).unwrap();
        let y = dev.array_from_slice(&[0.0f32; 256], [256]).unwrap();
        let t = dlpack::export_versioned(&y).unwrap();
        // SAFETY: a tensor kernelkit exported, handed over.
        let yf = unsafe { dlpack::import_versioned(&dev, t, Some(&s)) }.unwrap();
        let k = kernel(
            "foreign_copy",
            &["inp"],
            &["out"],
            "uint i = thread_position_in_grid.x; out[i] = inp[i];",
        );
        k.call([&x])
            .output_into(&yf)
            .grid([256, 1, 1])
            .on(&s)
            .launch()
            .unwrap();
        s.synchronize().unwrap();
        assert_eq!(
            y.to_vec::<f32>().unwrap(),
            vec![5.0; 256],
            "written through"
        );
        // The wrong device id, and host memory, are refused.
        let t = dlpack::export(&x).unwrap();
        // SAFETY: a live tensor; on error it stays ours.
        unsafe { (*t).dl_tensor.device.device_id = 7 };
        assert!(unsafe { dlpack::import(&dev, t, None) }.is_err());
        unsafe { ((*t).deleter.unwrap())(t) };
        let host = [0.0f32; 4];
        // SAFETY: refused before any use: the driver does not know it.
        let r = unsafe {
            interop::foreign_array(
                &dev,
                ForeignLayout::new(host.as_ptr() as u64, DType::F32, &[4]),
                ForeignOwner::none(),
            )
        };
        assert!(r.is_err(), "host memory is not the GPU's");
        // A layout whose producer named the device is not checked again
        // (torch's tensors: the driver call per tensor per call is saved).
        let mut known = ForeignLayout::new(host.as_ptr() as u64, DType::F32, &[4]);
        known.device_known = true;
        // SAFETY: never launched on: the array is dropped unused.
        let r = unsafe { interop::foreign_array(&dev, known, ForeignOwner::none()) };
        assert!(r.is_ok(), "device_known skips the driver's check");
    }

    #[test]
    fn foreign_cudarc_stream_of_the_device_is_accepted() {
        let Some(dev) = gpu() else { return };
        let ctx = cudarc::driver::CudaContext::new(0).unwrap();
        let s = interop::cudarc::stream(&dev, ctx.new_stream().unwrap()).unwrap();
        let x = dev.array_from_slice(&[3i32; 8], [8]).unwrap();
        let k = kernel(
            "foreign_stream_i32",
            &["inp"],
            &["out"],
            "uint i = thread_position_in_grid.x; out[i] = inp[i] + 1;",
        );
        let out = k
            .call([&x])
            .output([8], DType::I32)
            .grid([8, 1, 1])
            .on(&s)
            .launch()
            .unwrap();
        assert_eq!(out[0].to_vec::<i32>().unwrap(), vec![4; 8]);
    }
}

/// The legacy default stream (PyTorch's and CuPy's default) as a kernelkit
/// stream: kernels queue on it, kernelkit's own (non-blocking) streams are
/// ordered after it with `wait_for` (an event, no host wait), and its raw
/// handle is `CU_STREAM_LEGACY` for the DLPack stream exchange.
#[cfg(feature = "cuda")]
#[test]
fn the_legacy_default_stream_orders_with_kernelkits_streams() {
    let Some(dev) = gpu() else { return };
    let legacy = kernelkit::Stream::cuda_legacy_default(&dev).unwrap();
    let own = dev.new_stream().unwrap();
    assert_eq!(legacy.raw_cuda(), Some(1));
    assert!(own.raw_cuda().is_some_and(|raw| raw > 2));
    let k = kernel(
        "legacy_then_own",
        &["inp"],
        &["out"],
        "uint i = thread_position_in_grid.x; out[i] = inp[i] * 2 + 1;",
    );
    let n = 1 << 20;
    let x = dev.array_from_slice(&vec![1.0f32; n], [n]).unwrap();
    let y = k
        .call([&x])
        .output([n as i64], DType::F32)
        .grid([n as u64, 1, 1])
        .on(&legacy)
        .launch()
        .unwrap()
        .remove(0);
    own.wait_for(&legacy).unwrap();
    let z = k
        .call([&y])
        .output([n as i64], DType::F32)
        .grid([n as u64, 1, 1])
        .on(&own)
        .launch()
        .unwrap()
        .remove(0);
    assert!(z.to_vec::<f32>().unwrap().iter().all(|&v| v == 7.0));
    let cpu = Device::new_cpu();
    assert!(own.wait_for(cpu.default_stream()).is_err());
}
