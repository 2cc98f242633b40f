//! Marshals a launch's arguments on the stack and calls `cuLaunchKernel`.
//!
//! The parameter order is the generator's (`codegen::cuda`): per input its
//! pointer (a 0-d input's `kk_scalar<T>` is a pointer too), then
//! `NAME_shape` (`int32[10]`), `NAME_strides` (`int64[10]`) and `NAME_ndim`
//! (`int`) where the body uses them; then the outputs; then `kk_grid`. Each
//! value sits in whole 8-byte words of one stack buffer; the parameter array
//! points into it. Nothing on this path allocates on the heap for kernels
//! of up to 32 parameters and 1 KB of argument data, and nothing looks a
//! function up: the variant holds its resolved `CUfunction`.
//!
//! The grid is counted in threads (Metal's and MLX's convention); blocks
//! per axis = ceil(grid / threadgroup). Threads past the grid are stopped
//! by the generated guard (see `codegen::cuda`).

use std::ffi::c_void;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use cudarc::driver::sys;
use smallvec::SmallVec;

use super::load::CudaFunction;
use super::memory::{device_mem, CudaStream};
use super::{check, driver_error, Context};
use crate::backend::LaunchJob;
use crate::codegen::cuda::MAX_NDIM;
use crate::error::{CallError, Result};
use crate::kernel::variant::PassMode;

/// Dynamic shared memory a block may use without raising the function's
/// limit.
const DEFAULT_DYNAMIC_SHARED: u32 = 48 * 1024;

/// Launches `job` `iters` times on `stream` (arguments marshalled once).
pub(super) fn launch(
    ctx: &Context,
    job: &LaunchJob<'_>,
    stream: &Arc<CudaStream>,
    iters: u32,
) -> Result<()> {
    let function = job
        .function
        .downcast_ref::<CudaFunction>()
        .expect("CUDA launches get CUDA functions");
    ctx.bind()?;
    let spec = job.spec;

    let mut words: SmallVec<[u64; 128]> = SmallVec::new();
    let mut offsets: SmallVec<[u32; 32]> = SmallVec::new();
    for (i, (input, info)) in job.inputs.iter().zip(&spec.shape_infos).enumerate() {
        if let Some(mem) = device_mem(&input.buffer) {
            mem.used_on(stream);
        }
        offsets.push(words.len() as u32);
        words.push(input.data_addr());
        if PassMode::of(input.ndim(), input.size()) == PassMode::Scalar {
            continue;
        }
        if (info.shape || info.strides) && input.ndim() > MAX_NDIM {
            let name = &spec.input_names[i];
            return Err(CallError::Unsupported {
                kernel: spec.name.clone(),
                backend: "cuda",
                reason: format!(
                    "input `{name}` has {} axes, but `{name}_shape`/`{name}_strides` hold at most \
                     {MAX_NDIM}",
                    input.ndim()
                ),
            }
            .into());
        }
        if info.shape {
            offsets.push(words.len() as u32);
            let mut shape = [0i32; MAX_NDIM];
            for (slot, &d) in shape.iter_mut().zip(input.shape.iter()) {
                *slot = d as i32;
            }
            for pair in shape.chunks_exact(2) {
                words.push(pair[0] as u32 as u64 | ((pair[1] as u32 as u64) << 32));
            }
        }
        if info.strides {
            offsets.push(words.len() as u32);
            let mut strides = [0i64; MAX_NDIM];
            for (slot, &s) in strides.iter_mut().zip(input.strides.iter()) {
                *slot = s as i64;
            }
            words.extend(strides.iter().map(|&s| s as u64));
        }
        if info.ndim {
            offsets.push(words.len() as u32);
            words.push(input.ndim() as u32 as u64);
        }
    }
    for output in job.outputs {
        offsets.push(words.len() as u32);
        words.push(output.data_addr());
    }
    let [gx, gy, gz] = job.grid;
    offsets.push(words.len() as u32);
    words.push(gx as u64 | ((gy as u64) << 32));
    words.push(gz as u64);

    let base = words.as_mut_ptr();
    let mut params: SmallVec<[*mut c_void; 32]> = offsets
        .iter()
        // SAFETY: every offset is inside `words`, which no longer grows.
        .map(|&o| unsafe { base.add(o as usize) }.cast::<c_void>())
        .collect();

    let tg = job.threadgroup;
    let blocks = [gx.div_ceil(tg[0]), gy.div_ceil(tg[1]), gz.div_ceil(tg[2])];
    let shared = job.shared_mem_bytes;
    if shared > DEFAULT_DYNAMIC_SHARED
        && shared > function.max_dynamic_shared.load(Ordering::Acquire)
    {
        // SAFETY: raises the function's dynamic shared memory limit; the
        // call checked `shared` against the device's opt-in maximum.
        check(
            unsafe {
                sys::cuFuncSetAttribute(
                    function.raw,
                    sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    shared as i32,
                )
            },
            &ctx.label,
            "cuFuncSetAttribute",
        )?;
        function
            .max_dynamic_shared
            .fetch_max(shared, Ordering::AcqRel);
    }
    for _ in 0..iters {
        // SAFETY: `params` holds one pointer per kernel parameter, in the
        // generated signature's order, each to a value of the parameter's
        // size; the buffers they address are kept alive by the caller's
        // arrays (and, after return, by stream-ordered freeing).
        let r = unsafe {
            sys::cuLaunchKernel(
                function.raw,
                blocks[0],
                blocks[1],
                blocks[2],
                tg[0],
                tg[1],
                tg[2],
                shared,
                stream.raw,
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        };
        if r != sys::CUresult::CUDA_SUCCESS {
            return Err(driver_error(
                r,
                &ctx.label,
                "cuLaunchKernel",
                format!(
                    "kernel `{}` (`{}`, grid {:?}, threadgroup {:?}, {} bytes of shared memory): ",
                    spec.name,
                    job.variant.name(),
                    job.grid,
                    tg,
                    shared
                ),
            )
            .into());
        }
    }
    Ok(())
}
