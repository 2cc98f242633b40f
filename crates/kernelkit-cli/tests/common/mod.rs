//! Helpers shared by the command-line tests: run the built `kernelkit`
//! binary on a spec, and compare JSON results by value.

// Each test file uses a different subset of these helpers.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// What one run of the binary did.
pub struct Outcome {
    /// The exit code (-1 if killed by a signal).
    pub code: i32,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

/// Runs `kernelkit ARGS` with the in-memory kernel cache only, so tests
/// neither read nor leave artifacts on disk.
///
/// `KERNELKIT_TEST_BIN` overrides the binary (the GPU machine runs these
/// test executables away from the build tree).
pub fn kernelkit(args: &[&str]) -> Outcome {
    let bin = std::env::var_os("KERNELKIT_TEST_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_kernelkit")));
    let out = Command::new(bin)
        .args(args)
        .env("KERNELKIT_CACHE", "memory")
        .env_remove("KERNELKIT_LOG")
        .output()
        .expect("the kernelkit binary runs");
    Outcome {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Writes `spec` as `name` in `dir` and returns its path.
pub fn write_spec(dir: &Path, name: &str, spec: &Value) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_string_pretty(spec).unwrap()).unwrap();
    path
}

/// The device `kernelkit run` tests use: `cpu`, unless
/// `KERNELKIT_TEST_DEVICE` names another (`cuda` on the GPU machine).
pub fn test_device() -> String {
    std::env::var("KERNELKIT_TEST_DEVICE").unwrap_or_else(|_| "cpu".to_string())
}

/// Runs `kernelkit run SPEC EXTRA...` on the test device (the CPU by
/// default), expects success, and returns the parsed JSON result.
pub fn run_ok(spec: &Path, extra: &[&str]) -> Value {
    let path = spec.to_str().unwrap();
    let device = test_device();
    let mut args = vec!["run", path, "--device", device.as_str()];
    args.extend_from_slice(extra);
    let out = kernelkit(&args);
    assert_eq!(out.code, 0, "kernelkit run failed:\n{}", out.stderr);
    assert!(
        out.stdout.ends_with('\n') && out.stdout.lines().count() == 1,
        "{}",
        out.stdout
    );
    let result: Value = serde_json::from_str(&out.stdout).expect("stdout is JSON");
    let label = if device == "cuda" {
        "cuda:0"
    } else {
        device.as_str()
    };
    assert_eq!(result["device"], label);
    result
}

/// Writes `spec` to a fresh folder and runs it; returns the result.
pub fn run_spec(spec: &Value) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let path = write_spec(dir.path(), "spec.json", spec);
    run_ok(&path, &[])
}

/// The `data` of output `name` in a run result, after checking its dtype and shape.
pub fn output<'r>(result: &'r Value, name: &str, dtype: &str, shape: &[usize]) -> &'r Value {
    let o = &result["outputs"][name];
    assert_eq!(o["dtype"], dtype, "output {name}: {o}");
    assert_eq!(o["shape"], serde_json::json!(shape), "output {name}: {o}");
    &o["data"]
}

/// Expects the command to fail as documented: exit code 2, nothing on
/// stdout, and exactly one line on stderr, which is returned.
pub fn fails(args: &[&str]) -> String {
    let out = kernelkit(args);
    assert_eq!(out.code, 2, "expected exit code 2, stderr:\n{}", out.stderr);
    assert!(out.stdout.is_empty(), "stdout not empty: {}", out.stdout);
    assert_eq!(
        out.stderr.lines().count(),
        1,
        "not one line:\n{}",
        out.stderr
    );
    out.stderr.trim_end().to_string()
}

/// Writes `spec` and expects `kernelkit run` to fail with one line; returns it.
pub fn run_fails(spec: &Value) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = write_spec(dir.path(), "spec.json", spec);
    fails(&["run", path.to_str().unwrap(), "--device", "cpu"])
}

/// JSON values equal as numbers: `3` equals `3.0`, integers compare
/// exactly, floats by value, `"nan"` equals `"nan"`.
pub fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            match (x.as_i64(), y.as_i64(), x.as_u64(), y.as_u64()) {
                (Some(p), Some(q), _, _) => p == q,
                (_, _, Some(p), Some(q)) => p == q,
                _ => x.as_f64() == y.as_f64(),
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q))
        }
        _ => a == b,
    }
}

/// Asserts `same`, printing both on failure.
pub fn assert_same(what: &str, got: &Value, expected: &Value) {
    assert!(
        same(got, expected),
        "{what}:\n got      {got}\n expected {expected}"
    );
}

/// Asserts a float32 output equals `expected` exactly (the output prints
/// the shortest text that reads back to the same float32).
pub fn assert_f32(what: &str, got: &Value, expected: &[f32]) {
    let got: Vec<f32> = flat(got).iter().map(|&g| g as f32).collect();
    assert_eq!(got, expected, "{what}");
}

/// A flat list of f64 from a nested JSON list.
pub fn flat(v: &Value) -> Vec<f64> {
    match v {
        Value::Array(items) => items.iter().flat_map(flat).collect(),
        Value::Number(n) => vec![n.as_f64().unwrap()],
        other => panic!("not a number: {other}"),
    }
}

/// Whether `python3` with NumPy can be used; prints why not when it cannot.
pub fn numpy() -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import numpy"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !ok {
        println!("skipped the NumPy half: `python3 -c \"import numpy\"` does not work here");
    }
    ok
}

/// Runs a Python script with NumPy; panics with its output if it fails.
pub fn python(script: &str, args: &[&str]) {
    let out = Command::new("python3")
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "python failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    print!("{}", String::from_utf8_lossy(&out.stdout));
}

/// The address-space limit (`ulimit -v`, KiB) of [`kernelkit_limited`]: an
/// allocation that the spec sizes but memory cannot hold fails at once
/// under it, instead of succeeding lazily and paging the machine to death.
pub const ADDRESS_LIMIT_KIB: u64 = 4 << 20;

/// As [`kernelkit`], under `ulimit -v` [`ADDRESS_LIMIT_KIB`] (through
/// `sh`), with `env` added: an allocation the process cannot get shows
/// as an abort (exit 134), not as a slow machine.
pub fn kernelkit_limited(args: &[&str], env: &[(&str, &str)]) -> Outcome {
    let bin = std::env::var_os("KERNELKIT_TEST_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_kernelkit")));
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(format!(
            "ulimit -v {ADDRESS_LIMIT_KIB} && exec \"$0\" \"$@\""
        ))
        .arg(bin)
        .args(args)
        .env("KERNELKIT_CACHE", "memory")
        .env_remove("KERNELKIT_LOG");
    for (k, v) in env {
        command.env(k, v);
    }
    let out = command.output().expect("sh runs the kernelkit binary");
    Outcome {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Expects a failure as documented (exit code 2, nothing on stdout, one
/// line on stderr starting `kernelkit run: `) and returns the line.
pub fn one_line_failure(out: &Outcome) -> String {
    assert_eq!(
        out.code,
        2,
        "expected exit code 2, stderr:\n{}",
        &out.stderr[..out.stderr.len().min(2000)]
    );
    assert!(out.stdout.is_empty(), "stdout not empty: {}", out.stdout);
    assert_eq!(
        out.stderr.lines().count(),
        1,
        "not one line:\n{}",
        out.stderr
    );
    let line = out.stderr.trim_end().to_string();
    assert!(line.starts_with("kernelkit run: "), "{line}");
    line
}

/// A `.npy` file: the magic, version 1.0 (2.0 when the text needs it),
/// `header` padded as NumPy pads it, then `data`.
pub fn npy_bytes(header: &str, data: &[u8]) -> Vec<u8> {
    let v1 = header.len() + 11 < 65536;
    let before = if v1 { 10 } else { 12 };
    let pad = (64 - (before + header.len() + 1) % 64) % 64;
    let mut text = header.as_bytes().to_vec();
    text.extend(std::iter::repeat_n(b' ', pad));
    text.push(b'\n');
    let mut out = b"\x93NUMPY".to_vec();
    if v1 {
        out.extend([1, 0]);
        out.extend((text.len() as u16).to_le_bytes());
    } else {
        out.extend([2, 0]);
        out.extend((text.len() as u32).to_le_bytes());
    }
    out.extend(text);
    out.extend(data);
    out
}
