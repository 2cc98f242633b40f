//! How a launch hands its inputs to the backend: as they are when they are
//! row-contiguous, as row-contiguous copies when they are not (and the
//! kernel asks for it), in their original order either way.

use kernelkit::{DType, Device, Kernel};

/// `out[i] = a[i] * 10 + b[i]` over 6 elements, reading both inputs flat.
fn kernel() -> Kernel {
    Kernel::builder("mix_inputs")
        .inputs(["a", "b"])
        .outputs(["out"])
        .source("uint i = thread_position_in_grid.x; out[i] = a[i] * 10.0f + b[i];")
        .build()
        .unwrap()
}

#[test]
fn a_strided_input_is_copied_and_a_contiguous_one_is_not_disturbed() {
    let device = Device::new_cpu();
    let stream = device.new_stream().unwrap();
    // a: 2x3 row-major 0..6; b: the transpose of a 3x2 array, so strided.
    let a = device
        .array_from_slice(&[0.0f32, 1.0, 2.0, 3.0, 4.0, 5.0], [2, 3])
        .unwrap();
    let b_base = device
        .array_from_slice(&[0.0f32, 1.0, 2.0, 3.0, 4.0, 5.0], [3, 2])
        .unwrap();
    let b = b_base.transpose();
    assert!(a.is_row_contiguous() && !b.is_row_contiguous());
    // b read row-major: [[0, 2, 4], [1, 3, 5]].
    let expect_b = [0.0f32, 2.0, 4.0, 1.0, 3.0, 5.0];
    let k = kernel();
    for (first, second, expected) in [
        (
            &a,
            &b,
            [0, 1, 2, 3, 4, 5].map(|i| i as f32 * 10.0 + expect_b[i]),
        ),
        (
            &b,
            &a,
            [0, 1, 2, 3, 4, 5].map(|i| expect_b[i] * 10.0 + i as f32),
        ),
        (&a, &a, [0, 1, 2, 3, 4, 5].map(|i| i as f32 * 11.0)),
    ] {
        let launch = k
            .call([first, second])
            .output([6], DType::F32)
            .grid([6, 1, 1])
            .on(&stream)
            .prepare()
            .unwrap();
        // Twice from one launch: the inputs it owns are not consumed.
        for _ in 0..2 {
            let out: Vec<f32> = launch.run().unwrap()[0].to_vec().unwrap();
            assert_eq!(out, expected);
        }
    }
    // The strided input itself is untouched by the copy.
    assert_eq!(b.to_vec::<f32>().unwrap(), expect_b);
}
