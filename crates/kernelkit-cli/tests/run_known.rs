//! `kernelkit run` on kernels whose results are known by hand, most of
//! them MLX's own custom-kernel test cases adapted to a spec file.

mod common;

use std::path::Path;

use common::{assert_f32, assert_same, flat, output, run_ok, run_spec};
use serde_json::json;

/// The example of issue 8 and the README, as shipped in `examples/specs`:
/// a transposed 2x2 input, an int32 `.npy` input (found relative to the
/// spec's folder, not the working directory), a 0-d input and unused
/// template arguments of all three kinds.
#[test]
fn the_basic_example() {
    let spec = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/specs/basic.json");
    let result = run_ok(&spec, &[]);
    let name = result["kernel_name"].as_str().unwrap();
    assert!(name.starts_with("custom_kernel_basic"), "{name}");
    // a = [[1, 2], [3, 4]] transposed and made contiguous: 1, 3, 2, 4;
    // b.npy = [1, 2, 3]; d = 7.3. Each element is (a + 1) + 7.3 in float32.
    let f = |a: f32| (a + 1.0) + 7.3f32;
    assert_f32(
        "out1",
        output(&result, "out1", "float32", &[2, 2]),
        &[f(1.0), f(3.0), f(2.0), f(4.0)],
    );
}

/// MLX's `test_custom_kernel_basic` with the exp body of its docs: a dtype
/// template argument and a position attribute.
#[test]
fn exp_elementwise() {
    let x = [[-1.5f32, 0.0, 0.25], [1.0, 2.0, -3.0]];
    let result = run_spec(&json!({
        "name": "myexp",
        "inputs": [["inp", "float32", [2, 3]]],
        "outputs": [["out", "float32", [2, 3]]],
        "source": "uint elem = thread_position_in_grid.x;\nT tmp = inp[elem];\nout[elem] = metal::exp(tmp) * threads_per_threadgroup.x;",
        "template": [["T", "float32"]],
        "grid": [6, 1, 1],
        "threadgroup": [2, 1, 1],
        "data": {"inp": x},
    }));
    let got = flat(output(&result, "out", "float32", &[2, 3]));
    for (g, v) in got.iter().zip(x.iter().flatten()) {
        let expected = f64::from(v.exp() * 2.0);
        assert!(
            (g - expected).abs() <= 1e-6 * expected.abs(),
            "{g} vs {expected}"
        );
    }
}

/// MLX's `test_custom_kernel_strides`: a transposed input passed with its
/// real strides (`ensure_row_contiguous = false`) and read through
/// `elem_to_loc`.
#[test]
fn strided_input_through_elem_to_loc() {
    let x = [[0.5f32, -1.0, 2.0], [1.5, 0.0, -0.25]];
    let result = run_spec(&json!({
        "name": "myexp_strided",
        "inputs": [["inp", "float32", [2, 3]]],
        "outputs": [["out", "float32", [3, 2]]],
        "source": "uint elem = thread_position_in_grid.x;\nuint loc = elem_to_loc(elem, inp_shape, inp_strides, inp_ndim);\nT tmp = inp[loc];\nout[elem] = metal::exp(tmp) * threads_per_threadgroup.x;",
        "ensure_row_contiguous": false,
        "template": [["T", "float32"]],
        "grid": [6, 1, 1],
        "threadgroup": [3, 1, 1],
        "data": {"inp": x},
        "views": {"inp": {"transpose": [1, 0]}},
    }));
    let got = flat(output(&result, "out", "float32", &[3, 2]));
    // The transpose in row-major order: column j of x is row j of the view.
    let view: Vec<f32> = (0..3).flat_map(|j| (0..2).map(move |i| x[i][j])).collect();
    for (g, v) in got.iter().zip(&view) {
        let expected = f64::from(v.exp() * 3.0);
        assert!(
            (g - expected).abs() <= 1e-6 * expected.abs(),
            "{g} vs {expected}"
        );
    }
}

/// An atomic reduction into outputs filled with `init_value` first.
#[test]
fn atomic_sum_and_max_start_from_init_value() {
    let values: Vec<i32> = (1..=100).collect();
    let result = run_spec(&json!({
        "name": "reduce",
        "inputs": [["inp", "int32", [100]]],
        "outputs": [["total", "int32", [1]], ["top", "float32", []]],
        "source": "uint i = thread_position_in_grid.x;\natomic_fetch_add_explicit(&total[0], inp[i], memory_order_relaxed);\natomic_fetch_max_explicit(&top[0], (float)inp[i] / 4.0f, memory_order_relaxed);",
        "atomic_outputs": true,
        "init_value": 40,
        "grid": [100],
        "threadgroup": [16],
        "data": {"inp": values},
    }));
    assert_same(
        "total",
        output(&result, "total", "int32", &[1]),
        &json!([40 + 5050]),
    );
    // max(40, 100 / 4) = 40: the fill is really there before the kernel.
    assert_same("top", output(&result, "top", "float32", &[]), &json!(40.0));
}

/// MLX's `test_custom_kernel_args`, adapted so every thread writes inside
/// its outputs: int, bool and dtype template arguments, a bfloat16 input,
/// a small (constant) input and a 0-d input.
fn args_case(e: bool) -> serde_json::Value {
    let mut a = [[0.0f32; 6]; 3];
    a[0][1] = 0.5;
    run_spec(&json!({
        "name": "arg_test",
        "inputs": [["a", "float32", [3, 6]], ["b", "int32", [3]], ["c", "bfloat16", [2, 2]], ["d", "float32", []]],
        "outputs": [["out1", "float32", [2, 2]], ["out2", "int32", [2, 2]], ["out3", "uint32", [4]]],
        "source": "uint elem = thread_position_in_grid.x;\nT tmp = a[0];\nif (e) {\n  out1[elem] = a[1] + b[2] + c[3] + d + f;\n} else {\n  out1[elem] = 1;\n}\nout2[elem] = a[1] + b[2] + c[1] - d;\nout3[elem] = sizeof(tmp);",
        "template": [["e", e], ["f", 3], ["T", "float16"]],
        "grid": [4, 1, 1],
        "threadgroup": [2, 1, 1],
        "data": {"a": a, "b": [3, 4, 5], "c": [[0, 4.0], [0, 1.5]], "d": 7.3},
    }))
}

#[test]
fn template_arguments_of_every_kind() {
    let result = args_case(true);
    let name = result["kernel_name"].as_str().unwrap();
    assert!(
        name.contains("float32s"),
        "the 0-d input is a scalar variant: {name}"
    );
    // ((((0.5 + 5) + 1.5) + 7.3) + 3) in float32.
    let sum = ((0.5f32 + 5.0 + 1.5) + 7.3f32) + 3.0;
    assert_f32(
        "out1",
        output(&result, "out1", "float32", &[2, 2]),
        &[sum; 4],
    );
    // int(0.5 + 5 + 4 - 7.3) = int(2.2) = 2.
    assert_same(
        "out2",
        output(&result, "out2", "int32", &[2, 2]),
        &json!([[2, 2], [2, 2]]),
    );
    // T = float16: two bytes.
    assert_same(
        "out3",
        output(&result, "out3", "uint32", &[4]),
        &json!([2, 2, 2, 2]),
    );

    let result = args_case(false);
    assert_same(
        "out1 with e = false",
        output(&result, "out1", "float32", &[2, 2]),
        &json!([[1, 1], [1, 1]]),
    );
}

/// A compile error: exit code 2, one line, then the compiler's log, which
/// points into the body.
#[test]
fn compile_errors_print_the_log_after_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let spec = common::write_spec(
        dir.path(),
        "broken.json",
        &json!({
            "name": "broken",
            "inputs": [["a", "float32", [4]]],
            "outputs": [["o", "float32", [4]]],
            "source": "uint i = thread_position_in_grid.x;\no[i] = a[i] + undefined_name;",
            "grid": [4],
            "data": {"a": [1, 2, 3, 4]},
        }),
    );
    let device = common::test_device();
    let out = common::kernelkit(&["run", spec.to_str().unwrap(), "--device", &device]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stdout.is_empty());
    let mut lines = out.stderr.lines();
    let first = lines.next().unwrap();
    assert!(
        first.starts_with("kernelkit run: kernel `broken`: "),
        "{first}"
    );
    assert!(first.contains("failed to compile"), "{first}");
    let log: Vec<&str> = lines.collect();
    assert!(
        log.iter().any(|l| l.contains("undefined_name")),
        "{}",
        out.stderr
    );
    assert!(
        log.iter().any(|l| l.contains("[body line 2]")),
        "{}",
        out.stderr
    );
}
