//! The lifecycle of CUDA devices and contexts, and the driver state that
//! kernelkit keeps beside the driver's: devices freed with their context,
//! the current-context record of a thread after a context is gone, a
//! function's dynamic shared memory limit, errors where the default stream
//! or the device cannot be had.
//!
//! These tests need the primary context to be created and destroyed by
//! them alone, so they live in their own test binary, take a lock each (one
//! runs at a time) and keep no device between tests. They run on a GPU
//! (`scripts/gpu-remote.sh`) and, because they check what kernelkit asks
//! of the driver rather than what kernels compute, on the stand-in driver
//! of `tools/fakecuda` too (`scripts/test.sh`), which keeps the same rules
//! (a context released to zero is destroyed and the next one may have its
//! address; a launch needs the live context current and enough dynamic
//! shared memory allowed). Values are checked on a GPU only: the stand-in
//! runs no kernels. Without either, every test skips with the reason.

use std::sync::mpsc;
use std::sync::{Arc, Barrier};
use std::thread;

use kernelkit::{
    BodyLanguage, CacheMode, CallError, CompileError, DType, Device, DeviceError, Error, Kernel,
    WeakDevice,
};

#[path = "common/gpu.rs"]
mod on_gpu;
use on_gpu::{alone, gpu, stand_in};

/// Every test of this file also runs against the stand-in driver
/// (`scripts/test.sh` selects the tests of every module named `standin`).
mod standin {
    use super::*;

    /// Whether GPU 0's primary context exists, asked of the driver.
    fn context_alive() -> bool {
        use cudarc::driver::sys;
        let (mut dev, mut flags, mut active) = (0, 0u32, 0i32);
        // SAFETY: called only after a device opened, so the driver library is
        // loaded and initialized; each call writes plain values.
        unsafe {
            assert_eq!(sys::cuDeviceGet(&mut dev, 0), sys::CUresult::CUDA_SUCCESS);
            assert_eq!(
                sys::cuDevicePrimaryCtxGetState(dev, &mut flags, &mut active),
                sys::CUresult::CUDA_SUCCESS
            );
        }
        active != 0
    }

    fn kernel(name: &str, body: &str) -> Kernel {
        Kernel::builder(name)
            .inputs(["inp"])
            .outputs(["out"])
            .source(body)
            .build()
            .unwrap()
    }

    /// Opens a device, uses its default stream and one of its own (an upload,
    /// zeros, a kernel on each, results read back), drops it all, on a thread
    /// that then exits (so that its spare output goes too). Returns a weak
    /// reference to the device.
    fn use_a_device_on_a_thread(round: u32) -> Option<WeakDevice> {
        thread::spawn(move || {
            let dev = gpu()?;
            let real = !stand_in(&dev);
            let k = kernel(
                "lifecycle",
                "uint i = thread_position_in_grid.x; out[i] = inp[i] + 1.0f;",
            );
            let x = dev.array_from_slice(&[round as f32; 64], [64]).unwrap();
            let zeros = kernelkit::Array::zeros(&dev, [64], DType::F32).unwrap();
            let stream = dev.new_stream().unwrap();
            let on_own = k
                .call([&x])
                .output([64], DType::F32)
                .grid([64, 1, 1])
                .on(&stream)
                .launch()
                .unwrap();
            let on_default = k
                .call([&zeros])
                .output([64], DType::F32)
                .grid([64, 1, 1])
                .launch()
                .unwrap();
            let a: Vec<f32> = on_own[0].to_vec().unwrap();
            let b: Vec<f32> = on_default[0].to_vec().unwrap();
            if real {
                assert_eq!(a, vec![round as f32 + 1.0; 64]);
                assert_eq!(b, vec![1.0; 64]);
            }
            Some(dev.downgrade())
        })
        .join()
        .unwrap()
    }

    /// Issue 13, defect 4: the default stream held its device, so no device
    /// was ever freed, nor its context released. Twenty devices are opened,
    /// used and dropped: each is freed, and the driver destroys the primary
    /// context each time (nothing else in this process holds it).
    #[test]
    fn devices_are_freed_with_their_context() {
        alone(|| {
            for round in 0..20 {
                let Some(weak) = use_a_device_on_a_thread(round) else {
                    return;
                };
                assert!(weak.upgrade().is_none(), "device {round} is still alive");
                assert!(
                    !context_alive(),
                    "the context of device {round} is still retained"
                );
            }
        });
    }

    /// Issue 13, defect 8: a thread binds context 1; context 1 is dropped on
    /// another thread and context 2 opened (the driver may give it context 1's
    /// address). The first thread's next call must make context 2 current,
    /// not trust its record of context 1.
    #[test]
    fn a_thread_binds_a_new_context_after_another_thread_dropped_the_old() {
        alone(|| {
            type Job = Box<dyn FnOnce() + Send>;
            let (jobs, inbox) = mpsc::channel::<Job>();
            let worker = thread::spawn(move || {
                for job in inbox {
                    job();
                }
            });
            let on_worker = |job: Job| {
                let (done, wait) = mpsc::channel();
                jobs.send(Box::new(move || {
                    job();
                    done.send(()).unwrap();
                }))
                .unwrap();
                wait.recv().unwrap();
            };
            // Outputs of more than 1 MiB: a thread keeps smaller ones (and their
            // stream, and so their device) as its spare, and the first device must
            // be gone before the second opens.
            let n = 300_000;
            let run = move |dev: Device, k: Kernel, value: f32| {
                move || {
                    let real = !stand_in(&dev);
                    let x = dev.array_from_slice(&[value; 8], [8]).unwrap();
                    let s = dev.new_stream().unwrap();
                    let out = k
                        .call([&x])
                        .output([n], DType::F32)
                        .grid([8, 1, 1])
                        .on(&s)
                        .launch()
                        .unwrap();
                    let got: Vec<f32> = out[0].to_vec().unwrap();
                    if real {
                        assert_eq!(got[..8], [value * 2.0; 8]);
                    }
                }
            };
            let body = "uint i = thread_position_in_grid.x; out[i] = inp[i] * 2.0f;";

            let Some(first) = gpu() else { return };
            // Binds context 1 on the worker.
            on_worker(Box::new(run(first.clone(), kernel("rebind", body), 1.0)));
            let weak = first.downgrade();
            // Context 1 goes on this thread; the worker's record still names it.
            drop(first);
            assert!(weak.upgrade().is_none(), "the first device is freed");
            assert!(!context_alive(), "the first context is destroyed");
            // Context 2 (the stand-in driver gives it context 1's address).
            let second = gpu().expect("the device opened a moment ago");
            on_worker(Box::new(run(second.clone(), kernel("rebind", body), 3.0)));
            drop(second);
            drop(jobs);
            worker.join().unwrap();
            assert!(!context_alive());
        });
    }

    /// Issue 13, defect 6, deterministic: two kernel objects with the same
    /// body are two variants, two resolved functions, but one `CUfunction` in
    /// one module (the device's kernel cache shares it). A 100 KB launch
    /// through the first, a 60 KB one through the second, then 100 KB through
    /// the first again: with a limit kept per resolved function, the second
    /// set the driver's attribute back to 60 KB while the first still believed
    /// 100 KB, and the third launch failed.
    #[test]
    fn the_dynamic_shared_memory_limit_belongs_to_the_driver_function() {
        alone(|| {
            let Some(dev) = gpu() else { return };
            if dev.limits().max_shared_bytes < 100 << 10 {
                println!(
                    "skipped: {} allows only {} bytes",
                    dev.label(),
                    dev.limits().max_shared_bytes
                );
                return;
            }
            let body = concat!(
            "extern __shared__ float kk_smem[];\n",
            "uint t = threadIdx.x;\n",
            "for (uint j = t; j < 1024; j += blockDim.x) kk_smem[j] = inp[0];\n",
            "__syncthreads();\n",
            "if (t == 0) { float s = 0; for (uint j = 0; j < 1024; ++j) s += kk_smem[j]; out[0] = s; }"
        );
            let (a, b) = (kernel("smem_owner", body), kernel("smem_owner", body));
            let x = dev.array_from_slice(&[1.0f32; 8], [8]).unwrap();
            let launch = |k: &Kernel, bytes: u32| {
                let out = k
                    .call([&x])
                    .output([1], DType::F32)
                    .grid([128, 1, 1])
                    .threadgroup([128, 1, 1])
                    .shared_memory(bytes)
                    .launch()
                    .unwrap_or_else(|e| panic!("{bytes} bytes: {e}"));
                let got: Vec<f32> = out[0].to_vec().unwrap();
                if !stand_in(&dev) {
                    assert_eq!(got[0], 1024.0, "{bytes} bytes");
                }
            };
            launch(&a, 100 << 10);
            launch(&b, 60 << 10);
            launch(&a, 100 << 10);
            launch(&b, 100 << 10);
            assert_eq!(
                dev.loaded_modules(),
                1,
                "one module, so one driver function"
            );
        });
    }

    /// Issue 13, defect 6, under contention: each round a new kernel (a new
    /// function), 16 threads at a barrier, half needing 100 KB of dynamic
    /// shared memory and half 60 KB. Every launch must succeed, and so must
    /// a 100 KB launch after the round: the attribute must never end below
    /// what kernelkit believes it allowed.
    #[test]
    fn raises_of_the_dynamic_shared_memory_limit_from_many_threads() {
        alone(|| {
            let Some(dev) = gpu() else { return };
            if dev.limits().max_shared_bytes < 100 << 10 {
                println!(
                    "skipped: {} allows only {} bytes",
                    dev.label(),
                    dev.limits().max_shared_bytes
                );
                return;
            }
            let real = !stand_in(&dev);
            let rounds = if real { 20 } else { 200 };
            let x = dev.array_from_slice(&[1.0f32; 8], [8]).unwrap();
            for round in 0..rounds {
                let body = format!(
                "// round {round}\n\
                 extern __shared__ float kk_smem[];\n\
                 uint t = threadIdx.x;\n\
                 for (uint j = t; j < 256; j += blockDim.x) kk_smem[j] = inp[0];\n\
                 __syncthreads();\n\
                 if (t == 0) {{ float s = 0; for (uint j = 0; j < 256; ++j) s += kk_smem[j]; out[0] = s; }}"
            );
                let k = kernel("smem_race", &body);
                // Compile before the race, so that the threads race on the limit.
                k.call([&x])
                    .output([1], DType::F32)
                    .grid([32, 1, 1])
                    .threadgroup([32, 1, 1])
                    .compile()
                    .unwrap();
                let threads = 16;
                let barrier = Arc::new(Barrier::new(threads));
                let launch = |k: &Kernel, x: &kernelkit::Array, bytes: u32| {
                    let out = k
                        .call([x])
                        .output([1], DType::F32)
                        .grid([32, 1, 1])
                        .threadgroup([32, 1, 1])
                        .shared_memory(bytes)
                        .launch()
                        .unwrap_or_else(|e| panic!("round {round}, {bytes} bytes: {e}"));
                    if real {
                        assert_eq!(out[0].to_vec::<f32>().unwrap()[0], 256.0);
                    }
                };
                thread::scope(|scope| {
                    for t in 0..threads {
                        let (k, x, barrier) = (&k, &x, barrier.clone());
                        scope.spawn(move || {
                            let bytes = if t % 2 == 0 { 100 << 10 } else { 60 << 10 };
                            barrier.wait();
                            launch(k, x, bytes);
                        });
                    }
                });
                launch(&k, &x, 100 << 10);
            }
        });
    }

    /// Issue 13, defect 7: a device whose default stream cannot be created
    /// does not open (a typed error naming the driver call) instead of
    /// panicking later, when the default stream is first used. The stand-in
    /// driver fails `cuStreamCreate` on request; a GPU cannot be made to.
    #[test]
    fn a_device_whose_default_stream_fails_does_not_open() {
        alone(|| {
            let Some(dev) = gpu() else { return };
            if !stand_in(&dev) {
                println!("skipped: only the stand-in driver can fail cuStreamCreate on request");
                return;
            }
            drop(dev);
            // Read by the stand-in driver, not by kernelkit.
            std::env::set_var("FAKECUDA_FAIL_STREAM_CREATE", "1");
            let opened = Device::builder().cache_mode(CacheMode::Memory).cuda(0);
            std::env::remove_var("FAKECUDA_FAIL_STREAM_CREATE");
            match opened {
                Err(Error::Device(DeviceError::Driver { operation, .. })) => {
                    assert_eq!(operation, "cuStreamCreate")
                }
                other => panic!("expected cuStreamCreate's error, got {other:?}"),
            }
            assert!(!context_alive(), "the failed open released the context");
            let dev = gpu().expect("opens again");
            drop(dev);
        });
    }

    /// Issue 13, defect 7: a device that faults before anything used its
    /// default stream (a kernel with no inputs, on a stream of its own) gives
    /// the typed fault to every later operation, the default stream's
    /// included, and never panics. On a GPU this is `tests/cuda_fault.rs`
    /// (a fault there ruins the process's context); the stand-in's fault
    /// lasts until the context is destroyed.
    #[test]
    fn a_device_that_faulted_before_its_default_stream_was_used_reports_the_fault() {
        alone(|| {
            // On a thread that exits, so that its spare output (which holds a
            // stream of the device) goes with it.
            let tested = thread::spawn(fault_before_the_default_stream)
                .join()
                .unwrap();
            if tested {
                assert!(!context_alive(), "the faulted device was freed");
            }
        });
    }

    /// The body of the test above; false when it skipped.
    fn fault_before_the_default_stream() -> bool {
        let Some(dev) = gpu() else { return false };
        if !stand_in(&dev) {
            println!("skipped: on a GPU, tests/cuda_fault.rs checks this in its own process");
            return false;
        }
        let fault = Kernel::builder("fakecuda_fault")
            .outputs(["out"])
            .source("out[0] = 1.0f;")
            .build()
            .unwrap();
        let stream = dev.new_stream().unwrap();
        let none: [&kernelkit::Array; 0] = [];
        let err = fault
            .call(none)
            .output([4], DType::F32)
            .grid([4, 1, 1])
            .on(&stream)
            .launch()
            .and_then(|out| out[0].to_vec::<f32>())
            .expect_err("the stand-in faults this kernel");
        assert!(is_fault(&err), "{err:?}");
        expect_fault(kernelkit::Array::zeros(&dev, [4], DType::F32).map(drop));
        expect_fault(dev.array_from_slice(&[1.0f32], [1]).map(drop));
        expect_fault(dev.default_stream().synchronize());
        expect_fault(dev.new_stream().map(drop));
        let body = Kernel::builder("after_fault")
            .outputs(["out"])
            .source("out[0] = 1.0f;")
            .build()
            .unwrap();
        // A new kernel: its module cannot be loaded into the faulted context,
        // a load error that names the fault.
        let err = body
            .call(none)
            .output([4], DType::F32)
            .grid([4, 1, 1])
            .on(dev.default_stream())
            .launch()
            .expect_err("nothing loads on a faulted device");
        assert!(
            matches!(&err, Error::Compile(CompileError::Load { reason, .. })
            if reason.contains("no longer usable")),
            "{err:?}"
        );
        true
    }

    fn is_fault(e: &Error) -> bool {
        matches!(e, Error::Device(DeviceError::Faulted { .. }))
    }

    fn expect_fault(r: kernelkit::Result<()>) {
        match r {
            Err(e) => assert!(is_fault(&e), "{e:?}"),
            Ok(()) => panic!("an operation on a faulted device succeeded"),
        }
    }

    /// Issue 13, defect 10: a body that uses CUDA's own block collectives has
    /// no grid guard, so every thread of the last block runs it; when that
    /// block reaches past 2^32 threads its 32-bit positions would wrap and
    /// repeat, and the launch is refused. A threadgroup that divides the grid
    /// is not. (A Metal body's `threadgroup_barrier` is guarded since issue 18:
    /// threads past the grid exit, and an exited thread holds up no barrier.)
    #[test]
    fn an_unguarded_body_whose_last_block_passes_2_32_is_refused() {
        alone(|| {
            let Some(dev) = gpu() else { return };
            let k = Kernel::builder("barrier_body")
                .inputs(["inp"])
                .outputs(["out"])
                .language(BodyLanguage::Cuda)
                .source(
                    "unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;\n\
                 __syncthreads();\n\
                 if (i < 1) out[i] = inp[i];",
                )
                .build()
                .unwrap();
            let x = dev.array_from_slice(&[1.0f32], [1]).unwrap();
            let err = k
                .call([&x])
                .output([1], DType::F32)
                .grid([u32::MAX as u64, 1, 1])
                .threadgroup([1000, 1, 1])
                .launch()
                .expect_err("4294968 blocks of 1000 threads pass 2^32");
            assert!(matches!(err, Error::Call(CallError::Dims { .. })), "{err}");
            assert!(err.to_string().contains("__syncthreads"), "{err}");
            // The same body on a grid that fits is launched.
            let out = k
                .call([&x])
                .output([1], DType::F32)
                .grid([1000, 1, 1])
                .threadgroup([1000, 1, 1])
                .launch()
                .unwrap();
            if !stand_in(&dev) {
                assert_eq!(out[0].to_vec::<f32>().unwrap(), vec![1.0]);
            }
            // A Metal body with a barrier has the grid guard (exact near 2^32): the same grid
            // is launched, and the threads past it exit before the barrier.
            let metal = Kernel::builder("metal_barrier_body")
                .inputs(["inp"])
                .outputs(["out"])
                .source(
                    "uint i = thread_position_in_grid.x;\n\
                 threadgroup_barrier(mem_flags::mem_threadgroup);\n\
                 if (i < 1) out[i] = inp[i];",
                )
                .build()
                .unwrap();
            let out = metal
                .call([&x])
                .output([1], DType::F32)
                .grid([u32::MAX as u64, 1, 1])
                .threadgroup([1000, 1, 1])
                .launch()
                .unwrap();
            if !stand_in(&dev) {
                assert_eq!(out[0].to_vec::<f32>().unwrap(), vec![1.0]);
            }
        });
    }

    /// A stream another library made is used, and never destroyed, by
    /// kernelkit: its owner destroys it after the last kernelkit handle and
    /// array of it are gone (on the stand-in driver a second destroy would be
    /// a double free, which aborts). A handle of no context is refused.
    #[test]
    fn a_foreign_stream_is_used_but_never_destroyed() {
        alone(|| {
            let Some(device) = gpu() else { return };
            use cudarc::driver::sys;
            let mut raw: sys::CUstream = std::ptr::null_mut();
            // SAFETY: the device's primary context is current on this thread
            // (kernelkit made it so when the device opened); writes one handle.
            let created = unsafe { sys::cuStreamCreate(&mut raw, 1) };
            assert_eq!(created, sys::CUresult::CUDA_SUCCESS);
            {
                // SAFETY: a live stream of the device, destroyed below, after
                // every kernelkit handle and array of it.
                let stream =
                    unsafe { kernelkit::Stream::from_raw_cuda(&device, raw.cast()) }.unwrap();
                let x = device.array_from_slice(&[1.0f32; 64], [64]).unwrap();
                let k = kernel(
                    "foreign_stream",
                    "uint i = thread_position_in_grid.x; out[i] = inp[i];",
                );
                let out = k
                    .call([&x])
                    .output([64], DType::F32)
                    .grid([64, 1, 1])
                    .on(&stream)
                    .launch()
                    .unwrap();
                stream.synchronize().unwrap();
                if !stand_in(&device) {
                    assert_eq!(out[0].to_vec::<f32>().unwrap(), vec![1.0; 64]);
                }
            }
            // SAFETY: kernelkit holds the stream no more; its owner destroys it.
            assert_eq!(
                unsafe { sys::cuStreamDestroy_v2(raw) },
                sys::CUresult::CUDA_SUCCESS
            );
            // A handle that is no stream of the device's context (made up: on
            // the stand-in only, whose driver tells it from a stream).
            if stand_in(&device) {
                let mut fake = [0u64; 8];
                // SAFETY: refused before any use (the driver says whose it is).
                let r =
                    unsafe { kernelkit::Stream::from_raw_cuda(&device, fake.as_mut_ptr().cast()) };
                assert!(r.is_err(), "a handle of no context is refused");
            }
        });
    }

    /// The legacy default stream (the default stream of PyTorch and CuPy) is a
    /// stream of the device's primary context: kernels queue on it, it orders
    /// with kernelkit's own streams both ways, its raw handle is
    /// `CU_STREAM_LEGACY`, and dropping it destroys nothing.
    #[test]
    fn the_legacy_default_stream_is_the_devices() {
        alone(|| {
            let Some(device) = gpu() else { return };
            let legacy = kernelkit::Stream::cuda_legacy_default(&device).unwrap();
            assert_eq!(legacy.raw_cuda(), Some(1));
            let own = device.new_stream().unwrap();
            own.wait_for(&legacy).unwrap();
            legacy.wait_for(&own).unwrap();
            let x = device.array_from_slice(&[2.0f32; 64], [64]).unwrap();
            let k = kernel(
                "on_the_legacy_stream",
                "uint i = thread_position_in_grid.x; out[i] = inp[i];",
            );
            let out = k
                .call([&x])
                .output([64], DType::F32)
                .grid([64, 1, 1])
                .on(&legacy)
                .launch()
                .unwrap();
            legacy.synchronize().unwrap();
            if !stand_in(&device) {
                assert_eq!(out[0].to_vec::<f32>().unwrap(), vec![2.0; 64]);
            }
            drop((out, legacy, own));
            // Another wrap of it is as good as the first.
            let again = kernelkit::Stream::cuda_legacy_default(&device).unwrap();
            again.synchronize().unwrap();
        });
    }
}
