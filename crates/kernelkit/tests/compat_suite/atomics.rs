//! MSL 2.5 / 6.13: atomics on device memory through pointer casts (no
//! `atomic_outputs`), on `atomic_outputs`, and on threadgroup variables,
//! against counts computed here.

use kernelkit::{DType, Device};

use super::*;

/// Every atomic operation on device memory reached through a pointer cast,
/// from many threads of many groups; results are order-independent.
pub fn device_atomics_through_pointer_casts(device: Device) {
    let body = "uint i = thread_position_in_grid.x;\n\
        device atomic_int* ai = (device atomic_int*)&ints[0];\n\
        device atomic_uint* au = (device atomic_uint*)&uints[0];\n\
        device atomic_float* af = (device atomic_float*)&floats_[0];\n\
        atomic_fetch_add_explicit(&ai[0], 2, memory_order_relaxed);\n\
        atomic_fetch_sub_explicit(&ai[1], 3, memory_order_relaxed);\n\
        atomic_fetch_max_explicit(&ai[2], (int)(i * 7 % 1000) - 500, memory_order_relaxed);\n\
        atomic_fetch_min_explicit(&ai[3], (int)(i * 7 % 1000) - 500, memory_order_relaxed);\n\
        atomic_fetch_or_explicit(&au[0], 1u << (i % 32), memory_order_relaxed);\n\
        atomic_fetch_and_explicit(&au[1], ~(1u << (i % 31)), memory_order_relaxed);\n\
        atomic_fetch_xor_explicit(&au[2], 1u << (i % 7), memory_order_relaxed);\n\
        atomic_fetch_add_explicit(&af[0], 0.5f, memory_order_relaxed);\n\
        atomic_fetch_max_explicit(&af[1], float(i % 77), memory_order_relaxed);\n\
        atomic_fetch_min_explicit(&af[2], -float(i % 55), memory_order_relaxed);\n\
        // A counter built from compare-exchange.\n\
        int seen = atomic_load_explicit(&ai[4], memory_order_relaxed);\n\
        while (!atomic_compare_exchange_weak_explicit(&ai[4], &seen, seen + 1, memory_order_relaxed, memory_order_relaxed)) {}\n\
        // Exchange: every thread swaps in its index; the values taken out\n\
        // and the one left are each thread's index exactly once.\n\
        uint old = atomic_exchange_explicit(&au[3], i + 1, memory_order_relaxed);\n\
        taken[i] = old;\n\
        metal::atomic_fetch_add_explicit((device metal::atomic<uint>*)&uints[4], 1u, memory_order_relaxed);";
    let n = 2000usize;
    let out = Run::new("device_atomics", body)
        .output("ints", 5, DType::I32)
        .output("uints", 5, DType::U32)
        .output("floats_", 3, DType::F32)
        .output("taken", n, DType::U32)
        .init(0.0)
        .grid([n as u64, 1, 1], [128, 1, 1])
        .run(&device);
    // The and-mask starts at 0 (init): it stays 0; the others from 0.
    let want_ints = vec![2 * n as i128, -3 * n as i128, 499, -500, n as i128];
    let mut xor = 0u32;
    for i in 0..n {
        xor ^= 1 << (i % 7);
    }
    let got_u = ints(&out[1]);
    check_ints(
        "device atomics (int)",
        &(0..5).map(|k| format!("ints[{k}]")).collect::<Vec<_>>(),
        &ints(&out[0]),
        &want_ints,
    );
    check_ints(
        "device atomics (uint)",
        &["or", "and", "xor", "n"].map(String::from),
        &[got_u[0], got_u[1], got_u[2], got_u[4]],
        &[u32::MAX as i128, 0, xor as i128, n as i128],
    );
    let f = floats(&out[2]);
    check(
        "device atomics (float)",
        &["add", "max", "min"].map(String::from),
        &f,
        &[0.5 * n as f64, 76.0, -54.0],
        |_| Tol::Exact,
    );
    // Exchange: {old values} + {final} = {0, 1, ..., n}.
    let mut seen: Vec<i128> = ints(&out[3]);
    seen.push(got_u[3]);
    seen.sort();
    assert_eq!(
        seen,
        (0..=n as i128).collect::<Vec<_>>(),
        "exchange: every value taken out once"
    );
}

/// `atomic_outputs` (outputs declared atomic) and threadgroup atomics: a
/// histogram per group in threadgroup memory, merged into the output.
pub fn threadgroup_atomics_and_atomic_outputs(device: Device) {
    let body = "threadgroup atomic_uint bins[16];\n\
        uint t = thread_index_in_threadgroup;\n\
        if (t < 16) atomic_store_explicit(&bins[t], 0u, memory_order_relaxed);\n\
        threadgroup_barrier(mem_flags::mem_threadgroup);\n\
        uint v = inp[thread_position_in_grid.x];\n\
        atomic_fetch_add_explicit(&bins[v % 16], 1u, memory_order_relaxed);\n\
        threadgroup_barrier(mem_flags::mem_threadgroup);\n\
        if (t < 16) atomic_fetch_add_explicit(&hist[t], atomic_load_explicit(&bins[t], memory_order_relaxed), memory_order_relaxed);";
    let n = 4096usize;
    let inp: Vec<u32> = (0..n as u32)
        .map(|i| i.wrapping_mul(2654435761u32) >> 7)
        .collect();
    let kernel = kernelkit::Kernel::builder("tg_hist")
        .inputs(["inp"])
        .outputs(["hist"])
        .source(body)
        .atomic_outputs(true)
        .build()
        .unwrap();
    let x = device.array_from_slice(&inp, [n]).unwrap();
    let out = kernel
        .call([&x])
        .output([16], DType::U32)
        .init_value(0.0)
        .grid([n as u64, 1, 1])
        .threadgroup([256, 1, 1])
        .on(device.default_stream())
        .launch()
        .unwrap();
    let mut want = vec![0i128; 16];
    for v in &inp {
        want[(v % 16) as usize] += 1;
    }
    check_ints(
        "threadgroup histogram",
        &(0..16).map(|k| format!("bin {k}")).collect::<Vec<_>>(),
        &ints(&out[0]),
        &want,
    );
}
