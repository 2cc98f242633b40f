//! The strided → contiguous copy: launches the entry point of
//! kernelkit's copy kernel (`backend::copy`) for the element size, which
//! the floors above resolved like a variant's function (memory, the
//! artifact tiers, bundles, the JIT policy), and which copies an array of
//! any strides row-major into a new buffer. Its parameters are marshalled
//! by `launch` ([`GatherArgs`]), the one place that builds kernel
//! parameter lists.

use std::sync::Arc;

use smallvec::SmallVec;

use super::cuda_stream::CudaStream;
use super::launch::{launch_gather, GatherArgs};
use super::CudaFunction;
use crate::backend::{ArgRef, Memory};
use crate::codegen::cuda::MAX_NDIM;
use crate::error::{DeviceError, Result};

/// Copies the elements of `src` (any strides) row-major into `dst` with
/// `function`, the copy kernel's entry point for `src`'s element size.
pub(super) fn run(
    stream: &Arc<CudaStream>,
    function: &CudaFunction,
    src: &ArgRef<'_>,
    dst: &Memory,
) -> Result<()> {
    let label = &stream.ctx.label;
    // Drop unit axes: they never move the offset.
    let axes: SmallVec<[(usize, isize); 8]> = src
        .shape
        .iter()
        .zip(src.strides)
        .filter(|(&d, _)| d != 1)
        .map(|(&d, &s)| (d, s))
        .collect();
    if axes.len() > MAX_NDIM {
        return Err(DeviceError::Driver {
            device: label.clone(),
            operation: "strided copy",
            reason: format!(
                "arrays with more than {MAX_NDIM} non-unit axes cannot be made contiguous on \
                     the GPU (shape {:?})",
                src.shape
            ),
        }
        .into());
    }
    let mut args = GatherArgs {
        src: src.addr,
        dst: dst.addr,
        shape: [1; MAX_NDIM],
        strides: [0; MAX_NDIM],
        ndim: axes.len() as i32,
        n: src.size() as u64,
    };
    for (i, (d, s)) in axes.iter().enumerate() {
        args.shape[i] = *d as i64;
        args.strides[i] = *s as i64;
    }
    if args.n == 0 {
        return Ok(());
    }
    stream.ctx.bind()?;
    src.mem.used_on(stream);
    // The view lies inside the source buffer and `dst` holds `n`
    // elements.
    let blocks = args.n.div_ceil(256).min(65_535) as u32;
    launch_gather(&stream.ctx, function, stream, blocks, &args)
}
