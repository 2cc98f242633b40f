//! MSL 6.9.1: threadgroup_barrier, simdgroup_barrier and threadgroup
//! memory, over group shapes (1-D to 3-D, up to 1024 threads, partial
//! groups at the grid's edge), against sums computed here.

use kernelkit::{DType, Device};

use super::*;

/// A tree reduction in threadgroup memory with a barrier per level, and a
/// second phase that reads what other threads wrote (a broadcast through
/// threadgroup memory), for many group shapes.
pub fn barrier_tree_reduction_over_group_shapes(device: Device) {
    let body = "threadgroup float buf[1024];\n\
        threadgroup float total;\n\
        uint t = thread_index_in_threadgroup;\n\
        uint n = threads_per_threadgroup.x * threads_per_threadgroup.y * threads_per_threadgroup.z;\n\
        uint3 g = thread_position_in_grid;\n\
        bool in_grid = g.x < threads_per_grid.x && g.y < threads_per_grid.y && g.z < threads_per_grid.z;\n\
        uint gi = (g.z * threads_per_grid.y + g.y) * threads_per_grid.x + g.x;\n\
        buf[t] = inp[gi];\n\
        threadgroup_barrier(mem_flags::mem_threadgroup);\n\
        for (uint s = 1; s < n; s *= 2) {\n\
          float other = (t % (2 * s) == 0 && t + s < n) ? buf[t + s] : 0.0f;\n\
          threadgroup_barrier(mem_flags::mem_threadgroup);\n\
          buf[t] += other;\n\
          threadgroup_barrier(mem_flags::mem_threadgroup);\n\
        }\n\
        if (t == 0) total = buf[0];\n\
        threadgroup_barrier(mem_flags::mem_threadgroup);\n\
        out[gi] = total - inp[gi];";
    // (grid, threadgroup): full groups only (every thread of a group must
    // reach each barrier, so the grid is a multiple of the group).
    let shapes: [([u64; 3], [u64; 3]); 6] = [
        ([256, 1, 1], [256, 1, 1]),
        ([2048, 1, 1], [1024, 1, 1]),
        ([300, 1, 1], [100, 1, 1]),
        ([16, 12, 1], [8, 4, 1]),
        ([8, 4, 6], [4, 2, 3]),
        ([96, 2, 1], [96, 1, 1]),
    ];
    for (grid, tg) in shapes {
        let n = (grid[0] * grid[1] * grid[2]) as usize;
        let inp: Vec<f32> = (0..n).map(|i| ((i * 37) % 101) as f32 * 0.5).collect();
        let out = Run::new("tree_reduce", body)
            .input("inp", device.array_from_slice(&inp, [n]).unwrap())
            .output("out", n, DType::F32)
            .grid(grid, tg)
            .run(&device);
        // Each group sums its own threads (grid index -> group).
        let (mut want, mut labels) = (Vec::new(), Vec::new());
        let group_of = |i: usize| {
            let (x, y, z) = (
                i as u64 % grid[0],
                (i as u64 / grid[0]) % grid[1],
                i as u64 / (grid[0] * grid[1]),
            );
            (x / tg[0], y / tg[1], z / tg[2])
        };
        for i in 0..n {
            let g = group_of(i);
            let total: f64 = (0..n)
                .filter(|&j| group_of(j) == g)
                .map(|j| inp[j] as f64)
                .sum();
            want.push(total - inp[i] as f64);
            labels.push(format!("thread {i} of grid {grid:?} group {tg:?}"));
        }
        // Sums of halves: exact in float32 at these sizes.
        check("tree reduction", &labels, &floats(&out[0]), &want, |_| {
            Tol::Exact
        });
    }
}

/// Barriers in a group at the grid's edge (fewer threads than the group's
/// size) and after some threads returned: the threads that remain meet.
pub fn barriers_in_partial_groups_and_after_early_returns(device: Device) {
    let body = "threadgroup atomic_uint count;\n\
        threadgroup uint seen[64];\n\
        uint t = thread_position_in_threadgroup.x;\n\
        if (t == 0) atomic_store_explicit(&count, 0u, memory_order_relaxed);\n\
        threadgroup_barrier(mem_flags::mem_threadgroup);\n\
        if (t % 5 == 4) return;\n\
        atomic_fetch_add_explicit(&count, 1u, memory_order_relaxed);\n\
        seen[t] = t + 1;\n\
        threadgroup_barrier(mem_flags::mem_threadgroup);\n\
        out[thread_position_in_grid.x] = atomic_load_explicit(&count, memory_order_relaxed) * 1000 + seen[(t + 1) % 64];";
    // 150 threads in groups of 64: the last group has 22.
    let n = 150usize;
    let out = Run::new("partial_groups", body)
        .output("out", n, DType::U32)
        .init(9.0)
        .grid([n as u64, 1, 1], [64, 1, 1])
        .run(&device);
    let (mut want, mut labels) = (Vec::new(), Vec::new());
    for i in 0..n {
        let (g, t) = (i / 64, i % 64);
        let size = (n - g * 64).min(64);
        let live = (0..size).filter(|k| k % 5 != 4).count() as i128;
        let next = (t + 1) % 64;
        // seen[next] was written by a live thread of this group (else it
        // holds whatever the last group wrote there: not checked).
        let w = if t % 5 == 4 {
            9
        } else if next < size && next % 5 != 4 {
            live * 1000 + next as i128 + 1
        } else {
            -1
        };
        want.push(w);
        labels.push(format!("thread {t} of group {g}"));
    }
    let got = ints(&out[0]);
    let got: Vec<i128> = got
        .iter()
        .zip(&want)
        .map(|(&g, &w)| if w == -1 { -1 } else { g })
        .collect();
    check_ints("partial groups", &labels, &got, &want);
}

/// SIMD-group reductions combined through threadgroup memory (the pattern
/// of softmax and KL kernels), with simdgroup_barrier, threadgroup vectors
/// and a header helper that calls a SIMD function.
pub fn simdgroup_reductions_through_threadgroup_memory(device: Device) {
    let header = "inline float warp_total(float v) { return simd_sum(v); }";
    let body = "threadgroup float partial[32];\n\
        threadgroup float4 quads[8];\n\
        uint t = thread_index_in_threadgroup, lane = thread_index_in_simdgroup, sg = simdgroup_index_in_threadgroup;\n\
        float v = inp[thread_position_in_grid.x];\n\
        float s = warp_total(v);\n\
        if (lane == 0) partial[sg] = s;\n\
        simdgroup_barrier(mem_flags::mem_none);\n\
        threadgroup_barrier(mem_flags::mem_threadgroup);\n\
        float total = lane < simdgroups_per_threadgroup ? partial[lane] : 0.0f;\n\
        total = simd_sum(total);\n\
        float m = simd_max(v);\n\
        if (lane == 0 && sg < 8) quads[sg] = float4(s, m, total, float(sg));\n\
        threadgroup_barrier(mem_flags::mem_threadgroup);\n\
        float4 q = quads[sg % 8];\n\
        out[thread_position_in_grid.x] = total * 1000.0f + q.y + (t == 0 ? q.w : 0.0f);";
    let (n, tg) = (512usize, 256u64);
    let inp: Vec<f32> = (0..n).map(|i| ((i * 13) % 29) as f32).collect();
    let out = Run::new("simd_tg_reduce", body)
        .header(header)
        .input("inp", device.array_from_slice(&inp, [n]).unwrap())
        .output("out", n, DType::F32)
        .grid([n as u64, 1, 1], [tg, 1, 1])
        .run(&device);
    let (mut want, mut labels) = (Vec::new(), Vec::new());
    for i in 0..n {
        let g = i / tg as usize;
        let total: f64 = inp[g * 256..g * 256 + 256].iter().map(|&v| v as f64).sum();
        let sg = (i % 256) / 32;
        let base = g * 256 + sg * 32;
        let m = inp[base..base + 32]
            .iter()
            .copied()
            .fold(f32::MIN, f32::max) as f64;
        want.push(total * 1000.0 + m);
        labels.push(format!("thread {i}"));
    }
    check(
        "simd + threadgroup",
        &labels,
        &floats(&out[0]),
        &want,
        |_| Tol::Exact,
    );
}

/// A body that says `threadgroup` only in a comment and a string runs the
/// fast path (no fibers) and is not refused; `threadgroup` memory without
/// barriers is shared by the group too.
pub fn threadgroup_words_in_comments_are_not_uses(device: Device) {
    let body = "// One threadgroup per row; \"threadgroup_barrier\" is not called.\n\
        uint i = thread_position_in_grid.x;\n\
        out[i] = inp[i] * 2.0f; /* simd_sum(x) */";
    let x: Vec<f32> = (0..64).map(|i| i as f32).collect();
    let out = Run::new("comment_words", body)
        .input("inp", device.array_from_slice(&x, [64]).unwrap())
        .output("out", 64, DType::F32)
        .grid([64, 1, 1], [32, 1, 1])
        .run(&device);
    let want: Vec<f32> = x.iter().map(|v| v * 2.0).collect();
    assert_eq!(out[0].to_vec::<f32>().unwrap(), want);
}
