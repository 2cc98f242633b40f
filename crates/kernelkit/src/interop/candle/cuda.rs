//! candle's CUDA tensors: their cudarc slices borrowed through
//! `interop::cudarc`, the kernel queued on candle's own stream.
//!
//! Every array of the call (the inputs' views, the outputs) is produced by
//! one kernelkit stream over candle's cudarc stream, kept per candle
//! device: the call runs on it, so nothing waits (no synchronize, no event
//! between streams), and the call returns once the kernel is queued, as
//! candle's own ops do. cudarc's `device_ptr` guards are held around the
//! launch, so where candle tracks events they record the kernel's reads
//! and writes.

use std::sync::Mutex;

use candle_core::backend::{BackendDevice, BackendStorage};
use candle_core::cuda_backend::{CudaDevice, CudaStorage, CudaStorageSlice, DeviceId};
use candle_core::op::BackpropOp;
use candle_core::{DeviceLocation, Layout, Storage, Tensor};

use super::{strides_of, CandleError, Launch};
use crate::array::Array;
use crate::device::{Device, Stream};
use crate::kernel::call::Call;

/// [`super::launch`] on CUDA tensors of one candle device (`borrowed`:
/// each input's storage, read-locked, and layout; at least one).
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
    let Some((Storage::Cuda(first), _)) = borrowed.first() else {
        return Err(unsupported("input 0 is not a candle CUDA tensor".into()));
    };
    let dev = first.device.clone();
    for (i, (storage, _)) in borrowed.iter().enumerate() {
        if !matches!(storage, Storage::Cuda(c) if c.device.same_device(&dev)) {
            return Err(unsupported(format!(
                "input {i} is on candle's {:?}, input 0 on {:?} ({:?}): one device per call",
                storage.device().location(),
                dev.location(),
                dev.id()
            )));
        }
    }
    let stream = stream_of(&dev)?;
    let mut out_slices = Vec::with_capacity(outputs.len());
    for (i, &(shape, dtype)) in outputs.iter().enumerate() {
        let n: usize = shape.iter().product();
        out_slices.push(uninit(&dev, dtype, n).ok_or_else(|| {
            unsupported(format!(
                "output {i} has dtype {dtype:?}, which kernelkit lacks"
            ))
        })??);
    }
    super::super::scope(|s| -> Result<(), CandleError> {
        let mut arrays: Vec<Array> = Vec::with_capacity(borrowed.len() + out_slices.len());
        for (i, &(storage, layout)) in borrowed.iter().enumerate() {
            let Storage::Cuda(c) = storage else {
                return Err(unsupported(format!(
                    "input {i} is not a candle CUDA tensor"
                )));
            };
            let strides = strides_of(layout)?;
            let (dims, offset) = (layout.dims(), layout.start_offset());
            let view =
                each_dtype!(CudaStorageSlice, &c.slice, v => s.cuda_strided(&stream, v, dims, &strides, offset))
                    .ok_or_else(|| {
                    unsupported(format!(
                        "input {i} has dtype {:?}, which kernelkit lacks",
                        c.dtype()
                    ))
                })??;
            arrays.push(view);
        }
        for (slice, &(shape, _)) in out_slices.iter_mut().zip(outputs) {
            let shape = shape.iter().copied();
            let view =
                each_dtype!(CudaStorageSlice, slice, v => s.cuda_slice_mut_on(&stream, v, shape))
                    .ok_or_else(|| unsupported("an output of a dtype kernelkit lacks".into()))??;
            arrays.push(view);
        }
        let (ins, outs) = arrays.split_at(borrowed.len());
        let mut call = kernel_call(kernel, ins);
        for out in outs {
            call = call.output_into(out);
        }
        // candle's stream, whatever `configure` said: every array is
        // produced there.
        configure(call).on(&stream).launch()?;
        Ok(())
    })?;
    Ok(out_slices
        .into_iter()
        .zip(outputs)
        .map(|(slice, &(shape, _))| {
            let storage = CudaStorage {
                slice,
                device: dev.clone(),
            };
            Tensor::from_storage(Storage::Cuda(storage), shape, BackpropOp::none(), false)
        })
        .collect())
}

/// The call on `inputs` (a function, so the call's lifetime is the
/// arrays').
fn kernel_call<'a>(kernel: &'a crate::kernel::Kernel, inputs: &'a [Array]) -> Call<'a> {
    kernel.call(inputs.iter())
}

/// An output's memory: `n` elements of `dtype` (at least one: cudarc
/// allocates no empty slice) on candle's stream, not cleared; `None` for
/// a dtype kernelkit lacks.
fn uninit(
    dev: &CudaDevice,
    dtype: candle_core::DType,
    n: usize,
) -> Option<candle_core::Result<CudaStorageSlice>> {
    use candle_core::DType as C;
    let n = n.max(1);
    // SAFETY (each `alloc`): the memory is device memory that no host code
    // reads as values before a kernel or a copy fills it, and every bit
    // pattern is a valid value of these element types, so what the kernel
    // leaves unwritten reads as some number, as candle's own `alloc`
    // outputs do.
    Some(match dtype {
        C::U8 => unsafe { dev.alloc::<u8>(n) }.map(CudaStorageSlice::U8),
        C::U32 => unsafe { dev.alloc::<u32>(n) }.map(CudaStorageSlice::U32),
        C::I16 => unsafe { dev.alloc::<i16>(n) }.map(CudaStorageSlice::I16),
        C::I32 => unsafe { dev.alloc::<i32>(n) }.map(CudaStorageSlice::I32),
        C::I64 => unsafe { dev.alloc::<i64>(n) }.map(CudaStorageSlice::I64),
        C::BF16 => unsafe { dev.alloc::<half::bf16>(n) }.map(CudaStorageSlice::BF16),
        C::F16 => unsafe { dev.alloc::<half::f16>(n) }.map(CudaStorageSlice::F16),
        C::F32 => unsafe { dev.alloc::<f32>(n) }.map(CudaStorageSlice::F32),
        C::F64 => unsafe { dev.alloc::<f64>(n) }.map(CudaStorageSlice::F64),
        _ => return None,
    })
}

/// The kernelkit stream over `dev`'s cudarc stream, made once per candle
/// device and kept for the process (one entry per candle device: it holds
/// candle's stream, which candle never destroys while its device lives).
fn stream_of(dev: &CudaDevice) -> crate::Result<Stream> {
    static STREAMS: Mutex<Vec<(DeviceId, Stream)>> = Mutex::new(Vec::new());
    let mut streams = STREAMS.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, s)) = streams.iter().find(|(id, _)| *id == dev.id()) {
        return Ok(s.clone());
    }
    let DeviceLocation::Cuda { gpu_id } = dev.location() else {
        return Err(crate::error::ArrayError::Foreign(format!(
            "candle's CUDA device reports {:?}",
            dev.location()
        ))
        .into());
    };
    let ordinal = u32::try_from(gpu_id).map_err(|_| {
        crate::error::ArrayError::Foreign(format!("candle's CUDA device has ordinal {gpu_id}"))
    })?;
    let device = Device::cuda(ordinal)?;
    let stream = super::super::cudarc::stream(&device, dev.cuda_stream())?;
    streams.push((dev.id(), stream.clone()));
    Ok(stream)
}
