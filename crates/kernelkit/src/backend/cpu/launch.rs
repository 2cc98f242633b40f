//! Runs a loaded entry point over the grid: ranges of threadgroups in
//! parallel on the rayon pool, each range inside one native call.
//!
//! A body that synchronises the threads of a group runs them as fibers
//! (the runtime is in the generated code, `prelude/metal/group_cpu.h`);
//! their stacks come from here: one region per OS thread, grown to the
//! largest group seen and reused by every later launch on that thread.

use std::cell::RefCell;
use std::ffi::c_void;
use std::sync::atomic::{AtomicU32, Ordering};

use rayon::prelude::*;

use super::load::KkLaunch;
use crate::backend::LaunchDesc;
use crate::codegen::variant::PassMode;
use crate::error::{CallError, DeviceError, Error, Result};

/// Bytes of one fiber's stack, its guard page included. Address space
/// only: pages are committed as a body touches them.
const STACK_BYTES: usize = 256 * 1024;

/// Fiber stacks of one OS thread: `count` stacks of [`STACK_BYTES`], the
/// lowest page of each inaccessible (a body that overflows its stack
/// faults there instead of writing over its neighbour).
struct Stacks {
    base: *mut u8,
    count: usize,
    guard: usize,
}

impl Stacks {
    fn map(count: usize) -> Option<Stacks> {
        let len = count.checked_mul(STACK_BYTES)?;
        // SAFETY: an anonymous private mapping of `len` bytes, asked of the
        // kernel with no address hint; checked for failure below.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return None;
        }
        // SAFETY: sysconf has no preconditions.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) })
            .unwrap_or(4096)
            .max(1);
        let stacks = Stacks {
            base: base.cast(),
            count,
            guard: page,
        };
        for i in 0..count {
            // SAFETY: the page lies inside the mapping made above.
            let ok = unsafe {
                libc::mprotect(
                    base.cast::<u8>().add(i * STACK_BYTES).cast(),
                    page,
                    libc::PROT_NONE,
                )
            };
            if ok != 0 {
                return None;
            }
        }
        Some(stacks)
    }
}

impl Drop for Stacks {
    fn drop(&mut self) {
        // SAFETY: the mapping was made by `Stacks::map` with this length and
        // no fiber runs on it any more (launches finish before they return).
        unsafe { libc::munmap(self.base.cast(), self.count * STACK_BYTES) };
    }
}

thread_local! {
    static STACKS: RefCell<Option<Stacks>> = const { RefCell::new(None) };
}

/// Runs `f` with at least `count` fiber stacks of this OS thread.
fn with_stacks<R>(count: usize, f: impl FnOnce(&Stacks) -> R) -> Option<R> {
    STACKS.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.as_ref().is_none_or(|s| s.count < count) {
            *slot = None;
            *slot = Some(Stacks::map(count)?);
        }
        slot.as_ref().map(f)
    })
}

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
pub(super) fn launch(job: &LaunchDesc<'_>, simd: u32) -> Result<()> {
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
    if job.spec.check_bounds {
        // The block of `codegen::bounds` (record and spans).
        ptrs.push(job.bounds as *mut c_void);
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
    let fibers = job.spec.group_function.is_some();
    let group_threads = tg.iter().map(|&t| t as usize).product::<usize>();
    let status = AtomicU32::new(0);
    let mapped = AtomicU32::new(1);
    let run = |begin: u64, end: u64| {
        let mut launch = KkLaunch {
            grid,
            tg,
            groups,
            simd,
            group_begin: begin,
            group_end: end,
            stacks: std::ptr::null_mut(),
            stack_stride: STACK_BYTES as u64,
            stack_guard: 0,
            stack_count: 0,
            status: &status,
        };
        let call = |launch: &KkLaunch| {
            // SAFETY: `entry` was resolved from the generated library whose
            // entry has this signature; `args` holds one pointer per
            // parameter in the order the generator unpacks them; all
            // pointed-to memory (fiber stacks included) outlives the call.
            unsafe { (function.entry)(args.as_ptr(), launch) }
        };
        if !fibers {
            return call(&launch);
        }
        let ran = with_stacks(group_threads, |stacks| {
            launch.stacks = stacks.base;
            launch.stack_guard = stacks.guard as u64;
            launch.stack_count = stacks.count as u32;
            call(&launch)
        });
        if ran.is_none() {
            mapped.store(0, Ordering::Relaxed);
        }
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
    if mapped.load(Ordering::Relaxed) == 0 {
        return Err(DeviceError::Driver {
            device: "cpu".into(),
            operation: "map fiber stacks",
            reason: format!(
                "the system refused {} stacks of {} KiB for the threads of a group of kernel `{}`",
                group_threads,
                STACK_BYTES / 1024,
                job.spec.name
            ),
        }
        .into());
    }
    match status.load(Ordering::Relaxed) {
        0 => Ok(()),
        code => Err(Error::from(CallError::Unsupported {
            kernel: job.spec.name.clone(),
            backend: "cpu",
            reason: if code & 1 != 0 {
                "the body reached a barrier or SIMD-group function that its scan did not find \
                 (a name built by a macro?), so its threads ran one after another and the \
                 results are wrong"
                    .to_string()
            } else {
                "the launch had fewer fiber stacks than threads per group".to_string()
            },
        })),
    }
}
