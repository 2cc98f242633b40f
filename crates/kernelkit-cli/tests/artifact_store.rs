//! The artifact store between real processes: the `kernelkit` binary runs
//! `demo` (each thread compiles and checks its own kernel) with
//! `KERNELKIT_CACHE_DIR` set to a fresh temporary directory, and the test
//! reads the demo's `cache:` summary line and the store's files.

#![cfg(unix)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, SystemTime};

/// A `kernelkit` command using the store in `dir`, isolated from the
/// caller's environment.
fn kernelkit(dir: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kernelkit"));
    cmd.env("KERNELKIT_CACHE", "disk")
        .env("KERNELKIT_CACHE_DIR", dir)
        .env_remove("KERNELKIT_CACHE_MAX_BYTES")
        .env_remove("KERNELKIT_LOG");
    cmd
}

fn demo(dir: &Path, threads: usize) -> Command {
    let mut cmd = kernelkit(dir);
    cmd.args(["demo", "--device", "cpu", "--threads", &threads.to_string()]);
    cmd
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs a demo that must pass, and returns its `cache:` counters.
fn passing_demo(dir: &Path, threads: usize) -> HashMap<String, f64> {
    let out = demo(dir, threads).output().unwrap();
    check_passed(&out);
    summary(&out)
}

fn check_passed(out: &Output) {
    let stdout = text(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("all results right"),
        "demo failed ({}):\n{stdout}\n{}",
        out.status,
        text(&out.stderr)
    );
}

/// The `key=value` pairs of the demo's `cache:` line.
fn summary(out: &Output) -> HashMap<String, f64> {
    let stdout = text(&out.stdout);
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("cache: "))
        .unwrap_or_else(|| panic!("no cache: line in\n{stdout}"));
    line.split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.parse().unwrap()))
        .collect()
}

/// The store's entry files: in its subdirectories (and flat ones, of
/// kernelkit before the fan-out, in the directory itself).
fn entries(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = files(dir)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|x| x == "kka"))
        .collect();
    v.sort();
    v
}

/// Every file in the store directory and its subdirectories.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for path in std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()) {
        if path.is_dir() {
            out.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
        } else {
            out.push(path);
        }
    }
    out
}

fn store_dir() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("store");
    (tmp, dir)
}

fn is_root() -> bool {
    // The owner of a file this process just created is its effective user.
    use std::os::unix::fs::MetadataExt;
    let f = tempfile::NamedTempFile::new().unwrap();
    f.as_file().metadata().unwrap().uid() == 0
}

#[test]
fn a_second_process_compiles_nothing() {
    let (_tmp, dir) = store_dir();
    let first = passing_demo(&dir, 4);
    assert_eq!(first["compiles"], 4.0);
    assert_eq!(first["disk_writes"], 4.0);
    let second = passing_demo(&dir, 4);
    assert_eq!(second["compiles"], 0.0, "{second:?}");
    assert_eq!(second["disk_hits"], 4.0, "{second:?}");
    assert_eq!(second["disk_errors"], 0.0);

    let stats = kernelkit(&dir).args(["cache", "stats"]).output().unwrap();
    let stats = text(&stats.stdout);
    assert!(stats.contains("entries: 4 "), "{stats}");
    assert!(
        stats.contains("hits=4 misses=4 writes=4 errors=0"),
        "{stats}"
    );
    assert!(stats.contains("from the running total"), "{stats}");
    let list = kernelkit(&dir).args(["cache", "list"]).output().unwrap();
    let list = text(&list.stdout);
    assert_eq!(list.matches(" concurrent_kernel ").count(), 4, "{list}");
    let verify = kernelkit(&dir).args(["cache", "verify"]).output().unwrap();
    assert!(verify.status.success(), "{}", text(&verify.stdout));

    let clear = kernelkit(&dir).args(["cache", "clear"]).output().unwrap();
    assert!(clear.status.success());
    assert!(text(&clear.stdout).contains("removed 4 entries"));
    assert!(entries(&dir).is_empty());
}

/// `cache stats` reads the running total the writers keep, so an entry
/// deleted by hand still counts until `cache stats --recount` counts the
/// files (and stores the count).
#[test]
fn stats_reads_the_running_total_and_recount_counts_the_files() {
    let (_tmp, dir) = store_dir();
    passing_demo(&dir, 2);
    let stats = |recount: bool| {
        let mut cmd = kernelkit(&dir);
        cmd.args(["cache", "stats"]);
        if recount {
            cmd.arg("--recount");
        }
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    assert!(stats(false).contains("entries: 2 "), "{}", stats(false));
    std::fs::remove_file(&entries(&dir)[0]).unwrap();
    let running = stats(false);
    assert!(running.contains("entries: 2 "), "{running}");
    assert!(running.contains("from the running total"), "{running}");
    let counted = stats(true);
    assert!(counted.contains("entries: 1 "), "{counted}");
    assert!(counted.contains("counted from the files"), "{counted}");
    let after = stats(false);
    assert!(after.contains("entries: 1 "), "{after}");
    assert!(after.contains("from the running total"), "{after}");
}

/// Eight processes ask for the same four new kernels at once: every result
/// is right, and the per-key locks make each kernel compile once in all.
#[test]
fn racing_processes_share_each_compile() {
    let (_tmp, dir) = store_dir();
    let children: Vec<_> = (0..8)
        .map(|_| {
            demo(&dir, 4)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut compiles = 0.0;
    for child in children {
        let out = child.wait_with_output().unwrap();
        check_passed(&out);
        let s = summary(&out);
        assert_eq!(s["disk_errors"], 0.0);
        assert_eq!(s["compiles"] + s["disk_hits"], 4.0, "{s:?}");
        compiles += s["compiles"];
    }
    assert_eq!(compiles, 4.0, "each kernel is compiled by one process");
    assert_eq!(entries(&dir).len(), 4);
    let leftovers: Vec<_> = files(&dir)
        .into_iter()
        .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .filter(|n| !n.ends_with(".kka") && n != "counters" && n != "usage")
        .collect();
    assert!(
        leftovers.is_empty(),
        "lock or temporary files left: {leftovers:?}"
    );
}

/// Six entries, six kinds of damage: `verify` finds them all (a changed
/// format version reads as another kernelkit's entry, not a bad one), the
/// demo still passes and rewrites them, and the next run compiles nothing.
#[test]
fn corrupted_entries_are_detected_and_repaired() {
    let (_tmp, dir) = store_dir();
    passing_demo(&dir, 6);
    let files = entries(&dir);
    assert_eq!(files.len(), 6);
    let first_entry = std::fs::read(&files[0]).unwrap();
    type Damage = fn(&mut Vec<u8>);
    let damage: [Damage; 5] = [
        |b| {
            let n = b.len() / 2;
            b[n] ^= 0x10 // flipped byte
        },
        |b| b.truncate(b.len() - 1),
        |b| b.clear(),
        |b| b[0] = b'Z',                 // wrong magic
        |b| b[8] = b[8].wrapping_add(1), // wrong version
    ];
    for (spoil, path) in damage.iter().zip(&files[..5]) {
        let mut bytes = std::fs::read(path).unwrap();
        spoil(&mut bytes);
        std::fs::write(path, bytes).unwrap();
    }
    // Wrong key: an intact entry of another kernel under this one's name.
    std::fs::write(&files[5], first_entry).unwrap();

    let verify = kernelkit(&dir).args(["cache", "verify"]).output().unwrap();
    let report = text(&verify.stdout);
    assert_eq!(verify.status.code(), Some(1), "{report}");
    assert!(
        report.contains("0 good, 5 bad, 1 of another format version"),
        "{report}"
    );
    for what in [
        "checksum",
        "truncated",
        "magic",
        "version",
        "stored under key",
    ] {
        assert!(
            report.contains(what),
            "verify does not report `{what}`:\n{report}"
        );
    }

    let repair = passing_demo(&dir, 6);
    assert_eq!(repair["disk_errors"], 5.0, "{repair:?}");
    assert_eq!(repair["compiles"], 6.0, "{repair:?}");
    assert_eq!(repair["disk_hits"], 0.0, "{repair:?}");
    let verify = kernelkit(&dir).args(["cache", "verify"]).output().unwrap();
    assert!(verify.status.success(), "{}", text(&verify.stdout));
    let after = passing_demo(&dir, 6);
    assert_eq!(after["compiles"], 0.0, "{after:?}");
    assert_eq!(after["disk_hits"], 6.0, "{after:?}");
}

/// A store that cannot be written leaves the process with its memory cache
/// and a single warning.
#[test]
fn an_unusable_directory_means_memory_only_with_one_warning() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("a-file");
    std::fs::write(&file, b"").unwrap();
    let mut dirs = vec![file.join("store")];
    if is_root() {
        println!("skipped the read-only directory case: root may write to any directory");
    } else {
        use std::os::unix::fs::PermissionsExt;
        let ro = tmp.path().join("read-only");
        std::fs::create_dir(&ro).unwrap();
        std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o500)).unwrap();
        dirs.push(ro);
    }
    for dir in dirs {
        let out = demo(&dir, 2).output().unwrap();
        check_passed(&out);
        let s = summary(&out);
        assert_eq!(s["compiles"], 2.0);
        assert_eq!(s["disk_writes"] + s["disk_errors"], 0.0, "{s:?}");
        let stderr = text(&out.stderr);
        assert_eq!(
            stderr.matches("cached in memory only").count(),
            1,
            "expected one warning, got:\n{stderr}"
        );
    }
}

#[test]
fn memory_and_off_modes_touch_no_disk() {
    for mode in ["memory", "off"] {
        let (_tmp, dir) = store_dir();
        let out = demo(&dir, 1).env("KERNELKIT_CACHE", mode).output().unwrap();
        check_passed(&out);
        assert!(!dir.exists(), "KERNELKIT_CACHE={mode} created the store");
        assert!(out.stderr.is_empty(), "{}", text(&out.stderr));
    }
}

/// The store's lifetime `(hits, misses, writes, errors)`, from `cache stats`.
fn lifetime(dir: &Path) -> (u64, u64, u64, u64) {
    let out = kernelkit(dir).args(["cache", "stats"]).output().unwrap();
    let stdout = text(&out.stdout);
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("since last clear: "))
        .unwrap_or_else(|| panic!("no lifetime counters in\n{stdout}"));
    let n: Vec<u64> = line
        .split_whitespace()
        .map(|kv| kv.split_once('=').unwrap().1.parse().unwrap())
        .collect();
    (n[0], n[1], n[2], n[3])
}

/// A kernel whose header includes a file by absolute path. Each
/// `kernelkit run` is a new process, so only the store can carry a compiled
/// kernel from one to the next: a changed file must be compiled again (and
/// its entry rewritten), an unchanged one is a disk hit, and a deleted one
/// is a miss and a compile error that names it.
#[test]
fn a_file_the_header_includes_is_checked_by_every_process() {
    let (tmp, dir) = store_dir();
    let params = tmp.path().join("params.h");
    let write_params = |text: &str| {
        std::fs::write(&params, text).unwrap();
        // Written well before the compiles that read it.
        std::fs::File::options()
            .write(true)
            .open(&params)
            .unwrap()
            .set_modified(SystemTime::now() - Duration::from_secs(120))
            .unwrap();
    };
    let spec = serde_json::json!({
        "name": "included_value",
        "inputs": [["a", "float32", [2]]],
        "outputs": [["out", "float32", [2]]],
        "header": format!("#include \"{}\"\n", params.display()),
        "source": "uint i = thread_position_in_grid.x; out[i] = a[i] + VAL;",
        "grid": [2, 1, 1],
        "data": {"a": [0.0, 10.0]}
    });
    let spec_path = tmp.path().join("spec.json");
    std::fs::write(&spec_path, spec.to_string()).unwrap();
    let run = || {
        kernelkit(&dir)
            .args(["run", spec_path.to_str().unwrap(), "--device", "cpu"])
            .output()
            .unwrap()
    };
    let values = |out: &Output| -> Vec<f64> {
        assert!(
            out.status.success(),
            "kernelkit run failed:\n{}",
            text(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        v["outputs"]["out"]["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect()
    };

    write_params("#define VAL 1.0f\n");
    assert_eq!(values(&run()), vec![1.0, 11.0]);
    assert_eq!(lifetime(&dir), (0, 1, 1, 0), "the first run compiles");
    assert_eq!(values(&run()), vec![1.0, 11.0]);
    assert_eq!(lifetime(&dir), (1, 1, 1, 0), "unchanged: a disk hit");

    write_params("#define VAL 2.0f\n");
    assert_eq!(values(&run()), vec![2.0, 12.0], "a stale entry was used");
    assert_eq!(
        lifetime(&dir),
        (1, 2, 2, 0),
        "changed: compiled and rewritten"
    );
    assert_eq!(entries(&dir).len(), 1, "the entry was overwritten");
    assert_eq!(values(&run()), vec![2.0, 12.0]);
    assert_eq!(lifetime(&dir), (2, 2, 2, 0), "the rewritten entry is a hit");

    std::fs::remove_file(&params).unwrap();
    let out = run();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("params.h"), "{stderr}");
    assert_eq!(lifetime(&dir), (2, 3, 2, 0), "deleted: a miss");
}
