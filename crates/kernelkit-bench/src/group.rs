//! What running a threadgroup's threads together costs on the CPU: each
//! thread of a group that synchronises is a fiber, switched at every
//! barrier. The figure is a 256-thread tree reduction in threadgroup memory
//! (one barrier per level, 9 in all), per group; its baseline takes the
//! same sums with one thread per group and no barrier (the threads of a
//! group that does not synchronise run one after another, without fibers).
//! Both launches compute the same sums, checked once.

use kernelkit::{DType, Device, Kernel};

use super::measure::{paired, Plan};
use super::BenchError;

/// Threads per group of the reduction.
pub(crate) const GROUP: u64 = 256;
/// Groups per launch (enough to spread over the rayon pool).
const GROUPS: u64 = 64;

/// The two figures, in nanoseconds per group.
pub(crate) struct GroupFigures {
    /// With barriers (fibers).
    pub(crate) barrier_ns: f64,
    /// One thread per group, no barrier.
    pub(crate) plain_ns: f64,
}

const WITH_BARRIERS: &str = "threadgroup float buf[256];\n\
    uint t = thread_index_in_threadgroup;\n\
    buf[t] = inp[thread_position_in_grid.x];\n\
    threadgroup_barrier(mem_flags::mem_threadgroup);\n\
    for (uint s = 128; s > 0; s >>= 1) {\n\
      if (t < s) buf[t] += buf[t + s];\n\
      threadgroup_barrier(mem_flags::mem_threadgroup);\n\
    }\n\
    if (t == 0) out[threadgroup_position_in_grid.x] = buf[0];";

/// The same sums, in the same order (a tree over the group's 256 values),
/// by one thread.
const WITHOUT: &str = "float buf[256];\n\
    uint g = thread_position_in_grid.x;\n\
    for (uint t = 0; t < 256; ++t) buf[t] = inp[g * 256 + t];\n\
    for (uint s = 128; s > 0; s >>= 1)\n\
      for (uint t = 0; t < s; ++t) buf[t] += buf[t + s];\n\
    out[g] = buf[0];";

/// Measures both on `device` (a CPU device).
pub(crate) fn measure(device: &Device, plan: Plan) -> Result<GroupFigures, BenchError> {
    let kernel = |name: &str, body: &str| {
        Kernel::builder(name)
            .inputs(["inp"])
            .outputs(["out"])
            .source(body)
            .build()
    };
    let with = kernel("bench_group_barriers", WITH_BARRIERS)?;
    let without = kernel("bench_group_plain", WITHOUT)?;
    let n = (GROUP * GROUPS) as usize;
    let values: Vec<f32> = (0..n).map(|i| (i % 7) as f32).collect();
    let x = device.array_from_slice(&values, [n])?;
    let stream = device.new_stream()?;
    let launch_with = with
        .call([&x])
        .output([GROUPS as i64], DType::F32)
        .grid([n as u64, 1, 1])
        .threadgroup([GROUP, 1, 1])
        .on(&stream)
        .prepare()?;
    let launch_without = without
        .call([&x])
        .output([GROUPS as i64], DType::F32)
        .grid([GROUPS, 1, 1])
        .threadgroup([GROUPS, 1, 1])
        .on(&stream)
        .prepare()?;
    let want: Vec<f32> = values
        .chunks(GROUP as usize)
        .map(|c| c.iter().sum())
        .collect();
    for (what, launch) in [
        ("with barriers", &launch_with),
        ("without", &launch_without),
    ] {
        let got: Vec<f32> = launch.run()?[0].to_vec()?;
        if got != want {
            return Err(BenchError::WrongResult(format!(
                "the group reduction {what}: {:?}, expected {:?}",
                &got[..4],
                &want[..4]
            )));
        }
    }
    let (barrier, plain) = paired(
        plan,
        &mut || {
            launch_with.run()?;
            Ok(())
        },
        &mut || {
            launch_without.run()?;
            Ok(())
        },
    )?;
    Ok(GroupFigures {
        barrier_ns: barrier / GROUPS as f64,
        plain_ns: plain / GROUPS as f64,
    })
}
