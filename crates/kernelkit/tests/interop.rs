//! Zero-copy interop on the CPU (and the null device): borrowed slices,
//! owned foreign buffers, outputs written in place, DLPack in and out, and
//! every checkable misuse as an error. The CUDA counterparts are in
//! `tests/cuda.rs` (`foreign_*`).

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use kernelkit::interop::{self, dlpack, ForeignLayout, ForeignOwner};
use kernelkit::{ArrayError, CacheMode, CallError, DType, Device, Error, Kernel};

fn cpu() -> Device {
    Device::builder()
        .cache_mode(CacheMode::Memory)
        .cpu()
        .unwrap()
}

fn scale() -> Kernel {
    Kernel::builder("scale")
        .inputs(["x"])
        .outputs(["y"])
        .source("uint i = thread_position_in_grid.x; y[i] = 2 * x[i];")
        .build()
        .unwrap()
}

/// A kernel that reads its input through its strides.
fn strided_copy() -> Kernel {
    Kernel::builder("strided_copy")
        .inputs(["x"])
        .outputs(["y"])
        .source(
            "uint i = thread_position_in_grid.x; uint r = i / x_shape[1], c = i % x_shape[1];\n\
             y[i] = x[r * x_strides[0] + c * x_strides[1]];",
        )
        .ensure_row_contiguous(false)
        .build()
        .unwrap()
}

/// The kernel writes through to the caller's own memory: the slice holds
/// the result once the scope ends (no copy in or out).
#[test]
fn a_kernel_writes_through_to_a_borrowed_slice() {
    let device = cpu();
    let x: Vec<f32> = (0..64).map(|i| i as f32).collect();
    let mut y = vec![0.0f32; 64];
    let y_addr = y.as_ptr() as usize;
    let out = interop::scope(|s| {
        let xs = s.slice(&device, &x, [64])?;
        let ys = s.slice_mut(&device, &mut y, [64])?;
        let out = scale()
            .call([&xs])
            .output_into(&ys)
            .grid([64, 1, 1])
            .launch()?;
        Ok::<_, kernelkit::Error>(out.into_vec())
    })
    .unwrap();
    assert_eq!(y, x.iter().map(|v| 2.0 * v).collect::<Vec<_>>());
    assert_eq!(
        y.as_ptr() as usize,
        y_addr,
        "the same memory, written in place"
    );
    // The returned output is the borrowed view: its scope has ended.
    assert!(out[0].is_revoked());
    assert!(matches!(
        out[0].to_vec::<f32>(),
        Err(Error::Array(ArrayError::Revoked))
    ));
}

/// A view that escapes its scope is refused, as an input and as an output.
#[test]
fn an_escaped_view_is_an_error_not_a_dangling_pointer() {
    let device = cpu();
    let x = vec![1.0f32; 8];
    let mut y = vec![0.0f32; 8];
    let (xs, ys) = interop::scope(|s| {
        (
            s.slice(&device, &x, [8]).unwrap(),
            s.slice_mut(&device, &mut y, [8]).unwrap(),
        )
    });
    drop(x);
    let k = scale();
    let err = k
        .call([&xs])
        .output([8], DType::F32)
        .grid([8, 1, 1])
        .launch();
    assert!(
        matches!(err, Err(Error::Call(CallError::Foreign { .. }))),
        "{err:?}"
    );
    let owned = device.array_from_slice(&[1.0f32; 8], [8]).unwrap();
    let err = k.call([&owned]).output_into(&ys).grid([8, 1, 1]).launch();
    assert!(
        matches!(err, Err(Error::Call(CallError::OutputTarget { .. }))),
        "{err:?}"
    );
    assert_eq!(y, vec![0.0; 8]);
}

/// Strided views with an offset, negative strides included, are passed as
/// views (the kernel sees the real strides).
#[test]
fn strided_borrowed_views_keep_their_layout() {
    let device = cpu();
    let data: Vec<i32> = (0..12).collect();
    interop::scope(|s| {
        // The transpose of a 3x4 matrix, starting at element 0.
        let t = s.strided(&device, &data, &[4, 3], &[1, 4], 0).unwrap();
        let out = strided_copy()
            .call([&t])
            .output([12], DType::I32)
            .grid([12, 1, 1])
            .launch()
            .unwrap();
        assert_eq!(
            out[0].to_vec::<i32>().unwrap(),
            vec![0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11]
        );
        // Rows reversed: element 0 is row 2, reached with a negative stride.
        let r = s.strided(&device, &data, &[3, 4], &[-4, 1], 8).unwrap();
        assert_eq!(
            r.to_vec::<i32>().unwrap(),
            vec![8, 9, 10, 11, 4, 5, 6, 7, 0, 1, 2, 3]
        );
        // Out of the borrowed elements: refused.
        assert!(s.strided(&device, &data, &[3, 4], &[4, 1], 1).is_err());
        assert!(s.strided(&device, &data, &[3, 4], &[-4, 1], 4).is_err());
    });
}

/// An owned foreign buffer: the kernel writes into it, and its drop
/// callback runs exactly once, when the last array goes.
#[test]
fn a_foreign_buffer_is_written_in_place_and_released_once() {
    let device = cpu();
    let released = Arc::new(AtomicU32::new(0));
    let mut buffer = vec![0.0f32; 16].into_boxed_slice();
    let addr = buffer.as_mut_ptr() as u64;
    let r = released.clone();
    let owner = ForeignOwner::deleter(move || {
        // The buffer's owner frees it here.
        drop(buffer);
        r.fetch_add(1, Ordering::SeqCst);
    });
    // SAFETY: 16 f32 at `addr`, alive until the deleter runs.
    let y = unsafe {
        interop::foreign_array(&device, ForeignLayout::new(addr, DType::F32, &[16]), owner)
    }
    .unwrap();
    let x = device.array_from_slice(&[3.0f32; 16], [16]).unwrap();
    let out = scale()
        .call([&x])
        .output_into(&y)
        .grid([16, 1, 1])
        .launch()
        .unwrap();
    // SAFETY: the memory is alive (the arrays hold the owner).
    let seen = unsafe { std::slice::from_raw_parts(addr as *const f32, 16) }.to_vec();
    assert_eq!(seen, vec![6.0; 16], "the owner reads the result in place");
    let clone = y.clone();
    drop((y, out));
    assert_eq!(released.load(Ordering::SeqCst), 0, "a clone still holds it");
    drop(clone);
    assert_eq!(released.load(Ordering::SeqCst), 1);
}

#[test]
fn a_vec_moves_in_without_a_copy() {
    let device = cpu();
    let v: Vec<f32> = (0..6).map(|i| i as f32).collect();
    let addr = v.as_ptr() as usize;
    let a = interop::from_vec(&device, v, [2, 3]).unwrap();
    assert!(a.is_foreign());
    let out = scale()
        .call([&a])
        .output([6], DType::F32)
        .grid([6, 1, 1])
        .launch()
        .unwrap();
    assert_eq!(
        out[0].to_vec::<f32>().unwrap(),
        [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
    );
    let back = dlpack::export(&a).unwrap();
    // SAFETY: a live exported tensor.
    assert_eq!(unsafe { (*back).dl_tensor.data } as usize, addr);
    // SAFETY: the consumer calls the deleter once.
    unsafe { ((*back).deleter.unwrap())(back) };
    assert!(interop::from_vec(&device, vec![1u8; 3], [2, 2]).is_err());
}

/// `output_into` checks shape and dtype (they are the target's), layout,
/// device, writability and overlap.
#[test]
fn output_targets_are_checked() {
    let device = cpu();
    let k = scale();
    let x = device.array_from_slice(&[1.0f32; 8], [8]).unwrap();
    let target = |err: kernelkit::Result<kernelkit::Outputs>| match err {
        Err(Error::Call(CallError::OutputTarget { reason, .. })) => reason,
        other => panic!("expected an output target error, got {other:?}"),
    };
    // Overlap with the input: refused unless allowed (an in-place kernel).
    let r = target(k.call([&x]).output_into(&x).grid([8, 1, 1]).launch());
    assert!(r.contains("shares memory with input `x`"), "{r}");
    k.call([&x])
        .output_into(&x)
        .allow_overlap(true)
        .grid([8, 1, 1])
        .launch()
        .unwrap();
    assert_eq!(x.to_vec::<f32>().unwrap(), vec![2.0; 8]);
    // Not row-contiguous.
    let m = device.array_from_slice(&[0.0f32; 8], [2, 4]).unwrap();
    let r = target(
        k.call([&x])
            .output_into(&m.transpose())
            .grid([8, 1, 1])
            .launch(),
    );
    assert!(r.contains("row-contiguous"), "{r}");
    // Read-only foreign memory.
    let data = vec![0.0f32; 8];
    interop::scope(|s| {
        let ro = s.slice(&device, &data, [8]).unwrap();
        let r = target(k.call([&x]).output_into(&ro).grid([8, 1, 1]).launch());
        assert!(r.contains("read-only"), "{r}");
    });
    // Another device's memory.
    let null = Device::new_null();
    let elsewhere = null.array_from_slice(&[0.0f32; 8], [8]).unwrap();
    let r = target(
        k.call([&x])
            .output_into(&elsewhere)
            .grid([8, 1, 1])
            .launch(),
    );
    assert!(r.contains("null"), "{r}");
    // A disjoint slice of the same buffer as the input is fine; an
    // overlapping one is not.
    let mut buf = vec![1.0f32; 16];
    interop::scope(|s| {
        let all = s.slice_mut(&device, &mut buf, [16]).unwrap();
        let (lo, hi) = (
            all.slice(&[[0, 8, 1]]).unwrap(),
            all.slice(&[[8, 16, 1]]).unwrap(),
        );
        k.call([&lo])
            .output_into(&hi)
            .grid([8, 1, 1])
            .launch()
            .unwrap();
        let mid = all.slice(&[[4, 12, 1]]).unwrap();
        let r = target(k.call([&lo]).output_into(&mid).grid([8, 1, 1]).launch());
        assert!(r.contains("shares memory"), "{r}");
    });
    assert_eq!(&buf[8..], &[2.0; 8]);
}

/// An init value fills only the target's own elements.
#[test]
fn init_value_fills_only_the_target_view() {
    let device = cpu();
    let k = Kernel::builder("noop")
        .inputs(["x"])
        .outputs(["y"])
        .source("(void)x; (void)y;")
        .build()
        .unwrap();
    let x = device.array_from_slice(&[0.0f32; 1], [1]).unwrap();
    let mut buf = vec![9.0f32; 8];
    interop::scope(|s| {
        let all = s.slice_mut(&device, &mut buf, [8]).unwrap();
        let mid = all.slice(&[[2, 5, 1]]).unwrap();
        k.call([&x])
            .output_into(&mid)
            .init_value(1.0)
            .grid([1, 1, 1])
            .launch()
            .unwrap();
    });
    assert_eq!(buf, [9.0, 9.0, 1.0, 1.0, 1.0, 9.0, 9.0, 9.0]);
}

/// Misuses of raw foreign memory are errors: misaligned pointers, strides
/// that overflow, null pointers, writable `bool` borrows, host memory on a
/// device that is not the CPU.
#[test]
fn foreign_descriptions_are_checked() {
    let device = cpu();
    let data = [0u64; 8];
    let addr = data.as_ptr() as u64;
    let foreign = |layout: ForeignLayout<'_>| {
        // SAFETY: refused before any use (every case below is an error).
        unsafe { interop::foreign_array(&device, layout, ForeignOwner::none()) }
    };
    let message = |r: kernelkit::Result<kernelkit::Array>| r.unwrap_err().to_string();
    let m = message(foreign(ForeignLayout::new(addr + 2, DType::F32, &[2])));
    assert!(m.contains("not aligned for float32"), "{m}");
    let mut overflow = ForeignLayout::new(addr, DType::F32, &[3, 3]);
    overflow.strides = Some(&[isize::MAX / 2, 1]);
    let m = message(foreign(overflow));
    assert!(m.contains("overflow"), "{m}");
    let m = message(foreign(ForeignLayout::new(0, DType::F32, &[2])));
    assert!(m.contains("null pointer"), "{m}");
    let mut flags = vec![false; 4];
    let m = interop::scope(|s| message(s.slice_mut(&device, &mut flags, [4])));
    assert!(m.contains("bool"), "{m}");
}

/// A DLPack tensor made by hand, with a counting deleter.
struct Producer {
    data: Vec<f32>,
    shape: [i64; 2],
    strides: [i64; 2],
    deleted: Arc<AtomicU32>,
}

unsafe extern "C" fn count_deletes(t: *mut dlpack::DLManagedTensor) {
    // SAFETY: `manager_ctx` is the leaked `Producer` of `managed`.
    let producer = unsafe { Box::from_raw((*t).manager_ctx.cast::<Producer>()) };
    producer.deleted.fetch_add(1, Ordering::SeqCst);
    // SAFETY: the tensor itself was leaked by `managed`.
    drop(unsafe { Box::from_raw(t) });
}

unsafe extern "C" fn count_deletes_versioned(t: *mut dlpack::DLManagedTensorVersioned) {
    // SAFETY: as `count_deletes`.
    let producer = unsafe { Box::from_raw((*t).manager_ctx.cast::<Producer>()) };
    producer.deleted.fetch_add(1, Ordering::SeqCst);
    drop(unsafe { Box::from_raw(t) });
}

/// A 3x4 float32 DLPack tensor over a 16-element buffer: its transpose
/// (strides 1, 4), starting `offset` elements in (as a byte offset).
fn tensor_parts(deleted: &Arc<AtomicU32>, offset: u64) -> (dlpack::DLTensor, *mut Producer) {
    let producer = Box::into_raw(Box::new(Producer {
        data: (0..16).map(|i| i as f32).collect(),
        shape: [4, 3],
        strides: [1, 4],
        deleted: deleted.clone(),
    }));
    // SAFETY: the producer was just leaked; its fields move no more.
    let p = unsafe { &mut *producer };
    let tensor = dlpack::DLTensor {
        data: p.data.as_mut_ptr().cast(),
        device: dlpack::DLDevice {
            device_type: dlpack::device_type::CPU,
            device_id: 0,
        },
        ndim: 2,
        dtype: dlpack::dl_dtype(DType::F32),
        shape: p.shape.as_mut_ptr(),
        strides: p.strides.as_mut_ptr(),
        byte_offset: offset * 4,
    };
    (tensor, producer)
}

fn managed(deleted: &Arc<AtomicU32>, offset: u64) -> *mut dlpack::DLManagedTensor {
    let (dl_tensor, producer) = tensor_parts(deleted, offset);
    Box::into_raw(Box::new(dlpack::DLManagedTensor {
        dl_tensor,
        manager_ctx: producer.cast(),
        deleter: Some(count_deletes),
    }))
}

fn managed_versioned(
    deleted: &Arc<AtomicU32>,
    flags: u64,
) -> *mut dlpack::DLManagedTensorVersioned {
    let (dl_tensor, producer) = tensor_parts(deleted, 1);
    Box::into_raw(Box::new(dlpack::DLManagedTensorVersioned {
        version: dlpack::VERSION,
        manager_ctx: producer.cast(),
        deleter: Some(count_deletes_versioned),
        flags,
        dl_tensor,
    }))
}

/// Import honours strides and the byte offset, writes through, and calls
/// the deleter exactly once, when the last array goes.
#[test]
fn dlpack_import_calls_the_deleter_exactly_once() {
    let device = cpu();
    let deleted = Arc::new(AtomicU32::new(0));
    let t = managed(&deleted, 2);
    // SAFETY: a valid tensor, handed over.
    let a = unsafe { dlpack::import(&device, t, None) }.unwrap();
    assert_eq!(a.shape(), &[4, 3]);
    assert_eq!(a.strides(), &[1, 4]);
    // Element (r, c) is data[2 + r + 4c].
    let expected: Vec<f32> = (0..4)
        .flat_map(|r| (0..3).map(move |c| (2 + r + 4 * c) as f32))
        .collect();
    assert_eq!(a.to_vec::<f32>().unwrap(), expected);
    let out = strided_copy()
        .call([&a])
        .output([12], DType::F32)
        .grid([12, 1, 1])
        .launch()
        .unwrap();
    assert_eq!(out[0].to_vec::<f32>().unwrap(), expected);
    let b = a.clone();
    drop(a);
    assert_eq!(deleted.load(Ordering::SeqCst), 0);
    drop(b);
    assert_eq!(deleted.load(Ordering::SeqCst), 1);

    // A failed import calls nothing: the tensor is still the caller's.
    let t = managed(&deleted, 0);
    // SAFETY: a valid tensor; on error it stays ours.
    unsafe { (*t).dl_tensor.dtype.lanes = 4 };
    assert!(unsafe { dlpack::import(&device, t, None) }.is_err());
    assert_eq!(deleted.load(Ordering::SeqCst), 1);
    // SAFETY: still ours: delete it once.
    unsafe { ((*t).deleter.unwrap())(t) };
    assert_eq!(deleted.load(Ordering::SeqCst), 2);
}

/// The versioned struct's read-only flag makes a read-only array: read,
/// never written (refused as an output), re-exported with the flag.
#[test]
fn dlpack_read_only_flag_is_honoured() {
    let device = cpu();
    let deleted = Arc::new(AtomicU32::new(0));
    let t = managed_versioned(&deleted, dlpack::FLAG_READ_ONLY);
    // SAFETY: a valid tensor, handed over.
    let a = unsafe { dlpack::import_versioned(&device, t, None) }.unwrap();
    assert!(!a.is_writable());
    let x = device.array_from_slice(&[1.0f32; 12], [4, 3]).unwrap();
    let k = Kernel::builder("copy2d")
        .inputs(["x"])
        .outputs(["y"])
        .source("uint i = thread_position_in_grid.x; y[i] = x[i];")
        .build()
        .unwrap();
    let err = k.call([&x]).output_into(&a).grid([12, 1, 1]).launch();
    assert!(
        matches!(err, Err(Error::Call(CallError::OutputTarget { .. }))),
        "{err:?}"
    );
    assert!(dlpack::export(&a).is_err(), "the legacy struct has no flag");
    let again = dlpack::export_versioned(&a).unwrap();
    // SAFETY: a live exported tensor.
    assert_eq!(unsafe { (*again).flags } & dlpack::FLAG_READ_ONLY, 1);
    drop(a);
    assert_eq!(deleted.load(Ordering::SeqCst), 0, "the export holds it");
    // SAFETY: the consumer calls the deleter once.
    unsafe { ((*again).deleter.unwrap())(again) };
    assert_eq!(deleted.load(Ordering::SeqCst), 1);
    // Another major version is refused, and the tensor stays ours.
    let t = managed_versioned(&deleted, 0);
    // SAFETY: a valid tensor; on error it stays ours.
    unsafe { (*t).version.major = 2 };
    assert!(unsafe { dlpack::import_versioned(&device, t, None) }.is_err());
    unsafe { ((*t).deleter.unwrap())(t) };
    assert_eq!(deleted.load(Ordering::SeqCst), 2);
}

/// Export, then import: every dtype DLPack can express, bool and bfloat16
/// included, with strides and offsets; the exported tensor keeps the
/// array's memory until its deleter.
#[test]
fn dlpack_round_trips_every_dtype() {
    let device = cpu();
    for dtype in DType::ALL {
        let bytes: Vec<u8> = (0..24 * dtype.size()).map(|i| (i % 2) as u8).collect();
        let a = kernelkit::Array::from_bytes(&device, &bytes, [4, 6], dtype).unwrap();
        let view = a.slice(&[[1, 4, 1], [0, 6, 2]]).unwrap().transpose();
        let exported = dlpack::export_versioned(&view).unwrap();
        // SAFETY: a tensor kernelkit exported, handed over.
        let back = unsafe { dlpack::import_versioned(&device, exported, None) }.unwrap();
        assert_eq!(back.dtype(), dtype);
        assert_eq!(back.shape(), view.shape());
        assert_eq!(back.strides(), view.strides());
        assert_eq!(
            back.to_bytes().unwrap(),
            view.to_bytes().unwrap(),
            "{dtype}"
        );
    }
    // A borrowed view cannot be exported: the tensor could outlive it.
    let data = vec![1.0f32; 4];
    interop::scope(|s| {
        let v = s.slice(&device, &data, [4]).unwrap();
        assert!(dlpack::export(&v).is_err());
    });
    // CUDA memory is not the CPU's.
    let deleted = Arc::new(AtomicU32::new(0));
    let t = managed(&deleted, 0);
    // SAFETY: a valid tensor; on error it stays ours.
    unsafe { (*t).dl_tensor.device.device_type = dlpack::device_type::CUDA };
    let m = unsafe { dlpack::import(&device, t, None) }
        .unwrap_err()
        .to_string();
    assert!(m.contains("not cpu"), "{m}");
    unsafe { ((*t).deleter.unwrap())(t) };
}

/// Host memory is the CPU's: a CUDA device refuses it, as does a stream
/// wrapper on the CPU.
#[test]
fn host_memory_and_foreign_streams_on_the_wrong_device_are_refused() {
    let data = vec![0.0f32; 4];
    if let Ok(gpu) = Device::cuda(0) {
        interop::scope(|s| {
            assert!(s.slice(&gpu, &data, [4]).is_err());
        });
    }
    let mut token = [0u64; 8];
    // SAFETY: refused before any use: the CPU has no foreign streams.
    let r = unsafe { kernelkit::Stream::from_raw_cuda(&cpu(), token.as_mut_ptr().cast()) };
    assert!(r.is_err());
}
