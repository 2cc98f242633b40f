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
