//! candle 0.11: kernelkit kernels on candle [`Tensor`]s, without copies.
//!
//! [`launch`] borrows each input tensor's storage for the call (candle's
//! read lock, held until the kernel is queued) and passes it as a view with
//! the tensor's own layout — strides and start offset — so a transposed or
//! sliced tensor is read in place (no `.contiguous()`, no `to_vec`). The
//! outputs are new candle tensors whose storage the kernel wrote directly.
//! Any number of inputs and outputs (candle's `CustomOp3` stops at three
//! inputs and one output).
//!
//! - candle's CPU tensors (`cpu`): the storage's vectors as host views.
//! - candle's CUDA tensors (`cuda`, built with
//!   `RUSTFLAGS="--cfg kernelkit_candle_cuda"` and the `candle` and `cuda`
//!   features: candle-core's own `cuda` feature compiles candle's kernels
//!   with `nvcc`, so it is not a cargo feature here, and `--all-features`
//!   builds without nvcc; `scripts/candle-cuda.sh` builds it). candle 0.11's
//!   CUDA storage is cudarc 0.19 slices on the device's one stream: the
//!   inputs are read and the outputs written through `interop::cudarc`
//!   (cudarc's `device_ptr` guards held until the launch is queued), and
//!   the kernel runs on candle's stream, ordered with candle's own kernels
//!   without a synchronize. Without that build, a CUDA tensor is an error
//!   that says so.

use candle_core::{Layout, Storage, Tensor};

use crate::dtype::DType;
use crate::kernel::call::Call;
use crate::kernel::Kernel;

/// Runs `$body` with `$v` bound to the payload of a candle storage enum
/// (`CpuStorage`: vectors; `CudaStorageSlice`: cudarc slices), for the
/// dtypes kernelkit has; `None` for the others. One list for both backends,
/// so a dtype added to one is added to the other.
macro_rules! each_dtype {
    ($kind:ident, $storage:expr, $v:ident => $body:expr) => {
        match $storage {
            $kind::U8($v) => Some($body),
            $kind::U32($v) => Some($body),
            $kind::I16($v) => Some($body),
            $kind::I32($v) => Some($body),
            $kind::I64($v) => Some($body),
            $kind::BF16($v) => Some($body),
            $kind::F16($v) => Some($body),
            $kind::F32($v) => Some($body),
            $kind::F64($v) => Some($body),
            _ => None,
        }
    };
}

mod cpu;
#[cfg(all(kernelkit_candle_cuda, feature = "cuda"))]
mod cuda;

/// Why a call on candle tensors failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CandleError {
    /// kernelkit refused or failed the call.
    #[error(transparent)]
    Kernel(Box<crate::Error>),
    /// candle refused a tensor or an output.
    #[error(transparent)]
    Candle(Box<candle_core::Error>),
    /// A tensor kernelkit cannot take (its device or dtype).
    #[error("kernel `{kernel}`: {what}")]
    Unsupported {
        /// The kernel's name.
        kernel: String,
        /// What cannot be done.
        what: String,
    },
}

impl From<crate::Error> for CandleError {
    fn from(e: crate::Error) -> Self {
        CandleError::Kernel(Box::new(e))
    }
}

impl From<candle_core::Error> for CandleError {
    fn from(e: candle_core::Error) -> Self {
        CandleError::Candle(Box::new(e))
    }
}

/// The kernelkit dtype of a candle dtype, if kernelkit has it.
pub fn dtype_of(dtype: candle_core::DType) -> Option<DType> {
    use candle_core::DType as C;
    Some(match dtype {
        C::U8 => DType::U8,
        C::U32 => DType::U32,
        C::I16 => DType::I16,
        C::I32 => DType::I32,
        C::I64 => DType::I64,
        C::BF16 => DType::BF16,
        C::F16 => DType::F16,
        C::F32 => DType::F32,
        C::F64 => DType::F64,
        _ => return None,
    })
}

/// Runs `kernel` on candle tensors: `inputs` in the kernel's input order,
/// one `(shape, dtype)` per output, and `configure` to finish the call
/// (grid, threadgroup, template arguments; inputs and outputs are set).
/// Returns the outputs as candle tensors (row-major, on the inputs'
/// device), written in place by the kernel. On CUDA the kernel runs on
/// candle's stream (set after `configure`) and the call returns once it is
/// queued; the outputs are not cleared first (as candle's own kernels'
/// are not): the kernel writes every element, or `configure` asks for
/// `init_value`. All inputs are on one device; with no input, the outputs
/// are on the CPU.
///
/// ```no_run
/// # fn main() -> Result<(), kernelkit::interop::candle::CandleError> {
/// use candle_core::{DType, Device, Tensor};
/// use kernelkit::Kernel;
///
/// let silu_mul = Kernel::builder("silu_mul")
///     .inputs(["a", "b"])
///     .outputs(["y"])
///     .source("uint i = thread_position_in_grid.x; float x = a[i];\n\
///              y[i] = x / (1.0f + metal::exp(-x)) * b[i];")
///     .build()?;
/// let a = Tensor::randn(0f32, 1.0, (4, 256), &Device::Cpu)?;
/// let b = Tensor::randn(0f32, 1.0, (4, 256), &Device::Cpu)?;
/// let y = kernelkit::interop::candle::launch(&silu_mul, &[&a, &b], &[(&[4, 256], DType::F32)], |c| {
///     c.grid([1024, 1, 1])
/// })?;
/// # Ok(()) }
/// ```
pub fn launch(
    kernel: &Kernel,
    inputs: &[&Tensor],
    outputs: &[(&[usize], candle_core::DType)],
    configure: impl for<'c> FnOnce(Call<'c>) -> Call<'c>,
) -> Result<Vec<Tensor>, CandleError> {
    let job = Launch {
        kernel,
        outputs,
        configure,
    };
    // candle's read locks, held until the kernel is queued.
    let guards: Vec<_> = inputs.iter().map(|t| t.storage_and_layout()).collect();
    let borrowed: Vec<(&Storage, &Layout)> = guards.iter().map(|(s, l)| (&**s, *l)).collect();
    match borrowed.first().map(|(s, _)| *s) {
        None | Some(Storage::Cpu(_)) => cpu::launch(job, &borrowed),
        #[cfg(all(kernelkit_candle_cuda, feature = "cuda"))]
        Some(Storage::Cuda(_)) => cuda::launch(job, &borrowed),
        Some(other) => Err(unsupported(
            kernel,
            format!(
                "input 0 is on candle's {:?}; kernelkit runs on candle's CPU tensors, and on its \
                 CUDA tensors when built with `--cfg kernelkit_candle_cuda` and the `cuda` \
                 feature (scripts/candle-cuda.sh)",
                other.device().location()
            ),
        )),
    }
}

/// One [`launch`]: the kernel, the outputs wanted, the caller's settings.
struct Launch<'a, F> {
    kernel: &'a Kernel,
    outputs: &'a [(&'a [usize], candle_core::DType)],
    configure: F,
}

/// A [`CandleError::Unsupported`] naming the kernel.
fn unsupported(kernel: &Kernel, what: String) -> CandleError {
    CandleError::Unsupported {
        kernel: kernel.name().to_string(),
        what,
    }
}

/// A layout's strides as kernelkit's (signed) strides.
fn strides_of(layout: &Layout) -> crate::Result<Vec<isize>> {
    layout
        .stride()
        .iter()
        .map(|&st| isize::try_from(st).ok())
        .collect::<Option<Vec<isize>>>()
        .ok_or_else(|| {
            crate::error::ArrayError::Foreign(format!(
                "candle strides {:?} overflow",
                layout.stride()
            ))
            .into()
        })
}
