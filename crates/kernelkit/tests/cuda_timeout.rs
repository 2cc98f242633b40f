//! `Stream::synchronize_timeout` on a GPU whose kernel runs too long: the
//! wait gives up with `DeviceError::TimedOut` and the device reports itself
//! unusable afterwards, quickly. The kernel keeps running (a kernel cannot
//! be stopped): it is bounded here to about a minute, and this test has a
//! process of its own (a test binary of its own), since nothing else could
//! use the device after it.

use std::time::{Duration, Instant};

use kernelkit::{BodyLanguage, DType, Device, DeviceError, Error, Kernel};

#[test]
fn a_wait_that_times_out_leaves_the_device_unusable() {
    std::env::set_var("KERNELKIT_CACHE", "memory");
    let gpu = match Device::new_cuda(0) {
        Ok(d) => d,
        Err(e) => {
            println!("SKIPPED: no CUDA device: {e}");
            return;
        }
    };
    let spin = Kernel::builder("spin_a_minute")
        .inputs(["inp"])
        .outputs(["out"])
        .language(BodyLanguage::Cuda)
        .source(
            "long long t0 = clock64();\n\
             while (clock64() - t0 < 120000000000ll) {}\n\
             out[0] = inp[0];",
        )
        .build()
        .unwrap();
    let stream = gpu.new_stream().unwrap();
    let x = gpu.array_from_slice(&[1.0f32], [1]).unwrap();
    let out = spin
        .call([&x])
        .output([1], DType::F32)
        .grid([1, 1, 1])
        .on(&stream)
        .launch()
        .unwrap();
    let started = Instant::now();
    let err = stream
        .synchronize_timeout(Duration::from_secs(1))
        .expect_err("a minute of spinning does not finish in a second");
    assert!(
        matches!(err, Error::Device(DeviceError::TimedOut { .. })),
        "{err:?}"
    );
    println!("timed out as: {err}");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the wait gave up"
    );
    // Every later operation fails at once, as after a fault.
    let later = gpu.array_from_slice(&[1.0f32], [1]);
    assert!(
        matches!(later, Err(Error::Device(DeviceError::Faulted { .. }))),
        "{later:?}"
    );
    // Dropping the outputs or the device would wait for the kernel.
    std::mem::forget(out);
    std::mem::forget(x);
    std::mem::forget(stream);
    std::mem::forget(gpu);
}
