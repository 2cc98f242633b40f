//! Marshals a launch's arguments on the stack and calls `cuLaunchKernel`:
//! the one place where kernel parameters reach the driver ([`submit`]),
//! and so the one `unsafe` block of the backend outside `driver`. Nothing
//! can check a parameter list against a compiled kernel, so this file
//! builds both lists it launches with: a variant's (from the generated
//! signature) and the built-in strided copy's ([`launch_gather`]).
//!
//! The parameter order is the generator's (`codegen::cuda`): per input its
//! pointer (a 0-d input's `kk_scalar<T>` is a pointer too), then
//! `NAME_shape` (`int32[10]`), `NAME_strides` (`int64[10]`) and `NAME_ndim`
//! (`int`) where the body uses them; then the outputs; then `kk_grid` and
//! `kk_partial` (whether the threads must run the grid guard). Each
//! value sits in whole 8-byte words of one stack buffer; the parameter array
//! points into it. Nothing on this path allocates on the heap for kernels
//! of up to 24 parameters and 512 bytes of argument data (larger ones take
//! a slower path that does), nothing zeroes the buffers, and nothing looks
//! a function up: the variant holds its resolved `CUfunction`.
//!
//! The grid is counted in threads (Metal's and MLX's convention); blocks
//! per axis = ceil(grid / threadgroup). Threads past the grid are stopped
//! by the generated guard (see `codegen::cuda`).

use std::ffi::c_void;
use std::sync::Arc;

use arrayvec::ArrayVec;

use super::cuda_stream::CudaStream;
use super::driver::{self, DevicePtr, RawFunction};
use super::load::{CudaFunction, DEFAULT_DYNAMIC_SHARED};
use super::Context;
use crate::backend::LaunchDesc;
use crate::codegen::cuda::{self, MAX_NDIM};
use crate::codegen::variant::PassMode;
use crate::error::{CallError, DeviceError, Result};

/// Argument words kept on the stack (larger launches use the heap).
const STACK_WORDS: usize = 64;
/// Parameters kept on the stack (as above).
const STACK_PARAMS: usize = 24;

/// Where `marshal` writes: fixed arrays on the stack (no zeroing, no
/// growth), or vectors for launches too large for them.
trait Slots<T> {
    /// Appends `v`; false when full.
    fn put(&mut self, v: T) -> bool;
}

impl<T, const N: usize> Slots<T> for ArrayVec<T, N> {
    #[inline(always)]
    fn put(&mut self, v: T) -> bool {
        self.try_push(v).is_ok()
    }
}

impl<T> Slots<T> for Vec<T> {
    fn put(&mut self, v: T) -> bool {
        self.push(v);
        true
    }
}

/// Launches `job` `job.iters` times on `stream`, the job's stream
/// (arguments marshalled once).
#[inline(always)]
pub(super) fn launch(
    ctx: &Context,
    job: &LaunchDesc<'_>,
    stream: &Arc<CudaStream>,
    max_shared: u64,
) -> Result<()> {
    let iters = job.iters;
    let function = job
        .function
        .cuda()
        .expect("CUDA launches get CUDA functions");
    // The call checked the device's limits; the compiled function's own
    // are known once it is loaded. (Each extent is at most the device's
    // per-axis limit here: the product fits.)
    let [x, y, z] = job.threadgroup;
    let limits = &function.limits;
    if x * y * z > limits.max_threads
        || job.shared_mem_bytes as u64 + limits.static_shared as u64 > max_shared
    {
        return Err(over_function_limits(ctx, job, function, max_shared));
    }
    ctx.bind()?;
    // A launch captured into a graph runs whenever the graph replays: its
    // module must stay loaded (one word read on kernelkit's own streams).
    if stream.may_capture() {
        pin_if_capturing(stream, function)?;
    }
    let mut words = ArrayVec::<u64, STACK_WORDS>::new();
    let mut offsets = ArrayVec::<u32, STACK_PARAMS>::new();
    if !marshal(job, stream, &mut words, &mut offsets)? {
        return launch_large(ctx, job, function, stream, iters);
    }
    let mut params = ArrayVec::<*mut c_void, STACK_PARAMS>::new();
    point(&mut words, &offsets, &mut params);
    enqueue(ctx, job, function, stream, &mut params, iters)
}

/// The error of a launch over its compiled function's own limits: too many
/// threads per block for its registers, or more shared memory, static and
/// dynamic together, than the device gives a block.
#[cold]
#[inline(never)]
fn over_function_limits(
    ctx: &Context,
    job: &LaunchDesc<'_>,
    function: &CudaFunction,
    max_shared: u64,
) -> crate::Error {
    let limits = &function.limits;
    let [x, y, z] = job.threadgroup;
    if x * y * z > limits.max_threads {
        return CallError::Dims {
            kernel: job.spec.name.clone(),
            what: "threadgroup",
            dims: job.threadgroup.map(u64::from),
            device: ctx.label.clone(),
            limit: Some(crate::error::LaunchLimit::FunctionThreads),
            reason: format!(
                "the compiled function `{}` runs at most {} threads per threadgroup                  (it uses {} registers per thread; the device's own limit is higher): use a                  smaller threadgroup",
                function.name, limits.max_threads, limits.registers
            ),
        }
        .into();
    }
    CallError::Dims {
        kernel: job.spec.name.clone(),
        what: "shared memory",
        dims: [job.shared_mem_bytes as u64, 0, 0],
        device: ctx.label.clone(),
        limit: Some(crate::error::LaunchLimit::SharedBytes),
        reason: format!(
            "the compiled function `{}` declares {} bytes of static shared memory; with {}              dynamic bytes a threadgroup would need {}, more than the {max_shared} bytes the              device gives one",
            function.name,
            limits.static_shared,
            job.shared_mem_bytes,
            job.shared_mem_bytes as u64 + limits.static_shared as u64
        ),
    }
    .into()
}

/// Pins `function`'s module when `stream` is being captured; refuses the
/// launch (nothing queued, the capture stays valid) when the bounded module
/// cache retired the module before the pin. On a stream that does not
/// capture, records the fence an unload asked of it (see `unload`: such a
/// stream may be another library's, alive for sure only during a call).
#[cold]
#[inline(never)]
fn pin_if_capturing(stream: &CudaStream, function: &CudaFunction) -> Result<()> {
    let capturing = stream.capturing_now()?;
    if !capturing && stream.fences.wanted() {
        stream.record_wanted_fence();
    }
    // kernelkit's own captures hold their functions instead of pinning.
    if capturing && !stream.own_capture() && !function.pin_module() {
        return Err(CallError::Capturing {
            kernel: function.name.to_string(),
            what: "its module was being unloaded (max_loaded_modules) when the launch was \
                   captured"
                .into(),
            advice: "call it again: it is reloaded before the capture only if it is warm; \
                     raise max_loaded_modules so that a captured kernel's module stays loaded",
        }
        .into());
    }
    Ok(())
}

/// [`launch`] for arguments that do not fit its stack arrays.
#[cold]
#[inline(never)]
fn launch_large(
    ctx: &Context,
    job: &LaunchDesc<'_>,
    function: &CudaFunction,
    stream: &Arc<CudaStream>,
    iters: u32,
) -> Result<()> {
    let (mut words, mut offsets, mut params) = (Vec::new(), Vec::new(), Vec::new());
    marshal(job, stream, &mut words, &mut offsets)?;
    point(&mut words, &offsets, &mut params);
    enqueue(ctx, job, function, stream, &mut params, iters)
}

/// Appends to `params` a pointer to each parameter's first word (`words`
/// is written and no longer changes: the pointers all derive from one base;
/// `params` has room for one per offset, as `marshal` filled both). Every
/// offset is inside `words`, so every pointer points into it.
#[inline]
fn point(words: &mut [u64], offsets: &[u32], params: &mut impl Slots<*mut c_void>) {
    let base = words.as_mut_ptr();
    for &o in offsets {
        debug_assert!((o as usize) < words.len());
        let fits = params.put(base.wrapping_add(o as usize).cast::<c_void>());
        debug_assert!(fits, "as many parameter slots as offsets");
    }
}

/// Appends every parameter's value to `words` (each in whole words) and
/// its first word's index to `offsets`; records that the launch uses its
/// inputs on `stream`. False when the slots are full; an error for an
/// input whose layout does not fit the generated parameters.
#[inline]
fn marshal(
    job: &LaunchDesc<'_>,
    stream: &Arc<CudaStream>,
    words: &mut (impl Slots<u64> + std::ops::Deref<Target = [u64]>),
    offsets: &mut impl Slots<u32>,
) -> Result<bool> {
    // Starts the next parameter at the next word.
    macro_rules! param {
        () => {
            if !offsets.put(words.len() as u32) {
                return Ok(false);
            }
        };
    }
    macro_rules! word {
        ($v:expr) => {
            if !words.put($v) {
                return Ok(false);
            }
        };
    }
    for (i, (input, info)) in job.inputs.iter().zip(&job.spec.shape_infos).enumerate() {
        input.mem.used_on(stream);
        param!();
        word!(input.addr);
        // Most bodies read no layout: their launches pass pointers only.
        let ndim = input.shape.len();
        if !job.spec.any_layout || PassMode::of(ndim, input.size()) == PassMode::Scalar {
            continue;
        }
        if (info.shape || info.strides) && ndim > MAX_NDIM {
            return Err(too_many_axes(job, i));
        }
        if info.shape {
            param!();
            // `int32[MAX_NDIM]`, two to a word, zero past the last axis.
            let extent = |k: usize| input.shape.get(k).map_or(0, |&d| d as i32 as u32 as u64);
            for k in (0..MAX_NDIM).step_by(2) {
                word!(extent(k) | extent(k + 1) << 32);
            }
        }
        if info.strides {
            param!();
            for k in 0..MAX_NDIM {
                word!(input.strides.get(k).map_or(0, |&s| s as i64 as u64));
            }
        }
        if info.ndim {
            param!();
            word!(ndim as u32 as u64);
        }
    }
    for output in job.outputs {
        param!();
        word!(output.addr);
    }
    let [gx, gy, gz] = job.grid;
    param!();
    word!(gx as u64 | ((gy as u64) << 32));
    word!(gz as u64);
    param!();
    word!(cuda::partial(job.grid, job.threadgroup) as u64);
    if job.spec.check_bounds {
        // The block of `codegen::bounds` (record and spans).
        param!();
        word!(job.bounds);
    }
    Ok(true)
}

/// The error for input `i`, whose axes do not fit `NAME_shape`/`NAME_strides`.
#[cold]
#[inline(never)]
fn too_many_axes(job: &LaunchDesc<'_>, i: usize) -> crate::Error {
    let spec = job.spec;
    let name = &spec.input_names[i];
    CallError::Unsupported {
        kernel: spec.name.clone(),
        backend: "cuda",
        reason: format!(
            "input `{name}` has {} axes, but `{name}_shape`/`{name}_strides` hold at most \
             {MAX_NDIM}",
            job.inputs[i].shape.len()
        ),
    }
    .into()
}

/// Blocks along one axis: ceil(grid / threadgroup), by a shift for the
/// usual power-of-two threadgroups (a division costs tens of cycles).
#[inline]
fn blocks(grid: u32, threadgroup: u32) -> u32 {
    if threadgroup.is_power_of_two() {
        let shift = threadgroup.trailing_zeros();
        ((grid as u64 + threadgroup as u64 - 1) >> shift) as u32
    } else {
        grid.div_ceil(threadgroup)
    }
}

/// `cuLaunchKernel`, `iters` times, after raising the function's dynamic
/// shared memory limit if this launch needs more than it allows.
fn enqueue(
    ctx: &Context,
    job: &LaunchDesc<'_>,
    function: &CudaFunction,
    stream: &CudaStream,
    params: &mut [*mut c_void],
    iters: u32,
) -> Result<()> {
    let spec = job.spec;
    let [gx, gy, gz] = job.grid;
    let tg = job.threadgroup;
    let blocks = [blocks(gx, tg[0]), blocks(gy, tg[1]), blocks(gz, tg[2])];
    if spec.cuda_group_sync {
        check_unguarded(ctx, job)?;
    }
    let shared = job.shared_mem_bytes;
    if shared > DEFAULT_DYNAMIC_SHARED && !function.dynamic_shared.allows(shared) {
        raise_dynamic_shared(ctx, function, shared)?;
    }
    // Reads only what is live anyway (`job`, `function`): nothing of the
    // message is kept across the launch.
    let what = || launch_context(job, function);
    for _ in 0..iters {
        submit(
            ctx,
            function.raw,
            blocks,
            tg,
            shared,
            stream,
            params,
            "cuLaunchKernel",
            what,
        )?;
    }
    Ok(())
}

/// What a failed launch names: the kernel, its function, grid,
/// threadgroup and shared memory.
#[cold]
#[inline(never)]
fn launch_context(job: &LaunchDesc<'_>, function: &CudaFunction) -> String {
    format!(
        "kernel `{}` (`{}`, grid {:?}, threadgroup {:?}, {} bytes of shared memory): ",
        job.spec.name, function.name, job.grid, job.threadgroup, job.shared_mem_bytes
    )
}

/// `cuLaunchKernel` with `params`: the one place kernel parameters reach
/// the driver. Only this file calls it, with `params` from [`point`] over
/// words that [`marshal`] laid out in the generated signature's order (a
/// variant's function, resolved by its generated name) or that
/// [`launch_gather`] laid out in `kk_gather_N`'s.
/// A failure is `operation`'s error on `ctx`'s device with `what()` in
/// front of the driver's reason; neither is read unless the launch fails.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn submit(
    ctx: &Context,
    function: RawFunction,
    blocks: [u32; 3],
    threads: [u32; 3],
    shared: u32,
    stream: &CudaStream,
    params: &mut [*mut c_void],
    operation: &'static str,
    what: impl FnOnce() -> String,
) -> Result<(), DeviceError> {
    // SAFETY: `params` holds one pointer per kernel parameter, in the
    // signature's order, each to a value of the parameter's size, in words
    // the caller keeps until this returns (see above); the device buffers
    // they address are kept alive by the caller's arrays (and, after
    // return, by stream-ordered freeing).
    unsafe { driver::launch_kernel(function, blocks, threads, shared, stream.raw, params) }
        .map_err(|failed| launch_error(failed, ctx, operation, what))?;
    // Queued: an unload of any module waits for a fence on this stream
    // from now on (see `unload`); one store, the warm path's only cost of
    // safe unloads.
    super::unload::mark_launched(&stream.launched);
    Ok(())
}

/// The error of a launch the driver refused (out of line: the launch
/// path reads nothing of `ctx` for it).
#[cold]
#[inline(never)]
fn launch_error(
    failed: driver::LaunchFailed,
    ctx: &Context,
    operation: &'static str,
    what: impl FnOnce() -> String,
) -> DeviceError {
    failed.into_error(&ctx.label, operation, what())
}

/// The arguments of the built-in strided copy, `kk_gather_N(const T* src,
/// T* dst, kk_layout l, unsigned long long n)` (see `gather`), whose
/// `kk_layout` is `{ long long shape[10]; long long strides[10]; int ndim; }`.
pub(super) struct GatherArgs {
    pub(super) src: DevicePtr,
    pub(super) dst: DevicePtr,
    pub(super) shape: [i64; MAX_NDIM],
    pub(super) strides: [i64; MAX_NDIM],
    pub(super) ndim: i32,
    /// Elements to copy.
    pub(super) n: u64,
}

/// Words of a `kk_layout` by value: 10 + 10 `long long`s and an `int`,
/// padded to the struct's 8-byte alignment.
const LAYOUT_WORDS: usize = 2 * MAX_NDIM + 1;

/// The words of `kk_gather_N`'s four parameters and the index of each
/// one's first word.
fn gather_words(args: &GatherArgs) -> (ArrayVec<u64, { 3 + LAYOUT_WORDS }>, [u32; 4]) {
    let mut words = ArrayVec::new();
    words.push(args.src);
    words.push(args.dst);
    words.extend(args.shape.iter().map(|&d| d as u64));
    words.extend(args.strides.iter().map(|&s| s as u64));
    // The `int` in the low half (little endian), the padding after it 0.
    words.push(args.ndim as u32 as u64);
    words.push(args.n);
    (words, [0, 1, 2, 2 + LAYOUT_WORDS as u32])
}

/// Launches `function`, an entry point `kk_gather_N` of kernelkit's copy
/// kernel (`backend::copy`, resolved by the floors above), on `blocks`
/// blocks of 256 threads.
pub(super) fn launch_gather(
    ctx: &Context,
    function: &CudaFunction,
    stream: &CudaStream,
    blocks: u32,
    args: &GatherArgs,
) -> Result<()> {
    // Its module is the device's like a variant's (it may be unloaded):
    // pinned when captured, as a variant's launch pins its own.
    if stream.may_capture() {
        pin_if_capturing(stream, function)?;
    }
    let function = function.raw;
    let (mut words, offsets) = gather_words(args);
    let mut params = ArrayVec::<*mut c_void, 4>::new();
    point(&mut words, &offsets, &mut params);
    submit(
        ctx,
        function,
        [blocks, 1, 1],
        [256, 1, 1],
        0,
        stream,
        &mut params,
        "cuLaunchKernel (strided copy)",
        String::new,
    )?;
    Ok(())
}

/// Raises `function`'s dynamic shared memory limit to `shared` bytes (see
/// [`RaisedLimit`](crate::sync::RaisedLimit): one raise at a time per
/// `CUfunction`, published only once the driver has it).
#[cold]
#[inline(never)]
fn raise_dynamic_shared(ctx: &Context, function: &CudaFunction, shared: u32) -> Result<()> {
    // The call checked `shared` against the device's opt-in maximum.
    function.dynamic_shared.raise(shared, |bytes| {
        driver::set_max_dynamic_shared(function.raw, bytes, &ctx.label)?;
        Ok(())
    })
}

/// A body that synchronizes its threadgroup has no grid guard (see
/// `codegen::cuda`): every thread of every block runs it, and sees 32-bit
/// positions. Refuses a launch whose last block along an axis reaches past
/// 2^32 threads, where positions would wrap to the start of the grid and
/// repeat.
#[cold]
#[inline(never)]
fn check_unguarded(ctx: &Context, job: &LaunchDesc<'_>) -> Result<()> {
    for axis in 0..3 {
        let tg = job.threadgroup[axis];
        let padded = blocks(job.grid[axis], tg) as u64 * tg as u64;
        if padded > 1 << 32 {
            return Err(CallError::Dims {
                kernel: job.spec.name.clone(),
                what: "grid",
                dims: job.grid.map(u64::from),
                device: ctx.label.clone(),
                limit: None,
                reason: format!(
                    "the body uses CUDA's own block or warp collectives (`{}`), so every \
                     thread of the last threadgroup runs it; with \
                     threadgroup {:?} the blocks along {} hold {padded} threads, more than the \
                     2^32 that 32-bit positions can number (they would wrap and repeat): use a \
                     threadgroup that divides the grid, or a smaller grid",
                    job.spec.group_function.unwrap_or("__syncthreads"),
                    job.threadgroup,
                    ["x", "y", "z"][axis],
                ),
            }
            .into());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{blocks, gather_words, GatherArgs, LAYOUT_WORDS, MAX_NDIM};

    /// `kk_layout` as C lays it out.
    #[repr(C)]
    struct KkLayout {
        shape: [i64; MAX_NDIM],
        strides: [i64; MAX_NDIM],
        ndim: i32,
    }

    /// The gather kernel's parameters as words: the two pointers, the
    /// layout struct by value (each field at its C offset, the struct's
    /// whole size), the count.
    #[test]
    fn gather_words_follow_the_c_layout() {
        use std::mem::{offset_of, size_of};
        assert_eq!(size_of::<KkLayout>(), LAYOUT_WORDS * 8);
        let args = GatherArgs {
            src: 0x1000,
            dst: 0x2000,
            shape: std::array::from_fn(|i| 100 + i as i64),
            strides: std::array::from_fn(|i| -(i as i64) - 1),
            ndim: 7,
            n: 99,
        };
        let (words, offsets) = gather_words(&args);
        assert_eq!(words.len(), 3 + LAYOUT_WORDS);
        let [src, dst, layout, n] = offsets.map(|o| o as usize);
        assert_eq!((words[src], words[dst], words[n]), (0x1000, 0x2000, 99));
        assert_eq!(n - layout, LAYOUT_WORDS, "the layout is passed whole");
        let at = |offset: usize| words[layout + offset / 8];
        for i in 0..MAX_NDIM {
            assert_eq!(at(offset_of!(KkLayout, shape) + 8 * i), 100 + i as u64);
            assert_eq!(
                at(offset_of!(KkLayout, strides) + 8 * i) as i64,
                -(i as i64) - 1
            );
        }
        assert_eq!(at(offset_of!(KkLayout, ndim)), 7);
    }

    #[test]
    fn blocks_round_up_with_or_without_a_division() {
        for tg in [1u32, 2, 3, 32, 96, 256, 1000, 1024] {
            for grid in [
                1u32,
                2,
                31,
                255,
                256,
                257,
                1023,
                1 << 20,
                u32::MAX - 1,
                u32::MAX,
            ] {
                assert_eq!(
                    blocks(grid, tg),
                    grid.div_ceil(tg),
                    "grid {grid}, threadgroup {tg}"
                );
            }
        }
    }
}
