//! The fleet tier between real `kernelkit` processes and a real Redis
//! server: sixteen processes, each with its own empty disk store (sixteen
//! nodes), run the same sixteen new kernels at once and compile each once
//! in all; `kernelkit cache … --remote` lists, verifies and clears what they
//! shared; with the server gone, the same run is right and compiles
//! everything locally. Skips with a printed reason without `redis-server`.

#![cfg(unix)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

#[path = "../../kernelkit/tests/common/redis_server.rs"]
mod redis_server;
use redis_server::{available, free_port, key_file, RedisServer};

/// A `kernelkit` command for node `disk` of the fleet at `url`.
fn kernelkit(disk: &Path, url: &str, key: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kernelkit"));
    cmd.env("KERNELKIT_CACHE", "disk")
        .env("KERNELKIT_CACHE_DIR", disk)
        .env("KERNELKIT_REMOTE_CACHE", url)
        .env("KERNELKIT_REMOTE_KEY_FILE", key)
        // 256 threads of 16 processes on a test machine's few cores: a
        // slow answer is not a fault here.
        .env("KERNELKIT_REMOTE_TIMEOUT", "10")
        .env("KERNELKIT_REMOTE_WAIT", "300")
        .env_remove("KERNELKIT_LOG")
        .stdin(Stdio::null());
    cmd
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The `key=value` pairs of a demo's `cache:` line (it must have passed).
fn summary(out: &Output) -> HashMap<String, f64> {
    let stdout = text(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("all results right"),
        "demo failed ({}):\n{stdout}\n{}",
        out.status,
        text(&out.stderr)
    );
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("cache: "))
        .unwrap_or_else(|| panic!("no cache: line in\n{stdout}"))
        .split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.parse().unwrap()))
        .collect()
}

/// Sixteen demos (sixteen kernels each, salted by `salt`) at once, each on
/// its own empty disk under `root`; their counters.
fn fleet(root: &Path, url: &str, key: &Path, salt: &str) -> Vec<HashMap<String, f64>> {
    let children: Vec<_> = (0..16)
        .map(|i| {
            let disk: PathBuf = root.join(format!("node{i}"));
            kernelkit(&disk, url, key)
                .args(["demo", "--device", "cpu", "--threads", "16", "--salt", salt])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    children
        .into_iter()
        .map(|c| summary(&c.wait_with_output().unwrap()))
        .collect()
}

fn total(runs: &[HashMap<String, f64>], field: &str) -> f64 {
    runs.iter().map(|r| r[field]).sum()
}

#[test]
fn sixteen_nodes_compile_sixteen_new_kernels_sixteen_times_in_all() {
    const TEST: &str = "sixteen_nodes_compile_sixteen_new_kernels_sixteen_times_in_all";
    if !available(TEST) {
        return;
    }
    let server = RedisServer::start(&[]);
    let tmp = tempfile::tempdir().unwrap();
    let key = key_file(tmp.path(), "fleet.key", 0x5a, 48);
    let salt = format!("{TEST} {}", std::process::id());
    let runs = fleet(&tmp.path().join("a"), &server.url(), &key, &salt);
    assert_eq!(total(&runs, "compiles"), 16.0, "{runs:?}");
    assert_eq!(total(&runs, "remote_hits"), 16.0 * 15.0, "{runs:?}");
    assert_eq!(total(&runs, "remote_writes"), 16.0, "{runs:?}");
    assert_eq!(
        total(&runs, "remote_errors") + total(&runs, "remote_rejected"),
        0.0
    );
    // Every node kept every kernel on its disk.
    assert_eq!(total(&runs, "disk_writes"), 256.0, "{runs:?}");

    // The tools see the sixteen entries, signed, and can clear them.
    let tool = |args: &[&str]| {
        kernelkit(&tmp.path().join("tool"), &server.url(), &key)
            .arg("cache")
            .args(args)
            .arg("--remote")
            .output()
            .unwrap()
    };
    let list = tool(&["list"]);
    assert!(list.status.success(), "{}", text(&list.stderr));
    let listed = text(&list.stdout);
    assert!(listed.contains("16 entries"), "{listed}");
    assert_eq!(
        listed
            .lines()
            .filter(|l| l.contains(" concurrent_kernel "))
            .count(),
        16,
        "{listed}"
    );
    let stats = tool(&["stats"]);
    assert!(
        text(&stats.stdout).contains("16 entries"),
        "{}",
        text(&stats.stdout)
    );
    let verify = tool(&["verify"]);
    assert!(verify.status.success());
    assert!(text(&verify.stdout).contains("16 good, 0 bad"));

    // A forged entry (its signature removed) is found by `verify`.
    let mut conn = server.connection();
    let sigs: Vec<String> = redis::cmd("KEYS")
        .arg("kernelkit:*:sig")
        .query(&mut conn)
        .unwrap();
    let _: () = redis::cmd("DEL").arg(&sigs[0]).query(&mut conn).unwrap();
    let verify = tool(&["verify"]);
    assert_eq!(verify.status.code(), Some(1));
    assert!(
        text(&verify.stdout).contains("15 good, 1 bad"),
        "{}",
        text(&verify.stdout)
    );

    let clear = tool(&["clear"]);
    assert!(text(&clear.stdout).contains("removed 16 entries"));
    let n: usize = redis::cmd("DBSIZE").query(&mut conn).unwrap();
    assert_eq!(n, 0);
}

/// No server where the fleet tier points: every node compiles every kernel
/// and every result is right.
#[test]
fn with_the_server_gone_every_node_compiles_and_every_result_is_right() {
    let tmp = tempfile::tempdir().unwrap();
    let key = key_file(tmp.path(), "fleet.key", 0x5b, 32);
    let url = format!("redis://127.0.0.1:{}", free_port());
    let salt = format!("server gone {}", std::process::id());
    let disk = tmp.path().join("node");
    let out = kernelkit(&disk, &url, &key)
        .args([
            "demo",
            "--device",
            "cpu",
            "--threads",
            "16",
            "--salt",
            &salt,
        ])
        .output()
        .unwrap();
    let s = summary(&out);
    assert_eq!(s["compiles"], 16.0, "{s:?}");
    assert_eq!(s["remote_hits"] + s["remote_writes"], 0.0, "{s:?}");
    assert!(s["remote_errors"] >= 1.0, "{s:?}");
    // The breaker: one failed connection, not one per kernel and step.
    assert!(s["remote_errors"] < 16.0, "{s:?}");
    let tool = kernelkit(&disk, &url, &key)
        .args(["cache", "stats", "--remote"])
        .output()
        .unwrap();
    assert_eq!(
        tool.status.code(),
        Some(2),
        "the tool says it cannot reach it"
    );
}
