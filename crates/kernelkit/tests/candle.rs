//! kernelkit kernels on candle tensors (feature `candle`, CPU): views with
//! their own strides and offsets, more than three inputs, several outputs,
//! results equal to candle's own.
#![cfg(feature = "candle")]

use candle_core::{DType, Device, IndexOp, Tensor};
use kernelkit::interop::candle::{launch, CandleError};
use kernelkit::Kernel;

/// `y = a*b + c*d` and `z = a - d` from four strided inputs: reads each
/// input through its strides (the views are not made contiguous).
#[test]
fn four_strided_inputs_two_outputs_agree_with_candle() {
    let dev = Device::Cpu;
    let idx = |n: &str| format!("{n}[row * {n}_strides[0] + col * {n}_strides[1]]");
    let body = format!(
        "uint i = thread_position_in_grid.x; uint row = i / a_shape[1], col = i % a_shape[1];\n\
         y[i] = {a} * {b} + {c} * {d};\n z[i] = {a} - {d};",
        a = idx("a"),
        b = idx("b"),
        c = idx("c"),
        d = idx("d")
    );
    let k = Kernel::builder("fma4")
        .inputs(["a", "b", "c", "d"])
        .outputs(["y", "z"])
        .source(body)
        .ensure_row_contiguous(false)
        .build()
        .unwrap();
    let big = Tensor::arange(0f32, 200.0, &dev)
        .unwrap()
        .reshape((10, 20))
        .unwrap();
    // A transposed tensor, a slice with a start offset, a column slice,
    // and a plain one.
    let a = big
        .i((0..4, 0..5))
        .unwrap()
        .t()
        .unwrap()
        .contiguous()
        .unwrap()
        .t()
        .unwrap();
    let b = big.i((3..7, 2..7)).unwrap();
    let c = big
        .t()
        .unwrap()
        .i((1..5, 4..9))
        .unwrap()
        .t()
        .unwrap()
        .t()
        .unwrap();
    let d = Tensor::ones((4, 5), candle_core::DType::F32, &dev).unwrap();
    assert!(!b.is_contiguous() && b.layout().start_offset() > 0);
    assert!(!c.is_contiguous());
    let out = launch(
        &k,
        &[&a, &b, &c, &d],
        &[(&[4, 5], DType::F32), (&[4, 5], DType::F32)],
        |call| call.grid([20, 1, 1]),
    )
    .unwrap();
    let want_y = ((&a * &b).unwrap() + (&c * &d).unwrap()).unwrap();
    let want_z = (&a - &d).unwrap();
    assert_eq!(
        out[0].to_vec2::<f32>().unwrap(),
        want_y.to_vec2::<f32>().unwrap()
    );
    assert_eq!(
        out[1].to_vec2::<f32>().unwrap(),
        want_z.to_vec2::<f32>().unwrap()
    );
}

#[test]
fn unsupported_dtypes_are_errors() {
    let k = Kernel::builder("noop")
        .inputs(["x"])
        .outputs(["y"])
        .source("(void)x; (void)y;")
        .build()
        .unwrap();
    let x = Tensor::zeros(4, DType::F8E4M3, &Device::Cpu).unwrap();
    let r = launch(&k, &[&x], &[(&[4], DType::F32)], |c| c.grid([1, 1, 1]));
    assert!(matches!(r, Err(CandleError::Unsupported { .. })), "{r:?}");
}

/// A CPU tensor and a CUDA one, or CUDA tensors of two candle devices, in
/// one call: an error naming the input.
#[test]
fn inputs_of_mixed_devices_are_errors() {
    let k = Kernel::builder("pair")
        .inputs(["x", "z"])
        .outputs(["y"])
        .source("uint i = thread_position_in_grid.x; y[i] = x[i] + z[i];")
        .build()
        .unwrap();
    let Some(gpu) = cuda::gpu() else { return };
    let x = Tensor::zeros(4, DType::F32, &Device::Cpu).unwrap();
    let z = Tensor::zeros(4, DType::F32, &gpu).unwrap();
    for inputs in [[&x, &z], [&z, &x]] {
        let r = launch(&k, &inputs, &[(&[4], DType::F32)], |c| c.grid([4, 1, 1]));
        match r {
            Err(CandleError::Unsupported { kernel, what }) => {
                assert_eq!(kernel, "pair");
                assert!(what.contains("input 1"), "{what}");
            }
            other => panic!("{other:?}"),
        }
    }
}

/// candle's CUDA tensors (a build with `--cfg kernelkit_candle_cuda`, see
/// scripts/candle-cuda.sh): each test skips, saying why, without a GPU.
mod cuda {
    use super::*;

    /// candle's CUDA device 0, or `None` (printed) where there is none.
    pub(super) fn gpu() -> Option<Device> {
        if !candle_core::utils::cuda_is_available() {
            eprintln!("skipped: candle is built without CUDA (scripts/candle-cuda.sh)");
            return None;
        }
        match Device::new_cuda(0) {
            Ok(d) => Some(d),
            Err(e) => {
                let e = e.to_string();
                eprintln!(
                    "skipped: no CUDA device ({})",
                    e.lines().next().unwrap_or("")
                );
                None
            }
        }
    }

    /// The four-input kernel of the CPU test on CUDA: strided views with
    /// offsets read in place, two outputs, equal to candle's own ops.
    #[test]
    fn four_strided_inputs_two_outputs_agree_with_candle() {
        let Some(dev) = gpu() else { return };
        let idx = |n: &str| format!("{n}[row * {n}_strides[0] + col * {n}_strides[1]]");
        let body = format!(
            "uint i = thread_position_in_grid.x; uint row = i / a_shape[1], col = i % a_shape[1];\n\
             y[i] = {a} * {b} + {c} * {d};\n z[i] = {a} - {d};",
            a = idx("a"),
            b = idx("b"),
            c = idx("c"),
            d = idx("d")
        );
        let k = Kernel::builder("fma4")
            .inputs(["a", "b", "c", "d"])
            .outputs(["y", "z"])
            .source(body)
            .ensure_row_contiguous(false)
            .build()
            .unwrap();
        let big = Tensor::arange(0f32, 200.0, &dev)
            .unwrap()
            .reshape((10, 20))
            .unwrap();
        let a = big.i((0..5, 0..4)).unwrap().t().unwrap();
        let b = big.i((3..7, 2..7)).unwrap();
        let c = big.t().unwrap().i((4..9, 1..5)).unwrap().t().unwrap();
        let d = Tensor::ones((4, 5), DType::F32, &dev).unwrap();
        assert!(!a.is_contiguous() && !c.is_contiguous());
        assert!(b.layout().start_offset() > 0);
        let out = launch(
            &k,
            &[&a, &b, &c, &d],
            &[(&[4, 5], DType::F32), (&[4, 5], DType::F32)],
            |call| call.grid([20, 1, 1]),
        )
        .unwrap();
        assert!(out[0].device().is_cuda() && out[1].device().is_cuda());
        let want_y = ((&a * &b).unwrap() + (&c * &d).unwrap()).unwrap();
        let want_z = (&a - &d).unwrap();
        assert_eq!(
            out[0].to_vec2::<f32>().unwrap(),
            want_y.to_vec2::<f32>().unwrap()
        );
        assert_eq!(
            out[1].to_vec2::<f32>().unwrap(),
            want_z.to_vec2::<f32>().unwrap()
        );
    }

    /// 200 calls, each reading the last one's output, then candle's own
    /// ops on the result, with no synchronize between them: correct only
    /// if every launch is queued on candle's stream, in order.
    #[test]
    fn calls_queue_in_order_on_candles_stream() {
        let Some(dev) = gpu() else { return };
        let k = Kernel::builder("inc")
            .inputs(["x"])
            .outputs(["y"])
            .source("uint i = thread_position_in_grid.x; if (i < x_shape[0]) y[i] = x[i] + 1.0f;")
            .build()
            .unwrap();
        let n = 1 << 20;
        let mut t = Tensor::zeros(n, DType::F32, &dev).unwrap();
        for _ in 0..200 {
            t = launch(&k, &[&t], &[(&[n], DType::F32)], |c| {
                c.grid([n as u64, 1, 1])
            })
            .unwrap()
            .remove(0);
        }
        let t = (t * 2.0).unwrap();
        let v = t.to_vec1::<f32>().unwrap();
        assert!(v.iter().all(|&x| x == 400.0), "{:?}", &v[..4]);
    }

    /// Every dtype kernelkit shares with candle, as input and output,
    /// through a transposed view.
    #[test]
    fn each_dtype_round_trips_through_a_strided_view() {
        let Some(dev) = gpu() else { return };
        for dtype in [
            DType::U8,
            DType::U32,
            DType::I16,
            DType::I32,
            DType::I64,
            DType::BF16,
            DType::F16,
            DType::F32,
            DType::F64,
        ] {
            let k = Kernel::builder("copy_t")
                .inputs(["x"])
                .outputs(["y"])
                .source(
                    "uint i = thread_position_in_grid.x; uint r = i / x_shape[1], c = i % x_shape[1];\n\
                     y[i] = x[r * x_strides[0] + c * x_strides[1]];",
                )
                .ensure_row_contiguous(false)
                .build()
                .unwrap();
            let x = Tensor::arange(0u32, 12, &Device::Cpu)
                .unwrap()
                .to_dtype(dtype)
                .unwrap()
                .reshape((3, 4))
                .unwrap()
                .to_device(&dev)
                .unwrap()
                .t()
                .unwrap();
            let out = launch(&k, &[&x], &[(&[4, 3], dtype)], |c| c.grid([12, 1, 1]))
                .unwrap()
                .remove(0);
            let host = |t: &Tensor| {
                let t = t.to_device(&Device::Cpu).unwrap();
                t.to_dtype(DType::F64).unwrap().to_vec2::<f64>().unwrap()
            };
            let (got, want) = (host(&out), host(&x));
            assert_eq!(got, want, "{dtype:?}");
        }
    }

    /// An input of a dtype kernelkit lacks is an error, on CUDA too.
    #[test]
    fn unsupported_dtypes_are_errors() {
        let Some(dev) = gpu() else { return };
        let k = Kernel::builder("noop")
            .inputs(["x"])
            .outputs(["y"])
            .source("(void)x; (void)y;")
            .build()
            .unwrap();
        let x = Tensor::zeros(4, DType::F8E4M3, &dev).unwrap();
        let r = launch(&k, &[&x], &[(&[4], DType::F32)], |c| c.grid([1, 1, 1]));
        assert!(matches!(r, Err(CandleError::Unsupported { .. })), "{r:?}");
    }
}
