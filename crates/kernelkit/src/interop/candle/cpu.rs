//! candle's CPU tensors: their vectors borrowed as host views.

use candle_core::backend::BackendStorage;
use candle_core::{CpuStorage, Layout, Storage, Tensor};

use super::{strides_of, CandleError, Launch};
use crate::array::Array;
use crate::device::Device;
use crate::kernel::call::Call;

/// [`super::launch`] on CPU tensors (`borrowed`: each input's storage,
/// read-locked, and layout).
pub(super) fn launch<F: for<'c> FnOnce(Call<'c>) -> Call<'c>>(
    job: Launch<'_, F>,
    borrowed: &[(&Storage, &Layout)],
) -> Result<Vec<Tensor>, CandleError> {
    let Launch {
        kernel,
        outputs,
        configure,
    } = job;
    let unsupported = |what: String| super::unsupported(kernel, what);
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
    super::super::scope(|s| -> Result<(), CandleError> {
        let mut arrays: Vec<Array> = Vec::with_capacity(borrowed.len() + out_storage.len());
        for (i, &(storage, layout)) in borrowed.iter().enumerate() {
            let Storage::Cpu(cpu) = storage else {
                return Err(unsupported(format!("input {i} is not on candle's CPU")));
            };
            let strides = strides_of(layout)?;
            let (dims, offset) = (layout.dims(), layout.start_offset());
            let view =
                each_dtype!(CpuStorage, cpu, v => s.strided(&device, v.as_slice(), dims, &strides, offset))
                    .ok_or_else(|| {
                    unsupported(format!(
                        "input {i} has dtype {:?}, which kernelkit lacks",
                        cpu.dtype()
                    ))
                })??;
            arrays.push(view);
        }
        for (storage, &(shape, _)) in out_storage.iter_mut().zip(outputs) {
            let shape = shape.iter().copied();
            arrays.push(
                each_dtype!(CpuStorage, storage, v => s.slice_mut(&device, v.as_mut_slice(), shape))
                    .expect("outputs are made of the dtypes kernelkit has")?,
            );
        }
        let (ins, outs) = arrays.split_at(borrowed.len());
        let mut call = kernel.call(ins.iter());
        for out in outs {
            call = call.output_into(out);
        }
        configure(call).launch()?;
        Ok(())
    })?;
    Ok(out_storage
        .into_iter()
        .zip(outputs)
        .map(|(storage, &(shape, _))| {
            Tensor::from_storage(
                Storage::Cpu(storage),
                shape,
                candle_core::op::BackpropOp::none(),
                false,
            )
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
