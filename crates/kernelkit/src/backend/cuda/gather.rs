//! The built-in strided → contiguous copy: a kernel per element size,
//! compiled once per device (the first time a strided input needs it),
//! that copies an array of any strides row-major into a new buffer. Its
//! parameters are marshalled by `launch` ([`GatherArgs`]), the one place
//! that builds kernel parameter lists.

use std::sync::Arc;

use smallvec::SmallVec;

use super::compile::Nvrtc;
use super::cuda_stream::CudaStream;
use super::driver::RawFunction;
use super::launch::{launch_gather, GatherArgs};
use super::load::{resolve, CudaModule};
use super::Context;
use crate::backend::{ArgRef, Memory, Module};
use crate::codegen::cuda::MAX_NDIM;
use crate::error::{DeviceError, Result};

/// The source of the built-in strided-copy kernels.
pub(super) const GATHER_SOURCE: &str = r#"
struct kk_layout { long long shape[10]; long long strides[10]; int ndim; };
template <typename T>
__device__ void kk_gather(const T* src, T* dst, const kk_layout& l, unsigned long long n) {
  unsigned long long step = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
    long long rem = (long long)i, loc = 0;
    for (int d = l.ndim - 1; d >= 0; --d) {
      loc += (rem % l.shape[d]) * l.strides[d];
      rem /= l.shape[d];
    }
    dst[i] = src[loc];
  }
}
extern "C" __global__ void kk_gather_1(const unsigned char* s, unsigned char* d, kk_layout l, unsigned long long n) { kk_gather(s, d, l, n); }
extern "C" __global__ void kk_gather_2(const unsigned short* s, unsigned short* d, kk_layout l, unsigned long long n) { kk_gather(s, d, l, n); }
extern "C" __global__ void kk_gather_4(const unsigned int* s, unsigned int* d, kk_layout l, unsigned long long n) { kk_gather(s, d, l, n); }
extern "C" __global__ void kk_gather_8(const unsigned long long* s, unsigned long long* d, kk_layout l, unsigned long long n) { kk_gather(s, d, l, n); }
"#;

/// The built-in strided → contiguous copy kernels of one device.
pub(super) struct Gather {
    /// `kk_gather_1`, `_2`, `_4`, `_8`.
    functions: [RawFunction; 4],
    /// Keeps the functions loaded.
    _module: Module,
}

impl Gather {
    /// Compiles [`GATHER_SOURCE`] and resolves its kernels.
    pub(super) fn build(ctx: &Arc<Context>, nvrtc: &Nvrtc) -> Result<Gather, String> {
        let cubin = nvrtc
            .compile_source(GATHER_SOURCE)
            .map_err(|e| e.to_string())?;
        let module =
            super::load::load(ctx, "kernelkit", "kk_gather", &cubin).map_err(|e| e.to_string())?;
        let cuda = module
            .downcast_ref::<CudaModule>()
            .ok_or_else(|| "the gather module is not a CUDA module".to_string())?;
        let resolve = |size: usize| resolve(ctx, cuda, &format!("kk_gather_{size}")).map(|r| r.0);
        let functions = [resolve(1)?, resolve(2)?, resolve(4)?, resolve(8)?];
        Ok(Gather {
            functions,
            _module: module,
        })
    }

    /// Copies the elements of `src` (any strides) row-major into `dst`.
    pub(super) fn run(
        &self,
        stream: &Arc<CudaStream>,
        src: &ArgRef<'_>,
        dst: &Memory,
    ) -> Result<()> {
        let label = &stream.ctx.label;
        let index = match src.dtype.size() {
            1 => 0,
            2 => 1,
            4 => 2,
            _ => 3,
        };
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
        launch_gather(&stream.ctx, self.functions[index], stream, blocks, &args)
    }
}
