//! Compiler failures: a rejected body, a failure shared by every waiting
//! thread and never cached, and compilers that are missing, broken or hang.
//!
//! A CPU device made by `Device::new_cpu()` reads `CXX` and
//! `KERNELKIT_COMPILE_TIMEOUT` (through `Config::from_env`) when it is
//! created, and the environment is global to a process, so the cases that
//! check those variables run in a child process (`common::in_child`); the
//! same settings given through `Device::builder()` need none.

use std::sync::{Arc, Barrier};
use std::time::Duration;

use kernelkit::{CacheMode, CompileError, Config, DType, Device, Error, Kernel};

mod common;
use common::{in_child, is_child, script};

/// These tests count compiles: artifacts an earlier run left in the disk
/// store must not answer for them, so their devices have no disk tier.
fn memory_only() -> Device {
    Device::builder()
        .cache_mode(CacheMode::Memory)
        .cpu()
        .unwrap()
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
    let device = memory_only();
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
    // The compiler itself names the body's line: the generated source
    // numbers the body's lines in a file of its own (`#line`), as
    // compute-sanitizer and debuggers see them too.
    assert!(
        error_lines.iter().all(|l| l.contains("bad_line.body:2:")),
        "the error is on line 2 of `bad_line.body`:\n{log}"
    );
    let source = err_source(&err);
    assert!(source.contains("#line 1 \"bad_line.body\"\n"), "{source}");
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
    let device = memory_only();
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
            // What is missing and the ways to get it.
            for part in [
                "no C++ compiler",
                "apt install g++",
                "pip install ziglang",
                "CXX=",
            ] {
                assert!(reason.contains(part), "{part} missing from {reason}");
            }
        }
        other => panic!("expected CompileError::Compiler, got {other:?}"),
    }
    assert!(err.to_string().contains("/nonexistent/c++"), "{err}");
}

/// The compiler and its timeout given by the program, in this process: a
/// compiler that hangs (its `--version` too) is killed after the builder's
/// timeout, whatever `CXX` and `KERNELKIT_COMPILE_TIMEOUT` say.
#[test]
fn a_compiler_and_timeout_given_by_the_program_are_used() {
    let (_dir, path) = script("exec sleep 60");
    let program = path.to_str().unwrap().to_string();
    let config = Config::from_env()
        .compiler(program.clone())
        .compile_timeout(Duration::from_secs(1))
        .pch_dir(None)
        .cache_mode(CacheMode::Memory);
    let device = Device::builder().config(config).cpu().unwrap();
    let err = run(&device, &kernel("given_compiler", GOOD)).unwrap_err();
    match &err {
        Error::Compile(CompileError::Compiler {
            kernel,
            compiler,
            reason,
        }) => {
            assert_eq!(kernel, "given_compiler");
            assert_eq!(compiler, &program);
            assert!(reason.contains("did not finish within 1.0 s"), "{reason}");
        }
        other => panic!("expected a timeout, got {other:?}"),
    }
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

/// A stand-in compiler answers `--version` like a real one, so only compile
/// runs reach the rest of its script.
const VERSION: &str = "case \"$1\" in --version) echo 'fake c++ 1.0'; exit 0;; esac";

/// The compiler runs in a fresh directory that only this user can enter
/// (0700), on files only this user can read (0600), whatever the umask says:
/// the stand-in compiler records the mode of its working directory and of
/// every file in it.
#[test]
fn the_compiler_works_in_a_private_directory() {
    let record = tempfile::NamedTempFile::new().unwrap();
    let (_dir, path) = script(&format!(
        "{VERSION}\n{{ stat -c 'dir %a' .; for f in *; do stat -c 'file %a %n' \"$f\"; done; }} >> \"$KK_TEST_MODES\"\nexit 1"
    ));
    if in_child(
        "the_compiler_works_in_a_private_directory",
        &[
            ("CXX", path.into_os_string()),
            ("KK_TEST_MODES", record.path().into()),
            ("KERNELKIT_PCH_DIR", "".into()),
        ],
    ) {
        // A umask that lets everyone read what is not made private on purpose.
        rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o022));
        let device = Device::new_cpu();
        let err = run(&device, &kernel("private", GOOD)).unwrap_err();
        assert!(
            matches!(err, Error::Compile(CompileError::Rejected { .. })),
            "{err:?}"
        );
        return;
    }
    let modes = std::fs::read_to_string(record.path()).unwrap();
    let dirs: Vec<&str> = modes.lines().filter(|l| l.starts_with("dir ")).collect();
    let files: Vec<&str> = modes.lines().filter(|l| l.starts_with("file ")).collect();
    assert!(!dirs.is_empty(), "the compiler did not run:\n{modes}");
    assert!(
        files.iter().any(|l| l.ends_with(" kernel.cpp")),
        "no source among the files:\n{modes}"
    );
    assert!(dirs.iter().all(|l| *l == "dir 700"), "{modes}");
    assert!(files.iter().all(|l| l.starts_with("file 600 ")), "{modes}");
}

/// Whether process `pid` still runs (a zombie waiting to be reaped does not).
fn running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the parenthesized command name.
        Ok(stat) => !stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z') || rest.starts_with('X')),
        Err(_) => false,
    }
}

/// A compile that times out is killed with every process it started (a
/// real driver runs `cc1plus` as a child): the stand-in compiler starts a
/// long `sleep` and waits for it, and that `sleep` must be gone afterwards.
#[test]
fn a_timed_out_compile_leaves_no_process_behind() {
    let pid_dir = tempfile::tempdir().unwrap();
    let pid_file = pid_dir.path().join("pid");
    let (_dir, path) = script(&format!(
        "{VERSION}\nsleep 300 &\necho $! > \"$KK_TEST_PID\"\nwait"
    ));
    if in_child(
        "a_timed_out_compile_leaves_no_process_behind",
        &[
            ("CXX", path.into_os_string()),
            ("KERNELKIT_COMPILE_TIMEOUT", "1".into()),
            ("KERNELKIT_PCH_DIR", "".into()),
            ("KK_TEST_PID", pid_file.clone().into_os_string()),
        ],
    ) {
        let device = Device::new_cpu();
        let err = run(&device, &kernel("orphans", GOOD)).unwrap_err();
        assert!(err.to_string().contains("did not finish"), "{err}");
        return;
    }
    let pid: u32 = std::fs::read_to_string(&pid_file)
        .expect("the stand-in compiler wrote its child's pid")
        .trim()
        .parse()
        .unwrap();
    // The kill is sent before the compile returns; give the kernel a moment
    // to finish the process (bounded, not timed).
    let mut alive = running(pid);
    for _ in 0..200 {
        if !alive {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
        alive = running(pid);
    }
    if alive {
        let _ = std::process::Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status();
    }
    assert!(
        !alive,
        "the compiler's child {pid} still runs after the compile timed out"
    );
}

/// The precompiled prelude header can vanish under a running process (a
/// temp-directory cleaner, another user of `KERNELKIT_PCH_DIR`): compiles
/// after that still work, without it.
#[test]
fn a_vanished_precompiled_header_is_not_used() {
    const TEST: &str = "a_vanished_precompiled_header_is_not_used";
    if is_child(TEST) {
        let pch_dir = std::path::PathBuf::from(std::env::var_os("KERNELKIT_PCH_DIR").unwrap());
        let device = Device::new_cpu();
        let twice = vec![2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 14.0, 16.0];
        // The first compile builds the header (and waits for it); the second
        // uses it.
        assert_eq!(run(&device, &kernel("pch_first", GOOD)).unwrap(), twice);
        let built = std::fs::read_dir(&pch_dir)
            .unwrap()
            .filter_map(|e| e.ok())
            .any(|e| e.file_name().to_string_lossy().ends_with(".gch"));
        if !built {
            println!("skipped: this compiler made no precompiled header");
            return;
        }
        assert_eq!(run(&device, &kernel("pch_second", GOOD)).unwrap(), twice);
        std::fs::remove_dir_all(&pch_dir).unwrap();
        let third = run(&device, &kernel("pch_third", GOOD));
        assert_eq!(
            third.as_ref().map_err(|e| e.to_string()),
            Ok(&twice),
            "a compile after the header vanished"
        );
        return;
    }
    let pch = tempfile::tempdir().unwrap();
    let pch_dir = pch.path().join("pch");
    assert!(!in_child(
        TEST,
        &[("KERNELKIT_PCH_DIR", pch_dir.into_os_string())]
    ));
}
