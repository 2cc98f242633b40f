//! Runs a loaded entry point over the grid: ranges of threadgroups in
//! parallel on the rayon pool, each range inside one native call.

use std::ffi::c_void;

use rayon::prelude::*;

use super::load::KkLaunch;
use crate::backend::LaunchDesc;
use crate::codegen::variant::PassMode;

/// Argument pointers for one launch: what the generated entry unpacks.
struct Args {
    ptrs: Vec<*mut c_void>,
}

// SAFETY: the pointers address buffers that the launch keeps alive (its
// inputs and outputs) and layout vectors owned by the launching frame, which
// outlives the parallel loop; the kernel code is responsible for its own
// accesses, as on every device.
unsafe impl Sync for Args {}

impl Args {
    fn as_ptr(&self) -> *const *mut c_void {
        self.ptrs.as_ptr()
    }
}

/// Launches `job.iters` times (arguments marshalled once); the caller has
/// checked dims against the limits.
pub(super) fn launch(job: &LaunchDesc<'_>, simd: u32) {
    let iters = job.iters;
    let function = job.function.cpu().expect("CPU launches get CPU functions");
    let mut shapes: Vec<Vec<i32>> = Vec::new();
    let mut strides: Vec<Vec<i64>> = Vec::new();
    let mut ndims: Vec<Box<i32>> = Vec::new();
    // Collect layout data first so that the vectors no longer move.
    for (input, info) in job.inputs.iter().zip(&job.spec.shape_infos) {
        shapes.push(input.shape.iter().map(|&d| d as i32).collect());
        strides.push(input.strides.iter().map(|&s| s as i64).collect());
        ndims.push(Box::new(input.shape.len() as i32));
        let _ = info;
    }
    let mut ptrs: Vec<*mut c_void> = Vec::new();
    for (i, (input, info)) in job.inputs.iter().zip(&job.spec.shape_infos).enumerate() {
        ptrs.push(input.addr as *mut c_void);
        let mode = PassMode::of(input.shape.len(), input.size());
        if mode == PassMode::Scalar {
            // 0-d inputs have no layout parameters to pass.
            continue;
        }
        if info.shape {
            ptrs.push(shapes[i].as_ptr() as *mut c_void);
        }
        if info.strides {
            ptrs.push(strides[i].as_ptr() as *mut c_void);
        }
        if info.ndim {
            ptrs.push(&*ndims[i] as *const i32 as *mut c_void);
        }
    }
    for output in job.outputs {
        ptrs.push(output.addr as *mut c_void);
    }
    let args = &Args { ptrs };

    let grid = job.grid;
    let tg = job.threadgroup;
    let groups = [
        grid[0].div_ceil(tg[0]),
        grid[1].div_ceil(tg[1]),
        grid[2].div_ceil(tg[2]),
    ];
    let total_groups = groups.iter().map(|&g| g as u64).product::<u64>();
    let run = |begin: u64, end: u64| {
        let launch = KkLaunch {
            grid,
            tg,
            groups,
            simd,
            group_begin: begin,
            group_end: end,
        };
        // SAFETY: `entry` was resolved from the generated library whose entry
        // has this signature; `args` holds one pointer per parameter in the
        // order the generator unpacks them; all pointed-to memory outlives
        // the call.
        unsafe { (function.entry)(args.as_ptr(), &launch) }
    };
    let total_threads = total_groups * tg.iter().map(|&t| t as u64).product::<u64>();
    let workers = rayon::current_num_threads() as u64;
    for _ in 0..iters {
        if total_groups <= 1 || total_threads < 4096 || workers <= 1 {
            run(0, total_groups);
            continue;
        }
        let chunks = (workers * 4).min(total_groups);
        let per = total_groups.div_ceil(chunks);
        (0..chunks).into_par_iter().for_each(|c| {
            let begin = c * per;
            let end = ((c + 1) * per).min(total_groups);
            if begin < end {
                run(begin, end);
            }
        });
    }
}
