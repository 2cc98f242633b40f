//! The fleet tier against a Redis that stalls or lies
//! (`common::fake_redis`): a server that trickles its reply costs one
//! command deadline and opens the breaker, without holding up the other
//! threads' compiles; a server that announces a gigabyte is refused from
//! the header, with the process's peak memory a few times the entry limit.
//!
//! Each runs over plain TCP and, with the `remote-tls` feature, over TLS
//! (`rediss://`, the fake's TLS side): the bounds hold below TLS too.
//!
//! Each test guards itself with a watchdog: a regression fails it instead
//! of hanging the run. Bounds on time are generous (a loaded two-core
//! machine): the point is "ends", not "fast".

#![cfg(unix)]

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use kernelkit::config::RemoteConfig;
use kernelkit::{CacheStats, Config, DType, Device, Kernel};

mod common;
use common::fake_redis::{Answer, FakeRedis, Transport};
use common::in_child;
use common::redis_server::key_file;
use common::salt;

/// Runs `body` on a thread of its own; fails if it has not ended after
/// `limit` (the thread is left behind: the process ends with the test
/// binary).
fn within<T: Send + 'static>(limit: Duration, body: impl FnOnce() -> T + Send + 'static) -> T {
    let (done, ended) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(body());
    });
    match ended.recv_timeout(limit) {
        Ok(v) => v,
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("still running after {limit:?}: the fleet tier hangs")
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("the test body panicked"),
    }
}

/// The fleet settings for the fake server at `url`: one-second deadlines,
/// a breaker that stays open for the whole test.
fn remote(url: &str, key: &Path, max_entry_bytes: u64) -> RemoteConfig {
    let mut r = RemoteConfig::default();
    r.urls = kernelkit::config::parse_remote_urls(url).unwrap();
    r.key_files = vec![key.to_path_buf()];
    r.connect_timeout = Duration::from_secs(1);
    r.op_timeout = Duration::from_secs(1);
    r.breaker_cooldown = Duration::from_secs(600);
    r.wait = Duration::from_secs(5);
    r.max_entry_bytes = max_entry_bytes;
    r
}

fn node(disk: PathBuf, remote: &RemoteConfig) -> Device {
    let config = Config::from_env().cache_dir(disk).remote(remote.clone());
    Device::builder().config(config).cpu().unwrap()
}

/// Compiles and runs `out = inp * n` (new by `salt`), checking the result.
fn run(device: &Device, n: u32, salt: &str) -> CacheStats {
    let kernel = Kernel::builder("hostile")
        .inputs(["inp"])
        .outputs(["out"])
        .source(format!(
            "// {salt}\nuint i = thread_position_in_grid.x;\nout[i] = inp[i] * {n}.0f;"
        ))
        .build()
        .unwrap();
    let x = device.array_from_slice(&[1.0f32, 2.0, 3.0], [3]).unwrap();
    let out = kernel
        .call([&x])
        .output([3], DType::F32)
        .grid([3, 1, 1])
        .on(device.default_stream())
        .launch()
        .unwrap();
    let n = n as f32;
    assert_eq!(out[0].to_vec::<f32>().unwrap(), [n, 2.0 * n, 3.0 * n]);
    device.cache_stats()
}

/// The fake's transport for a test: plain, or TLS with the certificate
/// this process trusts. `None`, with the reason
/// printed, when TLS cannot be set up here (no `openssl` command).
fn over(test: &str, tls: bool) -> Option<Transport> {
    if !tls {
        return Some(Transport::Plain);
    }
    #[cfg(feature = "remote-tls")]
    {
        match common::fake_redis::TestCert::shared() {
            Ok(cert) => Some(cert.server()),
            Err(why) => {
                println!("{test}: skipped: {why}");
                None
            }
        }
    }
    #[cfg(not(feature = "remote-tls"))]
    {
        println!("{test}: skipped: built without the `remote-tls` feature");
        None
    }
}

#[test]
fn a_trickling_server_costs_one_deadline_opens_the_breaker_and_blocks_no_other_compile() {
    trickle(
        "a_trickling_server_costs_one_deadline_opens_the_breaker_and_blocks_no_other_compile",
        false,
        Answer::Trickle,
    );
}

#[test]
fn a_trickling_tls_server_costs_one_deadline_and_opens_the_breaker() {
    trickle(
        "a_trickling_tls_server_costs_one_deadline_and_opens_the_breaker",
        true,
        Answer::Trickle,
    );
}

/// The reply is sent whole, its TLS record's bytes a half second apart
/// (100 s for all of them): each socket read gets a byte, none waits long,
/// and the command still ends at its deadline.
#[test]
fn a_tls_server_that_trickles_the_bytes_of_a_record_costs_one_deadline() {
    trickle(
        "a_tls_server_that_trickles_the_bytes_of_a_record_costs_one_deadline",
        true,
        Answer::TrickleBytes,
    );
}

fn trickle(test: &'static str, tls: bool, how: Answer) {
    let Some(transport) = over(test, tls) else {
        return;
    };
    let fake = FakeRedis::start_over(transport, move |name, _| match name {
        "MGET" => how,
        _ => Answer::One,
    });
    let dir = tempfile::tempdir().unwrap();
    let key = key_file(dir.path(), "k", 7, 32);
    let r = remote(&fake.url(), &key, 1 << 20);
    let device = node(dir.path().join("disk"), &r);
    let salt = salt(test);
    let started = Instant::now();
    // Four threads compile four kernels at once: one of them meets the
    // trickle; none waits for it past its own deadline.
    let stats = within(Duration::from_secs(120), move || {
        let threads: Vec<_> = (1..=4)
            .map(|n| {
                let (device, salt) = (device.clone(), salt.clone());
                std::thread::spawn(move || run(&device, n, &salt))
            })
            .collect();
        for t in threads {
            t.join().expect("a compile thread");
        }
        device.cache_stats()
    });
    let took = started.elapsed();
    println!("{test}: four compiles in {took:?}");
    assert_eq!(stats.compiles, 4, "{}", stats.summary());
    assert!(stats.remote_errors >= 1, "{}", stats.summary());
    // The stalled read opened the breaker: nothing else was asked of the
    // server (no other read, no lease, no write) while it stays open.
    assert_eq!(fake.seen("MGET"), 1, "{}", stats.summary());
    assert_eq!(fake.seen("EVAL"), 0, "{}", stats.summary());
    // A deadline of 1 s, four small compiles: far less than this.
    assert!(took < Duration::from_secs(60), "{took:?}");
}

/// Peak resident memory of this process so far (`VmHWM`), in bytes.
fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().strip_suffix("kB"))
        .and_then(|v| v.trim().parse().ok())
        .expect("VmHWM in /proc/self/status");
    kb * 1024
}

#[test]
fn a_reply_announcing_a_gigabyte_is_refused_from_its_header_in_bounded_memory() {
    gigabyte(
        "a_reply_announcing_a_gigabyte_is_refused_from_its_header_in_bounded_memory",
        false,
    );
}

#[test]
fn a_tls_reply_announcing_a_gigabyte_is_refused_from_its_header_in_bounded_memory() {
    gigabyte(
        "a_tls_reply_announcing_a_gigabyte_is_refused_from_its_header_in_bounded_memory",
        true,
    );
}

fn gigabyte(test: &'static str, tls: bool) {
    if !Path::new("/proc/self/status").exists() {
        println!("{test}: skipped: no /proc/self/status to read the peak memory from");
        return;
    }
    // In a process of its own: the peak is this test's alone.
    if !in_child(test, &[("KERNELKIT_CACHE", OsString::from("memory"))]) {
        return;
    }
    let Some(transport) = over(test, tls) else {
        return;
    };
    const LIMIT: u64 = 1 << 20;
    // The first read finds nothing (a warm-up compile: what a first
    // compile allocates is not counted), every later one the gigabyte.
    let fake = FakeRedis::start_over(transport, |name, before| match (name, before) {
        ("MGET", 0) => Answer::Nothing,
        ("MGET", _) => Answer::Gigabyte,
        ("GET", _) => Answer::Nil,
        _ => Answer::One,
    });
    let dir = tempfile::tempdir().unwrap();
    let key = key_file(dir.path(), "k", 7, 32);
    let r = remote(&fake.url(), &key, LIMIT);
    let device = node(dir.path().join("disk"), &r);
    let salt = salt(test);
    let (before, after, stats) = within(Duration::from_secs(120), move || {
        run(&device, 1, &salt);
        let before = peak_rss();
        let stats = run(&device, 2, &salt);
        (before, peak_rss(), stats)
    });
    let grew = after.saturating_sub(before);
    println!("{test}: peak resident memory grew by {grew} bytes (limit {LIMIT})");
    assert!(
        grew < 4 * LIMIT,
        "peak memory grew by {grew} bytes reading a reply that announced 1 GiB (limit {LIMIT})"
    );
    assert_eq!(stats.compiles, 2, "{}", stats.summary());
    assert!(stats.remote_rejected >= 1, "{}", stats.summary());
    assert!(fake.seen("MGET") >= 2, "the gigabyte was asked for");
}

#[test]
fn a_cluster_node_that_redirects_to_a_hostile_one_is_held_to_the_same_bounds() {
    redirected(
        "a_cluster_node_that_redirects_to_a_hostile_one_is_held_to_the_same_bounds",
        false,
    );
}

#[test]
fn a_tls_cluster_node_that_redirects_to_a_hostile_one_is_held_to_the_same_bounds() {
    redirected(
        "a_tls_cluster_node_that_redirects_to_a_hostile_one_is_held_to_the_same_bounds",
        true,
    );
}

fn redirected(test: &'static str, tls: bool) {
    let Some(transport) = over(test, tls) else {
        return;
    };
    // The node that really serves the slot announces a gigabyte, then
    // trickles; the seed redirects every read to it.
    let hostile =
        FakeRedis::start_cluster_over(transport.clone(), |name, before| match (name, before) {
            ("MGET", 0) => Answer::Gigabyte,
            ("MGET", _) => Answer::Trickle,
            ("GET", _) => Answer::Nil,
            _ => Answer::One,
        });
    let to = hostile.port;
    let seed = FakeRedis::start_cluster_over(transport, move |name, _| match name {
        "MGET" | "GET" => Answer::Moved(to),
        _ => Answer::One,
    });
    let dir = tempfile::tempdir().unwrap();
    let key = key_file(dir.path(), "k", 7, 32);
    let r = remote(&seed.url(), &key, 1 << 20);
    let device = node(dir.path().join("disk"), &r);
    let salt = salt(test);
    let stats = within(Duration::from_secs(120), move || {
        run(&device, 1, &salt);
        run(&device, 2, &salt)
    });
    assert_eq!(stats.compiles, 2, "{}", stats.summary());
    // The gigabyte: refused from its header, an entry not used.
    assert!(stats.remote_rejected >= 1, "{}", stats.summary());
    // The trickle: past its deadline, an error that opened the breaker.
    assert!(stats.remote_errors >= 1, "{}", stats.summary());
    // The first read went to the seed and was redirected; the map, loaded
    // again from the node it named, sends the second there directly.
    assert_eq!(seed.seen("MGET"), 1);
    assert_eq!(hostile.seen("MGET"), 2);
    assert!(hostile.seen("CLUSTER") >= 1, "the map was reloaded there");
}
