//! `kernelkit run --timeout SECONDS`: a kernel that never finishes fails the
//! run with exit code 124 and one clear line, instead of hanging it. On the
//! CPU the kernel's thread cannot be stopped, so the process exits; on a GPU
//! the device is marked unusable first. (No timing is asserted: only that
//! the run ends, and how.)

mod common;

use common::{kernelkit, test_device, write_spec};
use serde_json::json;

fn spin_body(device: &str) -> &'static str {
    if device.starts_with("cuda") {
        // Bounded (about a minute), so a GPU is never held for long.
        "long long t0 = clock64();\n\
         while (clock64() - t0 < 120000000000ll) {}\n\
         out[thread_position_in_grid.x] = inp[0];"
    } else {
        "volatile int go = 1;\n\
         while (go) {}\n\
         out[thread_position_in_grid.x] = inp[0];"
    }
}

#[test]
fn a_kernel_that_never_finishes_fails_after_its_timeout() {
    let device = test_device();
    let dir = tempfile::tempdir().unwrap();
    let spec = write_spec(
        dir.path(),
        "spin.json",
        &json!({
            "name": "spin",
            "inputs": [["inp", "float32", [1]]],
            "outputs": [["out", "float32", [4]]],
            "source": spin_body(&device),
            "grid": [4, 1, 1],
            "data": {"inp": [1.0]},
        }),
    );
    let out = kernelkit(&[
        "run",
        spec.to_str().unwrap(),
        "--device",
        &device,
        "--timeout",
        "1",
    ]);
    assert_eq!(out.code, 124, "stderr: {}", out.stderr);
    assert!(out.stdout.is_empty(), "{}", out.stdout);
    let line = out.stderr.lines().next().unwrap_or_default();
    assert!(
        line.starts_with("kernelkit run: ") && line.contains("did not finish within 1"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_kernel_that_finishes_in_time_runs_as_without_a_timeout() {
    let device = test_device();
    let dir = tempfile::tempdir().unwrap();
    let spec = write_spec(
        dir.path(),
        "quick.json",
        &json!({
            "name": "quick",
            "inputs": [["inp", "float32", [4]]],
            "outputs": [["out", "float32", [4]]],
            "source": "uint i = thread_position_in_grid.x; out[i] = inp[i] * 2.0f;",
            "grid": [4, 1, 1],
            "data": {"inp": [1.0, 2.0, 3.0, 4.0]},
        }),
    );
    let path = spec.to_str().unwrap();
    let timed = kernelkit(&["run", path, "--device", &device, "--timeout", "60"]);
    let plain = kernelkit(&["run", path, "--device", &device]);
    assert_eq!(timed.code, 0, "{}", timed.stderr);
    assert_eq!(timed.stdout, plain.stdout);
    for bad in ["0", "-1", "nan"] {
        let arg = format!("--timeout={bad}");
        let out = kernelkit(&["run", path, "--device", &device, &arg]);
        assert_eq!(out.code, 2, "--timeout {bad}: {}", out.stderr);
        assert!(out.stderr.contains("--timeout"), "{}", out.stderr);
    }
}
