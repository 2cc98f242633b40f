//! `kernelkit run` on spec files that once aborted it, overflowed its
//! stack, panicked or left a partial output behind: each must now fail as
//! documented (exit code 2, one line on stderr naming what is wrong), or,
//! for `--out-dir`, publish whole files or nothing. The slow or
//! memory-hungry ones run under an address-space limit, so that an
//! allocation sized from the spec fails at once instead of paging.

mod common;

use std::path::Path;

use common::{kernelkit, kernelkit_limited, npy_bytes, one_line_failure, write_spec};
use serde_json::{json, Value};

/// A one-input, one-output spec that runs (`out = a + 1`) with `a` given.
fn spec(a: Value, a_shape: Value, data: Value) -> Value {
    json!({
        "name": "k",
        "inputs": [["a", "float32", a_shape]],
        "outputs": [["out", "float32", [1]]],
        "source": "out[0] = a[0] + 1.0f;",
        "grid": [1],
        "data": {"a": data},
        "views": a,
    })
}

fn run(dir: &Path, spec: &Value, extra: &[&str]) -> common::Outcome {
    let path = write_spec(dir, "spec.json", spec);
    let mut args = vec!["run", path.to_str().unwrap(), "--device", "cpu"];
    args.extend_from_slice(extra);
    kernelkit_limited(&args, &[])
}

fn without_views(mut spec: Value) -> Value {
    spec.as_object_mut().unwrap().remove("views");
    spec
}

/// The files in `dir`, sorted.
fn files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn a_huge_declared_input_shape_is_a_data_error() {
    // The data reader once reserved room for 10^12 elements before
    // comparing the shape with the data: `memory allocation of
    // 8000000000000 bytes failed`, exit 134.
    let dir = tempfile::tempdir().unwrap();
    let s = without_views(spec(
        json!(null),
        json!([1_000_000_000_000u64]),
        json!([1.0]),
    ));
    let line = one_line_failure(&run(dir.path(), &s, &[]));
    assert!(line.contains("input `a`"), "{line}");
    assert!(line.contains("1000000000000"), "{line}");
    assert!(line.contains("found a list of 1"), "{line}");
}

#[test]
fn an_output_with_200000_axes_is_refused() {
    // Printing its nested JSON once recursed once per axis: a stack
    // overflow (exit 134).
    let dir = tempfile::tempdir().unwrap();
    let s = json!({
        "name": "k", "inputs": [], "outputs": [["out", "float32", vec![1; 200_000]]],
        "source": "out[0] = 1.0f;", "grid": [1],
    });
    let line = one_line_failure(&run(dir.path(), &s, &[]));
    assert!(line.contains("`outputs[0]` (`out`)"), "{line}");
    assert!(line.contains("200000 axes"), "{line}");
    assert!(line.len() < 300, "{line}");
}

#[test]
fn out_dir_with_200000_axes_fails_and_leaves_no_file() {
    // The `.npy` header of such an output once panicked in the writer
    // (exit 101) after the file was created: an 8-byte `out.npy` stayed.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let s = json!({
        "name": "k", "inputs": [], "outputs": [["out", "float32", vec![1; 200_000]]],
        "source": "out[0] = 1.0f;", "grid": [1],
    });
    one_line_failure(&run(dir.path(), &s, &["--out-dir", out.to_str().unwrap()]));
    assert!(!out.exists() || files(&out).is_empty(), "{:?}", files(&out));
}

#[test]
fn out_dir_replaces_a_symlink_instead_of_writing_through_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let victim = dir.path().join("victim");
    std::fs::write(&victim, b"precious").unwrap();
    std::os::unix::fs::symlink(&victim, out.join("out.npy")).unwrap();
    let s = without_views(spec(json!(null), json!([2]), json!([1.0, 2.0])));
    let path = write_spec(dir.path(), "spec.json", &s);
    common::run_ok(&path, &["--out-dir", out.to_str().unwrap()]);
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
    let meta = std::fs::symlink_metadata(out.join("out.npy")).unwrap();
    assert!(meta.file_type().is_file(), "{meta:?}");
    assert_eq!(files(&out), ["out.npy"]);
}

#[test]
fn out_dir_publishes_every_output_or_none() {
    // The second output cannot be put in place (a folder holds its
    // name): the first must not be left behind, nor any temporary file.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir_all(out.join("second.npy").join("occupied")).unwrap();
    let s = json!({
        "name": "k", "inputs": [],
        "outputs": [["first", "float32", [1]], ["second", "float32", [1]]],
        "source": "first[0] = 1.0f; second[0] = 2.0f;", "grid": [1],
    });
    let line = one_line_failure(&run(dir.path(), &s, &["--out-dir", out.to_str().unwrap()]));
    assert!(line.contains("second.npy"), "{line}");
    assert_eq!(files(&out), ["second.npy"]);
}

#[test]
fn a_slice_step_that_overflows_the_stride_is_harmless() {
    // Axis 0 of a [2, 4] input has stride 4; a step of 2^62 once
    // multiplied into it and overflowed (a panic, exit 101).
    let dir = tempfile::tempdir().unwrap();
    let s = spec(
        json!({"a": {"slice": [[0, 2, 4_611_686_018_427_387_904u64]]}}),
        json!([2, 4]),
        json!([[1, 2, 3, 4], [5, 6, 7, 8]]),
    );
    let path = write_spec(dir.path(), "spec.json", &s);
    let result = common::run_ok(&path, &[]);
    assert_eq!(result["outputs"]["out"]["data"], json!([2.0]));
}

fn npy_spec(dir: &Path, file: &[u8], shape: Value) -> Value {
    std::fs::write(dir.join("a.npy"), file).unwrap();
    without_views(spec(json!(null), shape, json!("a.npy")))
}

#[test]
fn an_npy_shape_whose_size_overflows_is_refused() {
    // Once a panic in the .npy reader (`attempt to multiply with
    // overflow`, exit 101) before the shape was compared.
    let dir = tempfile::tempdir().unwrap();
    let header = "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 2), }";
    let s = npy_spec(dir.path(), &npy_bytes(header, &[]), json!([2]));
    let line = one_line_failure(&run(dir.path(), &s, &[]));
    assert!(
        line.contains("input `a`") && line.contains("a.npy"),
        "{line}"
    );
}

#[test]
fn an_npy_header_length_of_4_gib_is_refused() {
    // The reader once allocated the header length the file claims
    // (4 GiB) before reading it: an abort under an address-space limit.
    let dir = tempfile::tempdir().unwrap();
    let mut file = b"\x93NUMPY\x02\x00".to_vec();
    file.extend(u32::MAX.to_le_bytes());
    file.extend(b"{'descr'");
    let s = npy_spec(dir.path(), &file, json!([2]));
    let line = one_line_failure(&run(dir.path(), &s, &[]));
    assert!(
        line.contains("input `a`") && line.contains("header"),
        "{line}"
    );
}

#[test]
fn an_npy_header_nested_50000_deep_is_one_short_line() {
    // Once a 100 KB error line quoting the whole header.
    let dir = tempfile::tempdir().unwrap();
    let shape = format!("{}2,{}", "(".repeat(50_000), ")".repeat(50_000));
    let header = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': {shape}, }}");
    let s = npy_spec(dir.path(), &npy_bytes(&header, &[]), json!([2]));
    let line = one_line_failure(&run(dir.path(), &s, &[]));
    assert!(line.contains("input `a`") && line.len() < 300, "{line}");
}

#[test]
fn an_npy_file_shorter_than_its_shape_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000000,), }";
    let s = npy_spec(
        dir.path(),
        &npy_bytes(header, &1f32.to_le_bytes()),
        json!([1_000_000_000_000u64]),
    );
    let line = one_line_failure(&run(dir.path(), &s, &[]));
    assert!(
        line.contains("input `a`") && line.contains("a.npy"),
        "{line}"
    );
}

#[test]
fn an_endless_spec_file_is_refused() {
    // `/dev/zero` never ends: the whole file was once read until memory
    // ran out (without a limit, the machine's: the limit here keeps the
    // test from taking it all).
    let out = kernelkit_limited(&["run", "/dev/zero", "--device", "cpu"], &[]);
    let line = one_line_failure(&out);
    assert!(line.contains("/dev/zero"), "{line}");
    assert!(line.contains("larger than 16 MiB"), "{line}");
}

#[test]
fn an_output_too_large_to_print_is_an_error() {
    // 480 MB of complex64 output: its JSON text (about 3 GB) does not fit
    // the address-space limit. Once an abort (exit 134) as the text grew.
    let dir = tempfile::tempdir().unwrap();
    let s = json!({
        "name": "k", "inputs": [], "outputs": [["out", "complex64", [60_000_000]]],
        "source": "", "grid": [1],
    });
    let line = one_line_failure(&run(dir.path(), &s, &[]));
    assert!(line.contains("output `out` as JSON"), "{line}");
    assert!(line.contains("--out-dir"), "{line}");
}

#[test]
fn an_output_too_large_to_download_is_an_error() {
    // 3 GB of float32 output: allocated, but its copy to the host does
    // not fit the address-space limit. Once an abort (exit 134).
    let dir = tempfile::tempdir().unwrap();
    let s = json!({
        "name": "k", "inputs": [], "outputs": [["out", "float32", [750_000_000]]],
        "source": "", "grid": [1],
    });
    let line = one_line_failure(&run(dir.path(), &s, &[]));
    assert!(line.contains("cannot provide 3000000000 bytes"), "{line}");
}

#[test]
fn a_huge_declared_input_shape_without_a_memory_limit() {
    // The first case as it was reported: no address-space limit.
    let dir = tempfile::tempdir().unwrap();
    let s = without_views(spec(
        json!(null),
        json!([1_000_000_000_000u64]),
        json!([1.0]),
    ));
    let path = write_spec(dir.path(), "spec.json", &s);
    let out = kernelkit(&["run", path.to_str().unwrap(), "--device", "cpu"]);
    one_line_failure(&out);
}
