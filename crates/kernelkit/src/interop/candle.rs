//! candle 0.11: kernelkit kernels on candle [`Tensor`]s, without copies.
//!
//! [`launch`] borrows each input tensor's storage for the call (candle's
//! read lock, held until the kernel has run) and passes it as a view with
//! the tensor's own layout — strides and start offset — so a transposed or
//! sliced tensor is read in place (no `.contiguous()`, no `to_vec`). The
//! outputs are new candle tensors whose storage the kernel wrote directly.
//! Any number of inputs and outputs (candle's `CustomOp3` stops at three
//! inputs and one output).
//!
//! candle's CPU tensors only: candle's CUDA backend needs candle-core's
//! own `cuda` feature, which compiles candle's kernels with `nvcc` when it
//! is built. A CUDA tensor is refused with an error that says so; with the
//! `cuda` feature, the same kernels run on cudarc memory through
//! [`super::cudarc`] (candle 0.11's CUDA storage is cudarc 0.19 slices).

use candle_core::backend::BackendStorage;
use candle_core::op::BackpropOp;
use candle_core::{CpuStorage, Layout, Storage, Tensor};

use crate::array::Array;
use crate::device::Device;
use crate::dtype::DType;
use crate::kernel::call::Call;
use crate::kernel::Kernel;

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
/// device), written in place by the kernel.
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
    let unsupported = |what: String| CandleError::Unsupported {
        kernel: kernel.name().to_string(),
        what,
    };
    // candle's read locks, held until the kernel has run.
    let borrowed: Vec<_> = inputs.iter().map(|t| t.storage_and_layout()).collect();
    for (i, (storage, _)) in borrowed.iter().enumerate() {
        match &**storage {
            Storage::Cpu(_) => {}
            other => {
                return Err(unsupported(format!(
                    "input {i} is on candle's {:?}; kernelkit runs on candle's CPU tensors (a \
                     CUDA tensor needs candle-core's `cuda` feature, and its slices through \
                     `interop::cudarc`)",
                    other.device().location()
                )))
            }
        }
    }
    let mut out_storage = Vec::with_capacity(outputs.len());
    for (i, &(shape, dtype)) in outputs.iter().enumerate() {
        let n: usize = shape.iter().product();
        out_storage.push(zeros(dtype, n).ok_or_else(|| {
            unsupported(format!(
                "output {i} has dtype {dtype:?}, which kernelkit lacks"
            ))
        })?);
    }
    let device = Device::cpu();
    super::scope(|s| -> Result<(), CandleError> {
        let mut arrays: Vec<Array> = Vec::with_capacity(inputs.len() + outputs.len());
        for (i, (storage, layout)) in borrowed.iter().enumerate() {
            let Storage::Cpu(cpu) = &**storage else {
                unreachable!("checked above");
            };
            arrays.push(view(s, &device, cpu, layout).ok_or_else(|| {
                unsupported(format!(
                    "input {i} has dtype {:?}, which kernelkit lacks",
                    cpu.dtype()
                ))
            })??);
        }
        for (storage, &(shape, _)) in out_storage.iter_mut().zip(outputs) {
            arrays.push(view_mut(s, &device, storage, shape)?);
        }
        let (ins, outs) = arrays.split_at(inputs.len());
        let mut call = kernel.call(ins.iter());
        for out in outs {
            call = call.output_into(out);
        }
        configure(call).launch()?;
        Ok(())
    })?;
    drop(borrowed);
    Ok(out_storage
        .into_iter()
        .zip(outputs)
        .map(|(storage, &(shape, _))| {
            Tensor::from_storage(Storage::Cpu(storage), shape, BackpropOp::none(), false)
        })
        .collect())
}

/// Zeros of candle `dtype`, `n` elements, if kernelkit has the dtype.
fn zeros(dtype: candle_core::DType, n: usize) -> Option<CpuStorage> {
    use candle_core::DType as C;
    use half::{bf16, f16};
    Some(match dtype {
        C::U8 => CpuStorage::U8(vec![0; n]),
        C::U32 => CpuStorage::U32(vec![0; n]),
        C::I16 => CpuStorage::I16(vec![0; n]),
        C::I32 => CpuStorage::I32(vec![0; n]),
        C::I64 => CpuStorage::I64(vec![0; n]),
        C::BF16 => CpuStorage::BF16(vec![bf16::ZERO; n]),
        C::F16 => CpuStorage::F16(vec![f16::ZERO; n]),
        C::F32 => CpuStorage::F32(vec![0.0; n]),
        C::F64 => CpuStorage::F64(vec![0.0; n]),
        _ => return None,
    })
}

/// Runs `$body` with `$v` bound to the storage's vector (or slice), for the
/// dtypes kernelkit has; `None` for the others.
macro_rules! each_dtype {
    ($storage:expr, $v:ident => $body:expr) => {
        match $storage {
            CpuStorage::U8($v) => Some($body),
            CpuStorage::U32($v) => Some($body),
            CpuStorage::I16($v) => Some($body),
            CpuStorage::I32($v) => Some($body),
            CpuStorage::I64($v) => Some($body),
            CpuStorage::BF16($v) => Some($body),
            CpuStorage::F16($v) => Some($body),
            CpuStorage::F32($v) => Some($body),
            CpuStorage::F64($v) => Some($body),
            _ => None,
        }
    };
}

/// A read-only view of a CPU tensor's storage with its own layout.
fn view<'scope, 'env>(
    s: &'scope super::Scope<'scope, 'env>,
    device: &Device,
    storage: &'env CpuStorage,
    layout: &Layout,
) -> Option<crate::Result<Array>> {
    let strides: Option<Vec<isize>> = layout
        .stride()
        .iter()
        .map(|&st| isize::try_from(st).ok())
        .collect();
    let Some(strides) = strides else {
        return Some(Err(crate::error::ArrayError::Foreign(format!(
            "candle strides {:?} overflow",
            layout.stride()
        ))
        .into()));
    };
    let (dims, offset) = (layout.dims(), layout.start_offset());
    each_dtype!(storage, v => s.strided(device, v.as_slice(), dims, &strides, offset))
}

/// A writable row-major view of an output's storage.
fn view_mut<'scope, 'env>(
    s: &'scope super::Scope<'scope, 'env>,
    device: &Device,
    storage: &'env mut CpuStorage,
    shape: &[usize],
) -> crate::Result<Array> {
    let shape = shape.to_vec();
    each_dtype!(storage, v => s.slice_mut(device, v.as_mut_slice(), shape.iter().copied()))
        .expect("outputs are made of the dtypes kernelkit has")
}
