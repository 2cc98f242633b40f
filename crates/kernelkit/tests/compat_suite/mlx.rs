//! MLX's kernel utilities (mlx/backend/metal/kernels/utils.h) that bodies
//! use without including them, against index arithmetic done here.

use kernelkit::{DType, Device};

use super::*;

/// ceildiv, the elem_to_loc family on a strided view, Limits, WorkPerThread,
/// ConditionalType, cast_to and LoopedElemToLoc.
pub fn mlx_utils(device: Device) {
    // inp: a [4, 6] array viewed transposed ([6, 4], strides (1, 6)).
    let data: Vec<f32> = (0..24).map(|i| i as f32).collect();
    let base = device.array_from_slice(&data, [4, 6]).unwrap();
    let view = base.permute(&[1, 0]).unwrap();
    let body = "uint i = thread_position_in_grid.x;\n\
        uint r = i / 4, c = i % 4;\n\
        uint o = i * 10;\n\
        out[o + 0] = inp[elem_to_loc(i, inp_shape, inp_strides, inp_ndim)];\n\
        out[o + 1] = inp[elem_to_loc(uint3(c, r, 0), inp_shape, inp_strides, inp_ndim)];\n\
        out[o + 2] = inp[elem_to_loc_2(uint2(c, r), inp_strides)];\n\
        out[o + 3] = ceildiv(i + 1, 4u);\n\
        out[o + 4] = Limits<float>::max == INFINITY && Limits<half>::min == -INFINITY && Limits<int>::max == INT_MAX;\n\
        out[o + 5] = WorkPerThread<half>::n * 10 + WorkPerThread<float>::n;\n\
        out[o + 6] = sizeof(ConditionalType<true, int, short>::type) * 10 + sizeof(ConditionalType<false, int, short>::type);\n\
        out[o + 7] = cast_to<bool>(-0.0f) + 2 * cast_to<bool>(1e-30f) + 4 * cast_to<int>(2.7f);\n\
        LoopedElemToLoc<2, int> looper(inp_ndim);\n\
        for (uint k = 0; k < i; ++k) looper.next(inp_shape, inp_strides);\n\
        out[o + 8] = inp[looper.location()];\n\
        out[o + 9] = elem_to_loc_2_nd(uint3(c, r, 0), inp_shape, inp_strides, inp_strides, inp_ndim).y;";
    let n = 24usize;
    let kernel = kernelkit::Kernel::builder("mlx_utils")
        .inputs(["inp"])
        .outputs(["out"])
        .source(body)
        .ensure_row_contiguous(false)
        .build()
        .unwrap();
    let out = kernel
        .call([&view])
        .output([(n * 10) as i64], DType::F32)
        .grid([n as u64, 1, 1])
        .threadgroup([n as u64, 1, 1])
        .on(device.default_stream())
        .launch()
        .unwrap();
    let (mut want, mut labels) = (Vec::new(), Vec::new());
    for i in 0..n {
        let (r, c) = (i / 4, i % 4);
        // View element (r, c) is base element (c, r) = c * 6 + r.
        let v = (c * 6 + r) as f64;
        let row = [
            v,
            v,
            v,
            ((i + 1) as f64 / 4.0).ceil(),
            1.0,
            42.0,
            42.0,
            2.0 + 8.0,
            v,
            (c * 6 + r) as f64,
        ];
        for (k, w) in row.into_iter().enumerate() {
            want.push(w);
            labels.push(format!("row {k} of element {i}"));
        }
    }
    check("mlx utils", &labels, &floats(&out[0]), &want, |_| {
        Tol::Exact
    });
}
