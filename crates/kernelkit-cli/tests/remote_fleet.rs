//! The fleet tier between real `kernelkit` processes and a real Redis
//! server: sixteen processes, each with its own empty disk store (sixteen
//! nodes), run the same sixteen new kernels at once and compile each once
//! in all; `kernelkit cache … --remote` lists, verifies and clears what they
//! shared; with the server gone, the same run is right and compiles
//! everything locally; against a server that trickles its replies or
//! announces a gigabyte, `kernelkit run` ends in its deadline with the
//! right result. Skips with a printed reason without `redis-server` (the
//! hostile servers are the test's own).

#![cfg(unix)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

#[path = "../../kernelkit/tests/common/redis_server.rs"]
mod redis_server;
use redis_server::{available, free_port, key_file, RedisServer};
#[path = "../../kernelkit/tests/common/fake_redis.rs"]
mod fake_redis;
use fake_redis::{Answer, FakeRedis};

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

/// `kernelkit run` of a new kernel against a Redis that stalls or lies
/// (`fake_redis`), with a one-second `KERNELKIT_REMOTE_TIMEOUT` and a
/// 1 MiB entry limit: the run ends with the right result, in the deadline
/// plus the compile (bounded generously here: a loaded machine). The child
/// is killed, and the test fails, if it runs past two minutes.
fn run_against(fake: &FakeRedis, salt: &str) -> (serde_json::Value, Duration) {
    let tmp = tempfile::tempdir().unwrap();
    let key = key_file(tmp.path(), "fleet.key", 0x5c, 32);
    let spec = tmp.path().join("spec.json");
    let body = serde_json::json!({
        "name": "hostile",
        "inputs": [["inp", "float32", [4]]],
        "outputs": [["out", "float32", [4]]],
        "source": format!("// {salt}\nuint i = thread_position_in_grid.x;\nout[i] = inp[i] * 3.0f;"),
        "grid": [4, 1, 1],
        "threadgroup": [1, 1, 1],
        "data": {"inp": [1.0, 2.0, 3.0, 4.0]},
    });
    std::fs::write(&spec, body.to_string()).unwrap();
    let started = Instant::now();
    let mut child = kernelkit(&tmp.path().join("node"), &fake.url(), &key)
        .env("KERNELKIT_REMOTE_TIMEOUT", "1")
        .args(["run", spec.to_str().unwrap(), "--device", "cpu"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("kernelkit run against a hostile Redis still ran after 120 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let took = started.elapsed();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "kernelkit run: {}\n{}",
        out.status,
        text(&out.stderr)
    );
    let result: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let data: Vec<f64> = result["outputs"]["out"]["data"]
        .as_array()
        .unwrap_or_else(|| panic!("no output data in {result}"))
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert_eq!(data, [3.0, 6.0, 9.0, 12.0], "{result}");
    (result, took)
}

#[test]
fn kernelkit_run_against_a_trickling_redis_ends_with_the_right_result() {
    let fake = FakeRedis::start(|name, _| match name {
        "MGET" => Answer::Trickle,
        _ => Answer::One,
    });
    let salt = format!("trickle {}", std::process::id());
    let (_, took) = run_against(&fake, &salt);
    // One second of deadline and a small compile.
    assert!(took < Duration::from_secs(60), "{took:?}");
    assert_eq!(fake.seen("MGET"), 1, "the breaker opened after the stall");
}

#[test]
fn kernelkit_run_against_a_redis_announcing_a_gigabyte_ends_with_the_right_result() {
    let fake = FakeRedis::start(|name, _| match name {
        "MGET" => Answer::Gigabyte,
        "GET" => Answer::Nil,
        _ => Answer::One,
    });
    let salt = format!("gigabyte {}", std::process::id());
    let (_, took) = run_against(&fake, &salt);
    assert!(took < Duration::from_secs(60), "{took:?}");
    assert!(fake.seen("MGET") >= 1);
}
