//! `kernelkit run --check-bounds`: a kernel that goes out of bounds fails
//! with exit code 3 and one line naming the kernel, the argument, the
//! index and the thread; a correct kernel prints what it prints unchecked.
//! Runs on the test device (`KERNELKIT_TEST_DEVICE`, the CPU by default).

mod common;

use common::{kernelkit, test_device, write_spec};
use serde_json::json;

fn spec(source: &str) -> serde_json::Value {
    json!({
        "name": "shift",
        "inputs": [["a", "float32", [8]]],
        "outputs": [["o", "float32", [8]]],
        "source": source,
        "grid": [8],
        "threadgroup": [4],
        "init_value": 0,
        "data": {"a": [1, 2, 3, 4, 5, 6, 7, 8]},
    })
}

#[test]
fn an_out_of_bounds_read_exits_with_status_3_and_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_spec(
        dir.path(),
        "spec.json",
        &spec("uint i = thread_position_in_grid.x; o[i] = a[i + 1];"),
    );
    let device = test_device();
    let out = kernelkit(&[
        "run",
        path.to_str().unwrap(),
        "--device",
        &device,
        "--check-bounds",
    ]);
    assert_eq!(out.code, 3, "stderr: {}", out.stderr);
    assert!(out.stdout.is_empty(), "{}", out.stdout);
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    for part in [
        "kernelkit run: kernel `shift`: input `a`",
        "at index 8",
        "spans [0, 8)",
        "thread (3, 0, 0) of threadgroup (1, 0, 0)",
    ] {
        assert!(out.stderr.contains(part), "{:?} lacks {part:?}", out.stderr);
    }
}

#[test]
fn a_write_past_the_end_through_a_pointer_is_named_by_its_output() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_spec(
        dir.path(),
        "spec.json",
        &spec("uint i = thread_position_in_grid.x; device float* p = o + 1; p[i] = a[i];"),
    );
    let device = test_device();
    let out = kernelkit(&[
        "run",
        path.to_str().unwrap(),
        "--device",
        &device,
        "--check-bounds",
    ]);
    assert_eq!(out.code, 3, "stderr: {}", out.stderr);
    assert!(
        out.stderr
            .contains("output `o` written past its end at byte 32 of its 32-byte buffer"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_correct_kernel_prints_the_same_checked() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_spec(
        dir.path(),
        "spec.json",
        &spec("uint i = thread_position_in_grid.x; o[i] = a[i] + *(a + (i + 1) % 8);"),
    );
    let device = test_device();
    let plain = kernelkit(&["run", path.to_str().unwrap(), "--device", &device]);
    let checked = kernelkit(&[
        "run",
        path.to_str().unwrap(),
        "--device",
        &device,
        "--check-bounds",
    ]);
    assert_eq!(plain.code, 0, "{}", plain.stderr);
    assert_eq!(checked.code, 0, "{}", checked.stderr);
    let data = |s: &str| serde_json::from_str::<serde_json::Value>(s).unwrap()["outputs"].clone();
    assert_eq!(data(&plain.stdout), data(&checked.stdout));
    assert_eq!(
        data(&plain.stdout)["o"]["data"],
        json!([3.0, 5.0, 7.0, 9.0, 11.0, 13.0, 15.0, 9.0])
    );
}
