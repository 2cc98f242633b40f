//! Autotuning on CUDA: a tuned call gives the kernel's results and times
//! its key once with events on the call's stream; the caller's `out=`
//! array is written once; under a CUDA graph capture a tuned key launches
//! its recorded choice and an untuned key is `CallError::Capturing`,
//! leaving the capture valid; the batches a tuning replays as graphs pin
//! no module. Runs on a GPU or on the stand-in driver of
//! `tools/fakecuda` (where kernels do not run: results are not checked
//! there), and skips without either.

#![cfg(feature = "cuda")]

use cudarc::driver::sys;
use kernelkit::{CacheMode, CallError, DType, Device, Error, Kernel, TuneConfig, Tuning};

#[path = "common/gpu.rs"]
mod on_gpu;
use on_gpu::{alone, foreign_stream, gpu, stand_in};

mod standin {
    use super::*;

    const N: usize = 4096;

    fn kernel(tag: &str) -> Kernel {
        Kernel::builder("cuda_tuned")
            .inputs(["inp"])
            .outputs(["out"])
            .source(format!(
                "// {tag}\nuint i = thread_position_in_grid.x;\n\
                 if (i < inp_shape[0]) out[i] += inp[i] * float(S);"
            ))
            .build()
            .unwrap()
    }

    fn tuning() -> Tuning {
        Tuning::new([32u64, 128, 512].map(|tg| TuneConfig::new([tg, 1, 1]).template("S", 2)))
    }

    #[test]
    fn a_tuned_call_times_once_and_writes_out_once() {
        alone(|| {
            let Some(dev) = gpu() else { return };
            let real = !stand_in(&dev);
            let k = kernel("once");
            let t = tuning();
            let x = dev.array_from_slice(&[1.0f32; N], [N]).unwrap();
            let start: Vec<f32> = (0..N).map(|i| i as f32).collect();
            let out = dev.array_from_slice(&start, [N]).unwrap();
            for _ in 0..2 {
                k.call([&x])
                    .output_into(&out)
                    .grid([N as u64, 1, 1])
                    .tuned(&t)
                    .launch()
                    .unwrap();
            }
            let s = dev.cache_stats();
            assert_eq!(s.tunes, 1, "{}", s.summary());
            assert!(s.tune_launches >= 3 * 5, "{}", s.summary());
            if real {
                let want: Vec<f32> = start.iter().map(|v| v + 4.0).collect();
                assert_eq!(
                    out.to_vec::<f32>().unwrap(),
                    want,
                    "two real runs, no timing run"
                );
                let record = t
                    .record(
                        &k.call([&x])
                            .output([N as i64], DType::F32)
                            .grid([N as u64, 1, 1]),
                    )
                    .unwrap();
                assert!(
                    record
                        .configs
                        .iter()
                        .all(|c| c.time_ns.is_some_and(|t| t > 0)),
                    "{record:?}"
                );
                assert!(record.target.contains("driver"), "{}", record.target);
            }
        });
    }

    /// A tuning whose outputs kernelkit allocates times its batches as
    /// graphs captured on a private stream. Those captures pin no module
    /// (the tuning holds their functions while it times): on a device that
    /// keeps two modules loaded, three other variants called after a
    /// tuning of three (each its own module) leave at most two loaded, and the tuned call's result is
    /// right.
    #[test]
    fn timed_graphs_pin_no_module() {
        alone(|| {
            let dev = match Device::builder()
                .cache_mode(CacheMode::Memory)
                .max_loaded_modules(2)
                .cuda(0)
            {
                Ok(d) => d,
                Err(e) => {
                    println!("skipped: {e}");
                    return;
                }
            };
            let real = !stand_in(&dev);
            let k = Kernel::builder("cuda_tuned_scale")
                .inputs(["inp"])
                .outputs(["out"])
                .source(
                    "uint i = thread_position_in_grid.x;\n\
                     if (i < inp_shape[0]) out[i] = inp[i] * float(S) + float(U) * 0.0f;",
                )
                .build()
                .unwrap();
            // Three configurations, three variants (three modules).
            let t = Tuning::new(
                [(32u64, 1), (128, 2), (512, 3)]
                    .map(|(tg, u)| TuneConfig::new([tg, 1, 1]).template("U", u)),
            );
            let x = dev.array_from_slice(&[1.5f32; N], [N]).unwrap();
            let y = k
                .call([&x])
                .output([N as i64], DType::F32)
                .grid([N as u64, 1, 1])
                .template("S", 2)
                .tuned(&t)
                .launch()
                .unwrap()
                .into_iter()
                .next()
                .unwrap();
            assert_eq!(dev.cache_stats().tunes, 1);
            if real {
                assert!(y.to_vec::<f32>().unwrap().iter().all(|&v| v == 3.0));
            }
            for s in 3..6 {
                let z = k
                    .call([&x])
                    .output([N as i64], DType::F32)
                    .grid([N as u64, 1, 1])
                    .threadgroup([64, 1, 1])
                    .template("S", s)
                    .template("U", 0)
                    .launch()
                    .unwrap();
                drop(z);
            }
            assert!(
                dev.loaded_modules() <= 2,
                "{} modules loaded: a timing capture pinned one ({:?})",
                dev.loaded_modules(),
                dev.cache_stats()
            );
        });
    }

    #[test]
    fn under_capture_a_tuned_key_launches_and_an_untuned_key_is_refused() {
        alone(|| {
            let Some(dev) = gpu() else { return };
            let (raw, stream) = foreign_stream(&dev);
            let k = kernel("capture");
            let t = tuning();
            let x = dev.array_from_slice(&[1.0f32; N], [N]).unwrap();
            let call = || {
                k.call([&x])
                    .output([N as i64], DType::F32)
                    .grid([N as u64, 1, 1])
                    .on(&stream)
                    .tuned(&t)
            };
            call().launch().unwrap();
            stream.synchronize().unwrap();
            let small = dev.array_from_slice(&[1.0f32; 64], [64]).unwrap();
            // SAFETY: a live stream; global mode, as PyTorch's default.
            let r = unsafe {
                sys::cuStreamBeginCapture_v2(
                    raw,
                    sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL,
                )
            };
            assert_eq!(r, sys::CUresult::CUDA_SUCCESS);
            drop(call().launch().unwrap());
            let refused = k
                .call([&small])
                .output([64], DType::F32)
                .grid([64, 1, 1])
                .on(&stream)
                .tuned(&t)
                .launch();
            match refused {
                Err(Error::Call(CallError::Capturing { what, .. })) => {
                    assert!(what.contains("tuning key"), "{what}")
                }
                Err(other) => panic!("expected CallError::Capturing, got {other}"),
                Ok(_) => panic!("an untuned key was timed under capture"),
            }
            let mut graph: sys::CUgraph = std::ptr::null_mut();
            // SAFETY: the stream this test began capturing; writes one handle.
            let r = unsafe { sys::cuStreamEndCapture(raw, &mut graph) };
            assert_eq!(r, sys::CUresult::CUDA_SUCCESS, "the capture stayed valid");
            // SAFETY: the graph just made, used no more.
            unsafe { sys::cuGraphDestroy(graph) };
            drop((x, small, stream));
            // SAFETY: every kernelkit object that used the stream is gone.
            unsafe { sys::cuStreamDestroy_v2(raw) };
        });
    }
}
