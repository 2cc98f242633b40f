//! Failures of `kernelkit run` and `kernelkit source`: exit code 2, nothing
//! on stdout, one line on stderr that names the field or the input. None
//! of these reaches the compiler.

mod common;

use common::{fails, run_fails, write_spec};
use serde_json::{json, Value};

fn base() -> Value {
    json!({
        "name": "k",
        "inputs": [["a", "float32", [2, 2]], ["n", "int8", [3]]],
        "outputs": [["o", "float32", [2, 2]]],
        "source": "uint i = thread_position_in_grid.x; o[i] = a[i] + n[0];",
        "grid": [4],
        "data": {"a": [[1, 2], [3, 4]], "n": [1, 2, 3]},
    })
}

fn with(changes: Value) -> Value {
    let mut spec = base();
    for (k, v) in changes.as_object().unwrap() {
        if v.is_null() {
            spec.as_object_mut().unwrap().remove(k);
        } else {
            spec[k] = v.clone();
        }
    }
    spec
}

fn expect(changes: Value, fragments: &[&str]) {
    let line = run_fails(&with(changes));
    assert!(line.starts_with("kernelkit run: "), "{line}");
    for f in fragments {
        assert!(line.contains(f), "{line:?} lacks {f:?}");
    }
}

#[test]
fn spec_errors_name_the_field() {
    expect(
        json!({"ensure_row_contigous": false}),
        &[
            "unknown field `ensure_row_contigous`",
            "did you mean `ensure_row_contiguous`",
        ],
    );
    expect(
        json!({"grid": null}),
        &["missing field `grid` (required by `kernelkit run`)"],
    );
    expect(json!({"source": null}), &["missing field `source`"]);
    expect(
        json!({"inputs": [["a", "float33", [2, 2]]]}),
        &["`inputs[0]` (`a`)", "unknown dtype `float33`"],
    );
    expect(
        json!({"template": [["N", 2.5]]}),
        &["`template[0]` (`N`)", "2.5 is not an integer"],
    );
    expect(
        json!({"template": [["N", 4294967296u64]]}),
        &["`template[0]` (`N`)", "does not fit a 32-bit int"],
    );
    expect(
        json!({"views": {"a": {"transpose": [1, 0], "slice": []}}}),
        &["`views.a`", "exactly one of"],
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("broken.json");
    std::fs::write(&path, "{\"name\": \"k\",\n \"inputs\": [}").unwrap();
    let line = fails(&["run", path.to_str().unwrap()]);
    assert!(
        line.contains("spec is not valid JSON") && line.contains("line 2"),
        "{line}"
    );
    let line = fails(&["run", dir.path().join("absent.json").to_str().unwrap()]);
    assert!(line.contains("cannot read spec"), "{line}");
}

#[test]
fn data_errors_name_the_input() {
    expect(
        json!({"data": {"a": [[1, 2], [3, 4]]}}),
        &["input `n`: no data given"],
    );
    expect(
        json!({"data": {"a": [[1, 2], [3, 4]], "n": [1, 2, 300]}}),
        &["input `n`", "element [2] = 300 is out of range for int8"],
    );
    expect(
        json!({"data": {"a": [[1, 2], [3, 4]], "n": [1, 2.5, 3]}}),
        &["input `n`", "element [1] = 2.5 is not an integer"],
    );
    expect(
        json!({"data": {"a": [[1, 2, 3], [3, 4, 5]], "n": [1, 2, 3]}}),
        &["input `a`", "should be a list of 2"],
    );
    expect(
        json!({"data": {"a": [1, 2, 3], "n": [1, 2, 3]}}),
        &["input `a`", "shape [2, 2]"],
    );
    expect(
        json!({"data": {"a": [[1, 2], [3, 4]], "n": [1, 2, 3], "m": 1}}),
        &["`data.m`", "`m` is not an input (inputs: a, n)"],
    );
    expect(
        json!({"data": {"a": "missing.npy", "n": [1, 2, 3]}}),
        &["input `a`: cannot read", "missing.npy"],
    );
    expect(
        json!({"views": {"a": {"transpose": [0, 0]}}}),
        &["input `a`: view transpose [0, 0]", "not a permutation"],
    );
    expect(
        json!({"views": {"n": {"broadcast": [2, 4]}}}),
        &["input `n`: view broadcast [2, 4]"],
    );
}

#[test]
fn npy_files_that_do_not_fit_name_the_input() {
    let dir = tempfile::tempdir().unwrap();
    // A file kernelkit wrote itself: a 2x2 float32 array read as int8[3].
    let out = dir.path().join("out");
    let first = write_spec(dir.path(), "first.json", &base());
    common::run_ok(&first, &["--out-dir", out.to_str().unwrap()]);
    let spec = with(json!({"data": {"a": [[1, 2], [3, 4]], "n": "out/o.npy"}}));
    let path = write_spec(dir.path(), "second.json", &spec);
    let line = fails(&["run", path.to_str().unwrap(), "--device", "cpu"]);
    assert!(
        line.contains("input `n`") && line.contains("holds <f4 (float32), but the input is int8"),
        "{line}"
    );
    let spec = with(
        json!({"inputs": [["a", "float32", [4]], ["n", "int8", [3]]], "data": {"a": "out/o.npy", "n": [1, 2, 3]}}),
    );
    let path = write_spec(dir.path(), "third.json", &spec);
    let line = fails(&["run", path.to_str().unwrap(), "--device", "cpu"]);
    assert!(
        line.contains("input `a`")
            && line.contains("has shape [2, 2], but the input is declared with shape [4]"),
        "{line}"
    );
}

#[test]
fn library_errors_name_the_kernel_and_the_argument() {
    expect(
        json!({"inputs": [["a b", "float32", [2, 2]], ["n", "int8", [3]]], "data": {}}),
        &["kernel `k`", "input name `a b`"],
    );
    expect(
        json!({"outputs": [["o", "float32", [0]]]}),
        &["kernel `k`: output `o` has shape [0]"],
    );
    expect(
        json!({"init_value": 1.5, "outputs": [["o", "int32", [2, 2]]]}),
        &["init_value 1.5 does not fit output `o` of dtype int32"],
    );
    expect(
        json!({"threadgroup": [100000, 1, 1]}),
        &["kernel `k`: threadgroup"],
    );
    expect(
        json!({"template": [["a", 1]]}),
        &["template argument `a` has the name of input `a`"],
    );
}

#[test]
fn device_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_spec(dir.path(), "spec.json", &base());
    let line = fails(&["run", path.to_str().unwrap(), "--device", "tpu:0"]);
    assert!(
        line.contains("device tpu:0") && line.contains("expected `cpu`, `cuda` or `cuda:N`"),
        "{line}"
    );
    if !cfg!(feature = "cuda") {
        let line = fails(&["run", path.to_str().unwrap(), "--device", "cuda:1"]);
        assert!(
            line.contains("cuda:1") && line.contains("`cuda` feature"),
            "{line}"
        );
    }
}

#[test]
fn source_errors_are_the_same_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_spec(
        dir.path(),
        "spec.json",
        &with(json!({"atomic_output": true})),
    );
    let line = fails(&["source", "--dialect", "cuda", path.to_str().unwrap()]);
    assert_eq!(
        line,
        "kernelkit source: spec: unknown field `atomic_output` (did you mean `atomic_outputs`?)"
    );
    let path = write_spec(
        dir.path(),
        "spec2.json",
        &with(json!({"template": [["T", "quad"]]})),
    );
    let line = fails(&["source", "--dialect", "metal", path.to_str().unwrap()]);
    assert!(
        line.starts_with("kernelkit source: spec: `template[0]` (`T`): unknown dtype `quad`"),
        "{line}"
    );
}
