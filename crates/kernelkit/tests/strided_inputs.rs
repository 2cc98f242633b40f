//! Strided inputs reach the kernel copied (ensure_row_contiguous) or as
//! views, through both `Call::launch` and a prepared `Launch`, on the CPU.

use kernelkit::{DType, Device, Kernel};

#[test]
fn strided_inputs_are_copied_once_per_call() {
    let dev = Device::new_cpu();
    let data: Vec<i32> = (0..12).collect();
    let a = dev.array_from_slice(&data, [3, 4]).unwrap();
    let t = a.transpose();
    let want: Vec<i32> = t.to_vec().unwrap();
    let k = Kernel::builder("pair")
        .inputs(["x", "y"])
        .outputs(["out"])
        .source("uint i = thread_position_in_grid.x; out[i] = x[i] * 100 + y[i];")
        .build()
        .unwrap();
    let y = dev.array_from_slice(&data, [12]).unwrap();
    let call = || {
        k.call([&t, &y])
            .output([12], DType::I32)
            .grid([12, 1, 1])
            .threadgroup([4, 1, 1])
    };
    let expect: Vec<i32> = want.iter().zip(&data).map(|(x, y)| x * 100 + y).collect();
    assert_eq!(call().launch().unwrap()[0].to_vec::<i32>().unwrap(), expect);
    let prepared = call().prepare().unwrap();
    assert_eq!(prepared.run().unwrap()[0].to_vec::<i32>().unwrap(), expect);
}
