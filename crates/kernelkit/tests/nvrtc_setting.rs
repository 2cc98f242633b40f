//! `KERNELKIT_NVRTC_PATH`: the NVRTC it names is the one that compiles,
//! one that does not load is a typed error naming the setting, and one
//! older than 12.8 (which rejects the generated prelude) is refused when
//! the device opens.
//!
//! Each test runs in a child process: NVRTC is loaded once per process.
//! They need a CUDA driver (the GPU's, or the stand-in of tools/fakecuda
//! without its NVRTC: `LD_LIBRARY_PATH=target/fakecuda/driver`) and skip,
//! saying so, without one. `KK_TEST_NVRTC`, a path to a real
//! `libnvrtc.so.*` (scripts/test.sh gives NVIDIA's 12.8 and 13.0 wheels'),
//! turns on the compile through it; `KK_TEST_OLD_NVRTC` (12.6's there) the
//! refusal.
#![cfg(feature = "cuda")]

use std::ffi::OsString;

use kernelkit::{DType, Device, DeviceError, Error, Kernel};

mod common;
use common::in_child;

/// Opens CUDA device 0, or `None` when no driver loads (the reason printed).
fn open() -> Option<Result<Device, Error>> {
    match Device::new_cuda(0) {
        Err(Error::Device(DeviceError::Unavailable { reason, .. }))
            if reason.contains("libcuda.so.1") =>
        {
            println!("skipped: no CUDA driver ({reason})");
            None
        }
        other => Some(other),
    }
}

#[test]
fn a_setting_that_does_not_load_is_a_device_error_naming_it() {
    const TEST: &str = "a_setting_that_does_not_load_is_a_device_error_naming_it";
    if !in_child(
        TEST,
        &[(
            "KERNELKIT_NVRTC_PATH",
            OsString::from("/nonexistent/libnvrtc.so.12"),
        )],
    ) {
        return;
    }
    let Some(opened) = open() else { return };
    match opened {
        Err(Error::Device(DeviceError::Unavailable { reason, .. })) => {
            for part in [
                "KERNELKIT_NVRTC_PATH=/nonexistent/libnvrtc.so.12",
                "could not be loaded",
                "unset it",
            ] {
                assert!(reason.contains(part), "{part} missing from {reason}");
            }
        }
        Err(other) => panic!("expected DeviceError::Unavailable, got {other}"),
        Ok(_) => panic!("a device opened with NVRTC at /nonexistent"),
    }
}

#[test]
fn the_nvrtc_the_setting_names_compiles() {
    const TEST: &str = "the_nvrtc_the_setting_names_compiles";
    let Some(nvrtc) = std::env::var_os("KK_TEST_NVRTC") else {
        println!("skipped: KK_TEST_NVRTC names no libnvrtc.so.*");
        return;
    };
    if !in_child(TEST, &[("KERNELKIT_NVRTC_PATH", nvrtc)]) {
        return;
    }
    let Some(opened) = open() else { return };
    let dev = opened.expect("a device opens with the NVRTC of the setting");
    // A header and threadgroup memory, compiled with this NVRTC's options.
    let k = Kernel::builder("nvrtc_setting")
        .inputs(["inp"])
        .outputs(["out"])
        .header("inline float twice(float v) { return 2.0f * v; }")
        .source(
            "threadgroup float tile[64];\n\
             uint i = thread_position_in_grid.x;\n\
             tile[i] = inp[i];\n\
             threadgroup_barrier(mem_flags::mem_threadgroup);\n\
             out[i] = twice(tile[i]) + 1.0f;",
        )
        .build()
        .unwrap();
    let x = dev.array_from_slice(&[0.5f32; 64], [64]).unwrap();
    k.call([&x])
        .output([64], DType::F32)
        .grid([64, 1, 1])
        .threadgroup([64, 1, 1])
        .launch()
        .expect("compiled by the NVRTC of the setting and launched");
}

#[test]
fn an_nvrtc_older_than_12_8_is_refused_when_the_device_opens() {
    const TEST: &str = "an_nvrtc_older_than_12_8_is_refused_when_the_device_opens";
    let Some(nvrtc) = std::env::var_os("KK_TEST_OLD_NVRTC") else {
        println!("skipped: KK_TEST_OLD_NVRTC names no NVRTC older than 12.8");
        return;
    };
    if !in_child(TEST, &[("KERNELKIT_NVRTC_PATH", nvrtc)]) {
        return;
    }
    let Some(opened) = open() else { return };
    match opened {
        Err(Error::Device(DeviceError::Unavailable { reason, .. })) => {
            for part in [
                "is too old",
                "12.8 or newer",
                "nvidia-cuda-nvrtc-cu12>=12.8",
            ] {
                assert!(reason.contains(part), "{part} missing from {reason}");
            }
        }
        Err(other) => panic!("expected DeviceError::Unavailable, got {other}"),
        Ok(_) => panic!("a device opened with an NVRTC older than 12.8"),
    }
}
