//! The first kernel: a body written inline, called with an array, its
//! output read back.
//!
//! Run: `cargo run -p kernelkit --example quick_start` (add `--features
//! cuda` to run on a GPU where there is one; without it, or without a GPU,
//! the kernel runs on the CPU through the system C++ compiler).
//!
//! What happens on the first call: kernelkit generates the full source of
//! this variant (the body, its arguments, `OFFSET = 3`), compiles it, keeps
//! it in memory (and on disk, see `KERNELKIT_CACHE`), and launches it. The
//! second call with the same shapes, dtypes and template values finds it
//! compiled: `cache_stats()` shows one compile for the two calls.

use kernelkit::{DType, Device, Kernel};

fn main() -> Result<(), kernelkit::Error> {
    // CUDA if the `cuda` feature is on and a GPU answers, else the CPU.
    let device = Device::default_device()?;
    let stream = device.new_stream()?;

    // A kernel is a body in MLX's Metal dialect and the names of its
    // arguments; `thread_position_in_grid` is this thread's index.
    let kernel = Kernel::builder("add_offset")
        .inputs(["inp"])
        .outputs(["out"])
        .source("uint i = thread_position_in_grid.x; out[i] = inp[i] + OFFSET;")
        .build()?;

    let n = 1024;
    let values: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let x = device.array_from_slice(&values, [n])?;
    let call = |offset: i32| {
        kernel
            .call([&x])
            .template("OFFSET", offset)
            .output([n as i64], DType::F32)
            .grid([n as u64, 1, 1])
            .threadgroup([256, 1, 1])
            .on(&stream)
            .launch()
    };

    let first = call(3)?;
    let again = call(3)?;
    let out: Vec<f32> = again[0].to_vec()?;
    assert_eq!(first[0].to_vec::<f32>()?, out);
    for (i, v) in out.iter().enumerate() {
        assert_eq!(*v, i as f32 + 3.0, "element {i}");
    }

    // The second call found the first one's compile (in memory, or on
    // disk from an earlier run: then there was none).
    let stats = device.cache_stats();
    assert!(stats.compiles <= 1, "{stats:?}");
    println!(
        "add_offset on {}: out[0..4] = {:?}; {} compile(s) for 2 calls",
        device.label(),
        &out[..4],
        stats.compiles
    );
    Ok(())
}
