//! A kernel written for MLX's `mx.fast.metal_kernel`, run by kernelkit with
//! its body unchanged: the same Metal dialect (`thread_position_in_grid`,
//! `metal::` math, template type `T`), the same generated arguments
//! (`x_shape`, `x_strides`, `x_ndim` for an input `x`), MLX's `elem_to_loc`
//! helper, and the same switch for strided inputs
//! (`ensure_row_contiguous=False`).
//!
//! In MLX the call reads:
//!
//! ```python
//! kernel = mx.fast.metal_kernel(name="softplus_strided", input_names=["x"],
//!                               output_names=["y"], source=SOURCE,
//!                               ensure_row_contiguous=False)
//! (y,) = kernel(inputs=[x.T], template=[("T", mx.float32)],
//!               grid=(x.size, 1, 1), threadgroup=(256, 1, 1),
//!               output_shapes=[x.T.shape], output_dtypes=[mx.float32])
//! ```
//!
//! Below is the same call in Rust, on a transposed view (read in place
//! through its strides, no copy); the Python package takes the MLX call
//! above as it is (`kernelkit.metal_kernel`). What kernelkit accepts of
//! MLX's Metal, and what it refuses with a message, is listed in the
//! README's "Metal bodies on CUDA and the CPU".
//!
//! Run: `cargo run -p kernelkit --example mlx_metal_port` (`--features cuda`
//! for a GPU).

use kernelkit::{DType, Device, Kernel};

/// The body as it is passed to `mx.fast.metal_kernel`: softplus of a
/// strided input, element `elem` of the output read from wherever the view
/// keeps it.
const SOURCE: &str = "
    uint elem = thread_position_in_grid.x;
    uint loc = elem_to_loc(elem, x_shape, x_strides, x_ndim);
    T v = x[loc];
    y[elem] = metal::log(T(1) + metal::exp(v));
";

fn main() -> Result<(), kernelkit::Error> {
    let device = Device::default_device()?;
    let stream = device.new_stream()?;
    let kernel = Kernel::builder("softplus_strided")
        .inputs(["x"])
        .outputs(["y"])
        .source(SOURCE)
        .ensure_row_contiguous(false)
        .build()?;

    let (rows, cols) = (4, 8);
    let values: Vec<f32> = (0..rows * cols).map(|i| i as f32 * 0.25 - 4.0).collect();
    let x = device.array_from_slice(&values, [rows, cols])?;
    // An (8, 4) view with strides (1, 8): not row-contiguous.
    let xt = x.transpose();
    let y = kernel
        .call([&xt])
        .template("T", DType::F32)
        .output([cols as i64, rows as i64], DType::F32)
        .grid([(rows * cols) as u64, 1, 1])
        .threadgroup([256, 1, 1])
        .on(&stream)
        .launch()?;
    let got: Vec<f32> = y[0].to_vec()?;

    // The same on the host: y[c][r] = softplus(x[r][c]).
    for c in 0..cols {
        for r in 0..rows {
            let v = values[r * cols + c];
            let want = (1.0 + v.exp()).ln();
            let at = got[c * rows + r];
            assert!(
                (at - want).abs() <= 1e-5 * want.abs().max(1.0),
                "y[{c}][{r}] = {at}, expected {want}"
            );
        }
    }
    println!(
        "softplus_strided on {}: an (8, 4) transposed view read in place, every element as on the host",
        device.label()
    );
    Ok(())
}
