//! Helpers shared by test files that need a process of their own.
//!
//! A device reads `CXX`, `KERNELKIT_COMPILE_TIMEOUT`, `KERNELKIT_CACHE*`,
//! `TMPDIR` and friends from the environment, which is global to a process,
//! so tests that change them run in a child process: the test binary runs
//! itself again with only that test selected and the variables set (this
//! works the same under `cargo test`, which runs tests as threads of one
//! process, and nextest).

// Each test file uses a different subset of these helpers.
#![allow(dead_code)]

pub mod fake_redis;
pub mod redis_server;

use std::ffi::OsString;
use std::process::Command;

/// Set in the child process to the name of the test it runs.
pub const CHILD_VAR: &str = "KERNELKIT_TEST_CHILD";

/// Whether this process is the child that runs `test`.
pub fn is_child(test: &str) -> bool {
    std::env::var(CHILD_VAR).is_ok_and(|t| t == test)
}

/// In the parent: runs `test` again in a child process with `env` set
/// (after `KERNELKIT_CACHE=memory`, which `env` may override), checks that
/// it passed, and returns `false`. In that child: returns `true`, and the
/// caller runs the body of the test.
pub fn in_child(test: &str, env: &[(&str, OsString)]) -> bool {
    if is_child(test) {
        return true;
    }
    let out = child(test, env)
        .output()
        .expect("the test binary runs again");
    check_child(test, &out);
    false
}

/// The command that runs `test` again in a child process with `env` set
/// (after `KERNELKIT_CACHE=memory`, which `env` may override): for tests
/// that run several children at once (`spawn` each, then [`check_child`]
/// each output).
pub fn child(test: &str, env: &[(&str, OsString)]) -> Command {
    let exe = std::env::current_exe().expect("the test binary's path");
    let mut cmd = Command::new(exe);
    cmd.args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_VAR, test)
        .env("KERNELKIT_CACHE", "memory");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

/// Checks that a child of [`child`] passed, having run exactly `test`.
pub fn check_child(test: &str, out: &std::process::Output) {
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
}

/// Runs `n` children of `test` that start their work together: each gets
/// `KK_TEST_START_MS` (1.5 s from now, for [`wait_for_start`]) beside its
/// own `env(i)`. Returns their outputs once all have ended, each checked
/// with [`check_child`].
pub fn children_at_once(
    test: &str,
    n: usize,
    env: impl Fn(usize) -> Vec<(&'static str, OsString)>,
) -> Vec<std::process::Output> {
    let start = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis()
        + 1500;
    let children: Vec<_> = (0..n)
        .map(|i| {
            let mut env = env(i);
            env.push(("KK_TEST_START_MS", start.to_string().into()));
            child(test, &env)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    children
        .into_iter()
        .map(|c| {
            let out = c.wait_with_output().unwrap();
            check_child(test, &out);
            out
        })
        .collect()
}

/// In a child of [`children_at_once`]: sleeps until the start time all the
/// children share.
pub fn wait_for_start() {
    let start: u128 = std::env::var("KK_TEST_START_MS")
        .expect("KK_TEST_START_MS")
        .parse()
        .unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis();
    if start > now {
        std::thread::sleep(std::time::Duration::from_millis((start - now) as u64));
    }
}

/// Writes an executable shell script (a stand-in compiler) and returns its
/// directory (kept alive by the caller) and path.
pub fn script(body: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fake-cxx");
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    (dir, path)
}

/// A salt no other test run uses, for kernel bodies that must be new to
/// every server and store (the process id and the time).
pub fn salt(test: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{test} {} {nanos}", std::process::id())
}
