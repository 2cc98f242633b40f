use kernelkit::{DType, Device, Kernel};

#[test]
fn add_offset_runs_on_cpu() {
    let device = Device::new_cpu();
    let stream = device.new_stream().unwrap();
    let kernel = Kernel::builder("add_offset")
        .inputs(["inp"])
        .outputs(["out"])
        .source("uint i = thread_position_in_grid.x; out[i] = inp[i] + OFFSET;")
        .build()
        .unwrap();
    let data: Vec<f32> = (0..1000).map(|i| i as f32).collect();
    let x = device.array_from_slice(&data, [1000]).unwrap();
    let out = kernel
        .call([&x])
        .template("OFFSET", 3)
        .output([1000], DType::F32)
        .grid([1000, 1, 1])
        .threadgroup([256, 1, 1])
        .on(&stream)
        .launch()
        .unwrap();
    let host: Vec<f32> = out[0].to_vec().unwrap();
    assert_eq!(host, data.iter().map(|v| v + 3.0).collect::<Vec<_>>());
    println!("{}", device.cache_stats().summary());
}
