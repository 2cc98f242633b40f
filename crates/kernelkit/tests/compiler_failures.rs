//! Compiler failures: a rejected body, a failure shared by every waiting
//! thread and never cached, and compilers that are missing, broken or hang.
//!
//! The CPU device reads `CXX` and `KERNELKIT_COMPILE_TIMEOUT` when it is
//! created, and the environment is global to a process, so the cases that
//! change it run in a child process: the test binary runs itself again with
//! only that test selected and the variables set (this works the same under
//! `cargo test`, which runs tests as threads of one process, and nextest).

use std::ffi::OsString;
use std::process::Command;
use std::sync::{Arc, Barrier};

use kernelkit::{CompileError, DType, Device, Error, Kernel};

/// Set in the child process to the name of the test it runs.
const CHILD_VAR: &str = "KERNELKIT_TEST_CHILD";

/// In the parent: runs `test` again in a child process with `env` set,
/// checks that it passed, and returns `false`. In that child: returns `true`,
/// and the caller runs the body of the test.
fn in_child(test: &str, env: &[(&str, OsString)]) -> bool {
    if std::env::var(CHILD_VAR).is_ok_and(|t| t == test) {
        return true;
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    let mut cmd = Command::new(exe);
    cmd.args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_VAR, test)
        .env("KERNELKIT_CACHE", "memory");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("the test binary runs again");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "child `{test}` failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    // The filter must have selected exactly this test: a child that ran
    // nothing would pass without checking anything.
    assert!(
        stdout.contains("1 passed"),
        "child `{test}` ran no test:\n{stdout}"
    );
    false
}

/// These tests count compiles: artifacts an earlier run left in the disk
/// store must not answer for them, so this process uses memory caches only
/// (every test of this binary sets the same value).
fn memory_only() {
    std::env::set_var("KERNELKIT_CACHE", "memory");
}

/// A one-input kernel whose body is `body`.
fn kernel(name: &str, body: &str) -> Kernel {
    Kernel::builder(name)
        .inputs(["inp"])
        .outputs(["out"])
        .source(body)
        .build()
        .unwrap()
}

/// Runs `k` on 8 floats on `device` and returns the output.
fn run(device: &Device, k: &Kernel) -> kernelkit::Result<Vec<f32>> {
    let x = device.array_from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0], [8])?;
    let out = k
        .call([&x])
        .output([8], DType::F32)
        .grid([8, 1, 1])
        .on(device.default_stream())
        .launch()?;
    out[0].to_vec()
}

const GOOD: &str = "uint i = thread_position_in_grid.x;\nout[i] = inp[i] * 2.0f;";
/// The error is on the second line of the body.
const BAD: &str = "uint i = thread_position_in_grid.x;\nint y = ;\nout[i] = inp[i];";

#[test]
fn a_syntax_error_is_reported_at_its_line_in_the_body() {
    memory_only();
    let device = Device::new_cpu();
    let err = run(&device, &kernel("bad_line", BAD)).unwrap_err();
    let Error::Compile(CompileError::Rejected {
        kernel,
        log,
        function,
        ..
    }) = &err
    else {
        panic!("expected CompileError::Rejected, got {err:?}");
    };
    assert_eq!(kernel, "bad_line");
    assert!(
        function.starts_with("custom_kernel_bad_line_"),
        "{function}"
    );
    let error_lines: Vec<&str> = log.lines().filter(|l| l.contains("error")).collect();
    assert!(!error_lines.is_empty(), "no error in the log:\n{log}");
    assert!(
        error_lines.iter().all(|l| l.contains("[body line 2]")),
        "every error should point at body line 2:\n{log}"
    );
    // The mapped number is the generated line minus the lines before the body.
    let source = err_source(&err);
    let body_start = source.find(BAD).expect("the body is in the source");
    let first_body_line = source[..body_start].matches('\n').count() + 1;
    let generated_line = first_body_line + 1;
    assert!(
        error_lines
            .iter()
            .all(|l| l.contains(&format!("kernel.cpp:{generated_line}:"))),
        "the error is on generated line {generated_line}:\n{log}"
    );
    assert!(err.to_string().contains("kernel `bad_line`"), "{err}");
}

fn err_source(err: &Error) -> &str {
    match err {
        Error::Compile(e) => e
            .source_code()
            .expect("a rejected compile keeps its source"),
        other => panic!("not a compile error: {other:?}"),
    }
}

/// 16 threads meet at a barrier: 12 ask for the same failing kernel, 4 for a
/// good one. Every one of the 12 gets the compile error, the 4 get correct
/// results, and the failure is not cached: the next call compiles again.
#[test]
fn a_failure_reaches_every_waiter_is_not_cached_and_spares_other_kernels() {
    memory_only();
    let device = Device::new_cpu();
    let bad = kernel("shared_failure", BAD);
    let good = kernel("bystander", GOOD);
    let threads = 16;
    let barrier = Arc::new(Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let (device, bad, good, barrier) =
                (device.clone(), bad.clone(), good.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                if t % 4 == 3 {
                    (true, run(&device, &good))
                } else {
                    (false, run(&device, &bad))
                }
            })
        })
        .collect();
    for h in handles {
        match h.join().expect("no thread panics") {
            (true, result) => assert_eq!(
                result.expect("the good kernel is unaffected"),
                vec![2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 14.0, 16.0]
            ),
            (false, result) => match result {
                Err(Error::Compile(CompileError::Rejected { kernel, log, .. })) => {
                    assert_eq!(kernel, "shared_failure");
                    assert!(log.contains("[body line 2]"), "{log}");
                }
                other => panic!("expected the compile error, got {other:?}"),
            },
        }
    }
    let before = device.cache_stats();
    // One compile for the good kernel, at least one for the bad; threads
    // that arrived after a failure was delivered may have compiled again.
    assert!(before.compiles >= 2, "{}", before.summary());
    assert!(before.failures >= 1, "{}", before.summary());
    assert_eq!(
        before.compiles - before.failures,
        1,
        "only the good kernel compiled successfully: {}",
        before.summary()
    );

    assert!(run(&device, &bad).is_err());
    let after = device.cache_stats();
    assert_eq!(
        after.compiles,
        before.compiles + 1,
        "a failure is not cached: the next call compiles again"
    );
    assert_eq!(after.failures, before.failures + 1);

    // The good kernel is still loaded: no new compile.
    run(&device, &good).unwrap();
    assert_eq!(device.cache_stats().compiles, after.compiles);
}

#[test]
fn a_missing_compiler_is_a_clear_error() {
    if !in_child(
        "a_missing_compiler_is_a_clear_error",
        &[("CXX", "/nonexistent/c++".into())],
    ) {
        return;
    }
    let device = Device::new_cpu();
    let err = run(&device, &kernel("no_compiler", GOOD)).unwrap_err();
    match &err {
        Error::Compile(CompileError::Compiler {
            kernel,
            compiler,
            reason,
        }) => {
            assert_eq!(kernel, "no_compiler");
            assert_eq!(compiler, "/nonexistent/c++");
            assert!(reason.contains("cannot start it"), "{reason}");
            assert!(reason.contains("set CXX"), "{reason}");
        }
        other => panic!("expected CompileError::Compiler, got {other:?}"),
    }
    assert!(err.to_string().contains("/nonexistent/c++"), "{err}");
}

/// Writes an executable shell script and returns its directory (kept alive
/// by the caller) and path.
fn script(body: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fake-cxx");
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    (dir, path)
}

#[test]
fn a_hanging_compiler_times_out() {
    let (_dir, path) = script("exec sleep 60");
    if !in_child(
        "a_hanging_compiler_times_out",
        &[
            ("CXX", path.into_os_string()),
            ("KERNELKIT_COMPILE_TIMEOUT", "1".into()),
        ],
    ) {
        return;
    }
    let device = Device::new_cpu();
    let err = run(&device, &kernel("hangs", GOOD)).unwrap_err();
    match &err {
        Error::Compile(CompileError::Compiler { kernel, reason, .. }) => {
            assert_eq!(kernel, "hangs");
            assert!(reason.contains("did not finish within 1.0 s"), "{reason}");
            assert!(reason.contains("KERNELKIT_COMPILE_TIMEOUT"), "{reason}");
        }
        other => panic!("expected a timeout, got {other:?}"),
    }
}

#[test]
fn a_compiler_that_fails_silently_says_so() {
    let (_dir, path) = script("exit 3");
    if !in_child(
        "a_compiler_that_fails_silently_says_so",
        &[("CXX", path.into_os_string())],
    ) {
        return;
    }
    let device = Device::new_cpu();
    let err = run(&device, &kernel("silent", GOOD)).unwrap_err();
    match &err {
        Error::Compile(CompileError::Rejected { kernel, log, .. }) => {
            assert_eq!(kernel, "silent");
            assert!(log.contains("printed nothing"), "{log}");
            assert!(log.contains("code 3"), "{log}");
        }
        other => panic!("expected CompileError::Rejected, got {other:?}"),
    }
}

#[test]
fn a_compiler_that_writes_no_library_says_so() {
    let (_dir, path) = script("exit 0");
    if !in_child(
        "a_compiler_that_writes_no_library_says_so",
        &[("CXX", path.into_os_string())],
    ) {
        return;
    }
    let device = Device::new_cpu();
    let err = run(&device, &kernel("no_library", GOOD)).unwrap_err();
    match &err {
        Error::Compile(CompileError::Compiler { kernel, reason, .. }) => {
            assert_eq!(kernel, "no_library");
            assert!(reason.contains("produced no library"), "{reason}");
        }
        other => panic!("expected CompileError::Compiler, got {other:?}"),
    }
}
