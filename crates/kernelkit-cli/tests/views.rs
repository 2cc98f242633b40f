//! Every view kind of a spec file (`transpose`, `slice`, `broadcast`, and a
//! chain of two) against a reference written with plain loops, both with
//! `ensure_row_contiguous` (the kernel gets a row-major copy) and without
//! (the kernel gets the real strides and reads through `elem_to_loc`).

mod common;

use common::{assert_same, output, run_spec};
use serde_json::{json, Value};

/// `t` is a 3x4 float32 transposed, `s` a 3x4 int32 sliced with an offset
/// and steps, `b` a float16 vector broadcast to 3x4, `c` a 4x5 uint8
/// sliced then transposed. Every output is the view in row-major order;
/// `st` holds the strides each view reached the kernel with.
fn spec(ensure_row_contiguous: bool) -> Value {
    let t: Vec<Vec<f32>> = (0..3)
        .map(|i| (0..4).map(|j| (i * 4 + j) as f32 + 0.5).collect())
        .collect();
    let s: Vec<Vec<i32>> = (0..3)
        .map(|i| (0..4).map(|j| -(i * 4 + j)).collect())
        .collect();
    let c: Vec<Vec<u8>> = (0..4)
        .map(|i| (0..5).map(|j| (i * 5 + j) as u8).collect())
        .collect();
    let mut body = String::from("uint i = thread_position_in_grid.x;\n");
    for (name, size) in [("t", 12), ("s", 4), ("b", 12), ("c", 9)] {
        body.push_str(&format!(
            "if (i < {size}) o{name}[i] = {name}[elem_to_loc(i, {name}_shape, {name}_strides, {name}_ndim)];\n"
        ));
    }
    for (k, name) in ["t", "s", "b", "c"].iter().enumerate() {
        body.push_str(&format!(
            "if (i < 2) st[{k} * 2 + i] = {name}_strides[i];\n"
        ));
    }
    json!({
        "name": "views",
        "inputs": [["t", "float32", [3, 4]], ["s", "int32", [3, 4]], ["b", "float16", [4]], ["c", "uint8", [4, 5]]],
        "outputs": [["ot", "float32", [4, 3]], ["os", "int32", [2, 2]], ["ob", "float16", [3, 4]],
                    ["oc", "uint8", [3, 3]], ["st", "int64", [4, 2]]],
        "source": body,
        "ensure_row_contiguous": ensure_row_contiguous,
        "grid": [12],
        "threadgroup": [4],
        "data": {"t": t, "s": s, "b": [1.5, -2, 0.25, 8], "c": c},
        "views": {
            "t": {"transpose": [1, 0]},
            "s": {"slice": [[1, 3, 1], [1, 4, 2]]},
            "b": {"broadcast": [3, 4]},
            "c": [{"slice": [[1, 4, 1], [0, 5, 2]]}, {"transpose": [1, 0]}],
        },
    })
}

/// The views computed with loops over the same data.
fn check_views(result: &Value) {
    let t: Vec<Vec<f32>> = (0..4)
        .map(|j| (0..3).map(|i| (i * 4 + j) as f32 + 0.5).collect())
        .collect();
    assert_same(
        "transpose",
        output(result, "ot", "float32", &[4, 3]),
        &json!(t),
    );
    let mut s = vec![vec![0i32; 2]; 2];
    for (r, i) in (1..3).enumerate() {
        for (q, j) in (1..4).step_by(2).enumerate() {
            s[r][q] = -(i * 4 + j);
        }
    }
    assert_same("slice", output(result, "os", "int32", &[2, 2]), &json!(s));
    let row = [1.5, -2.0, 0.25, 8.0];
    assert_same(
        "broadcast",
        output(result, "ob", "float16", &[3, 4]),
        &json!([row, row, row]),
    );
    // Rows 1..4 and columns 0, 2, 4 of the 4x5 data, then transposed.
    let c: Vec<Vec<u8>> = (0..3)
        .map(|q| (0..3).map(|r| ((1 + r) * 5 + 2 * q) as u8).collect())
        .collect();
    assert_same(
        "slice then transpose",
        output(result, "oc", "uint8", &[3, 3]),
        &json!(c),
    );
}

#[test]
fn views_copied_to_row_major() {
    let result = run_spec(&spec(true));
    check_views(&result);
    // The kernel saw row-major copies.
    let strides = json!([[3, 1], [2, 1], [4, 1], [3, 1]]);
    assert_same("strides", output(&result, "st", "int64", &[4, 2]), &strides);
}

#[test]
fn views_passed_with_their_strides() {
    let result = run_spec(&spec(false));
    check_views(&result);
    // The kernel saw the views themselves: the transpose of a 3x4, a slice
    // with steps 1 and 2 of a 3x4, a broadcast (stride 0) and the transpose
    // of a column-stepped slice of a 4x5.
    let strides = json!([[1, 4], [4, 2], [0, 1], [2, 5]]);
    assert_same("strides", output(&result, "st", "int64", &[4, 2]), &strides);
}
