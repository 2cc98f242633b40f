//! A kernel that faults on the GPU (an illegal address, a trap) gives a
//! typed error at the call or at the next synchronization; afterwards the
//! device reports itself unusable instead of hanging or crashing, and the
//! CPU keeps working. A fault ruins the CUDA context of the whole process,
//! so these tests live in their own test binary, one device object each,
//! and each needs a process of its own (nextest gives each test one;
//! `scripts/gpu-remote.sh` runs them one by one).

use kernelkit::{CacheMode, DType, Device, DeviceError, Error, Kernel};

/// A new CUDA device with no disk tier, or `None` (with the reason printed).
fn gpu() -> Option<Device> {
    match Device::builder().cache_mode(CacheMode::Memory).cuda(0) {
        Ok(d) => Some(d),
        Err(e) => {
            println!("SKIPPED: no CUDA device: {e}");
            None
        }
    }
}

fn is_fault(e: &Error) -> bool {
    matches!(e, Error::Device(DeviceError::Faulted { .. }))
}

#[test]
fn a_faulting_kernel_is_an_error_and_the_device_stays_unusable() {
    let Some(gpu) = gpu() else { return };
    let wild = Kernel::builder("wild_write")
        .inputs(["inp"])
        .outputs(["out"])
        .source(
            "uint i = thread_position_in_grid.x;\n\
             float* p = (float*)(0x10ull + (unsigned long long)i * 4096ull);\n\
             *p = inp[0];\n\
             out[i] = inp[0];",
        )
        .build()
        .unwrap();
    let x = gpu.array_from_slice(&[1.0f32], [1]).unwrap();
    let stream = gpu.new_stream().unwrap();
    // The launch itself may succeed (it is asynchronous); the fault must
    // surface at the latest when the result is read.
    let outcome = wild
        .call([&x])
        .output([32], DType::F32)
        .grid([32, 1, 1])
        .on(&stream)
        .launch()
        .and_then(|out| out[0].to_vec::<f32>());
    let err = outcome.expect_err("a write to address 0x10 must fail");
    assert!(is_fault(&err), "expected a fault, got {err:?}");
    println!("fault reported as: {err}");

    // Later calls on the device report it as unusable, quickly.
    let started = std::time::Instant::now();
    let fine = Kernel::builder("fine_after_fault")
        .inputs(["inp"])
        .outputs(["out"])
        .source("uint i = thread_position_in_grid.x; out[i] = inp[0] + 1.0f;")
        .build()
        .unwrap();
    let later = fine
        .call([&x])
        .output([4], DType::F32)
        .grid([4, 1, 1])
        .on(&stream)
        .launch()
        .and_then(|out| out[0].to_vec::<f32>());
    let err = later.expect_err("the device is unusable after a fault");
    println!("later call reported as: {err}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(60),
        "a later call must not hang"
    );
    assert!(gpu.array_from_slice(&[1.0f32], [1]).is_err());

    // The CPU is unaffected.
    let cpu = Device::builder()
        .cache_mode(CacheMode::Memory)
        .cpu()
        .unwrap();
    let y = cpu.array_from_slice(&[1.0f32], [1]).unwrap();
    let out = fine
        .call([&y])
        .output([4], DType::F32)
        .grid([4, 1, 1])
        .launch()
        .unwrap();
    assert_eq!(out[0].to_vec::<f32>().unwrap(), vec![2.0; 4]);
}

/// Issue 13, defect 7: a device that faults before anything used its
/// default stream (a kernel with no inputs, on a stream of its own) gives
/// a typed error to every later operation, the default stream's included,
/// and never panics (the default stream was once made on first use, and a
/// faulted device refused it to an `.expect`). Its own process on the GPU
/// machine (`scripts/gpu-remote.sh`): a fault ruins the process's context.
#[test]
fn a_device_that_faulted_before_its_default_stream_was_used_reports_the_fault() {
    let Some(gpu) = gpu() else { return };
    let wild = Kernel::builder("wild_write_no_inputs")
        .outputs(["out"])
        .source(
            "uint i = thread_position_in_grid.x;\n\
             float* p = (float*)(0x10ull + (unsigned long long)i * 4096ull);\n\
             *p = 1.0f;\n\
             out[i] = 1.0f;",
        )
        .build()
        .unwrap();
    let stream = gpu.new_stream().unwrap();
    let none: [&kernelkit::Array; 0] = [];
    let err = wild
        .call(none)
        .output([32], DType::F32)
        .grid([32, 1, 1])
        .on(&stream)
        .launch()
        .and_then(|out| out[0].to_vec::<f32>())
        .expect_err("a write to address 0x10 must fail");
    assert!(is_fault(&err), "expected a fault, got {err:?}");
    // Every later operation is an error (a typed one: these are `Result`s,
    // and a panic fails the test), the default stream's first.
    let zeros = kernelkit::Array::zeros(&gpu, [4], DType::F32);
    println!("zeros after the fault: {:?}", zeros.as_ref().err());
    assert!(zeros.is_err());
    assert!(gpu.array_from_slice(&[1.0f32], [1]).is_err());
    assert!(gpu.default_stream().synchronize().is_err());
    assert!(gpu.new_stream().is_err());
    let after = Kernel::builder("after_fault_default_stream")
        .outputs(["out"])
        .source("out[0] = 1.0f;")
        .build()
        .unwrap();
    let later = after
        .call(none)
        .output([4], DType::F32)
        .grid([4, 1, 1])
        .on(gpu.default_stream())
        .launch()
        .and_then(|out| out[0].to_vec::<f32>());
    assert!(later.is_err(), "the device is unusable after a fault");
    // A new device object on the faulted GPU: opens with a typed error, or
    // opens and reports errors; either way no panic.
    match Device::builder().cache_mode(CacheMode::Memory).cuda(0) {
        Err(e) => println!("a new device after the fault: {e}"),
        Ok(again) => {
            let r = kernelkit::Array::zeros(&again, [4], DType::F32);
            println!(
                "a new device after the fault opened; zeros: {:?}",
                r.as_ref().err()
            );
        }
    }
}
