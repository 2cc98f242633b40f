//! The fleet tier against real Redis servers (standalone and a three-master
//! cluster) that each test starts on free loopback ports: a kernel
//! compiled on one node is loaded on another; entries that are not signed
//! by a key the node holds, or are corrupt, are never loaded; a server
//! killed, restarted empty, stalled or full costs compiles, never a call;
//! sixteen processes racing on one key compile it once.
//!
//! Each "node" is a CPU device with its own empty disk store. The tests
//! skip with a printed reason where `redis-server` is absent.

#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use kernelkit::cache::key::ModuleKey;
use kernelkit::cache::remote::keyring::Keyring;
use kernelkit::cache::remote::RemoteCache;
use kernelkit::config::RemoteConfig;
use kernelkit::{CacheStats, Config, DType, Device, Kernel};

mod common;
use common::redis_server::{available, key_file, RedisCluster, RedisServer};
use common::{children_at_once, is_child, salt, wait_for_start};

/// The fleet settings for `urls` with `keys`, short waits for tests.
fn remote(urls: &str, keys: &[PathBuf]) -> RemoteConfig {
    let mut r = RemoteConfig::default();
    r.urls = kernelkit::config::parse_remote_urls(urls).unwrap();
    r.key_files = keys.to_vec();
    r.breaker_cooldown = Duration::from_millis(200);
    r.wait = Duration::from_secs(60);
    // A test machine may be busy with other tests: a command that takes
    // long is not a fault here (the stall test sets its own).
    r.connect_timeout = Duration::from_secs(10);
    r.op_timeout = Duration::from_secs(10);
    r
}

/// A node: a new CPU device with its own disk store in `disk` and the
/// fleet tier `remote`.
fn node(disk: &Path, remote: &RemoteConfig) -> Device {
    let config = Config::from_env().cache_dir(disk).remote(remote.clone());
    Device::builder().config(config).cpu().unwrap()
}

/// Runs kernel `out = inp * n + salt` on `device`; checks the result;
/// returns the device's counters after it.
fn run(device: &Device, n: u32, salt: &str) -> CacheStats {
    let kernel = fleet_kernel(n, salt);
    let x = device
        .array_from_slice(&[1.0f32, 2.0, 3.0, 4.0], [4])
        .unwrap();
    let out = kernel
        .call([&x])
        .output([4], DType::F32)
        .grid([4, 1, 1])
        .on(device.default_stream())
        .launch()
        .unwrap();
    let want: Vec<f32> = [1.0f32, 2.0, 3.0, 4.0]
        .iter()
        .map(|v| v * n as f32)
        .collect();
    assert_eq!(out[0].to_vec::<f32>().unwrap(), want, "kernel {n}");
    device.cache_stats()
}

/// The kernel `out = inp * n` of [`run`], new to a server by its `salt`.
fn fleet_kernel(n: u32, salt: &str) -> Kernel {
    Kernel::builder("fleet")
        .inputs(["inp"])
        .outputs(["out"])
        .source(format!(
            "// {salt}\nuint i = thread_position_in_grid.x;\nout[i] = inp[i] * {n}.0f;"
        ))
        .build()
        .unwrap()
}

/// Where `device` would find [`run`]'s kernel `n` (nothing compiled,
/// loaded or counted).
fn state(device: &Device, n: u32, salt: &str) -> kernelkit::CacheState {
    let x = device
        .array_from_slice(&[1.0f32, 2.0, 3.0, 4.0], [4])
        .unwrap();
    let kernel = fleet_kernel(n, salt);
    let state = kernel
        .call([&x])
        .output([4], DType::F32)
        .grid([4, 1, 1])
        .on(device.default_stream())
        .cache_state()
        .unwrap();
    state
}

struct Dirs {
    root: tempfile::TempDir,
}

impl Dirs {
    fn new() -> Dirs {
        Dirs {
            root: tempfile::tempdir().unwrap(),
        }
    }
    fn disk(&self, name: &str) -> PathBuf {
        self.root.path().join(name)
    }
    fn key(&self, name: &str, byte: u8) -> PathBuf {
        key_file(self.root.path(), name, byte, 32)
    }
}

/// The round trip on one server: node A compiles and shares; node B (an
/// empty disk) loads A's entry without compiling and keeps it on its disk;
/// node C on B's disk finds it there without asking the fleet.
fn round_trip(urls: &str, kernels: u32, test: &str) {
    let d = Dirs::new();
    let r = remote(urls, &[d.key("k", 1)]);
    let salt = salt(test);
    let a = node(&d.disk("a"), &r);
    for n in 1..=kernels {
        run(&a, n, &salt);
    }
    let s = a.cache_stats();
    let k = kernels as u64;
    assert_eq!(
        (s.compiles, s.disk_writes, s.remote_writes, s.remote_misses),
        (k, k, k, k),
        "{}",
        s.summary()
    );
    assert_eq!(
        (s.remote_errors, s.remote_rejected),
        (0, 0),
        "{}",
        s.summary()
    );

    let b = node(&d.disk("b"), &r);
    for n in 1..=kernels {
        run(&b, n, &salt);
    }
    let s = b.cache_stats();
    assert_eq!(
        (s.compiles, s.remote_hits, s.disk_writes, s.remote_writes),
        (0, k, k, 0),
        "node B loads A's kernels and keeps them on its disk: {}",
        s.summary()
    );

    let c = node(&d.disk("b"), &r);
    for n in 1..=kernels {
        run(&c, n, &salt);
    }
    let s = c.cache_stats();
    assert_eq!(
        (s.compiles, s.disk_hits, s.remote_hits),
        (0, k, 0),
        "node C finds them on B's disk: {}",
        s.summary()
    );

    // The tools see them, and they verify.
    let admin = RemoteCache::open(&r).unwrap();
    let report = admin.verify().unwrap();
    assert!(report.bad.is_empty(), "{:?}", report.bad);
    assert!(report.good >= kernels as usize);
    let listed = admin.list().unwrap();
    assert!(
        listed
            .iter()
            .filter(|e| e.header.as_ref().is_ok_and(|h| h.kernel == "fleet"))
            .count()
            >= kernels as usize
    );
    let stats = admin.stats().unwrap();
    assert!(stats.servers.iter().map(|s| s.entries).sum::<u64>() >= kernels as u64);
}

#[test]
fn a_kernel_compiled_on_one_node_is_loaded_on_another() {
    const TEST: &str = "a_kernel_compiled_on_one_node_is_loaded_on_another";
    if !available(TEST) {
        return;
    }
    let server = RedisServer::start(&[]);
    round_trip(&server.url(), 2, TEST);
    // `clear` removes every entry.
    let d = Dirs::new();
    let admin = RemoteCache::open(&remote(&server.url(), &[d.key("k", 1)])).unwrap();
    assert_eq!(admin.clear().unwrap(), 2);
    assert_eq!(admin.list().unwrap().len(), 0);
}

/// `rediss://`: the round trip (the compiles' reads and writes, and the
/// tools' listing, verification and statistics) against a real
/// `redis-server` speaking TLS, with a certificate made for the test and
/// trusted through `SSL_CERT_FILE`.
#[cfg(feature = "remote-tls")]
#[test]
fn a_kernel_compiled_on_one_node_is_loaded_on_another_over_tls() {
    const TEST: &str = "a_kernel_compiled_on_one_node_is_loaded_on_another_over_tls";
    if !available(TEST) {
        return;
    }
    let cert = match common::fake_redis::TestCert::shared() {
        Ok(c) => c,
        Err(why) => {
            println!("{TEST}: skipped: {why}");
            return;
        }
    };
    let server = match RedisServer::start_tls(&cert.cert(), &cert.key()) {
        Ok(s) => s,
        Err(why) => {
            println!("{TEST}: skipped: {why}");
            return;
        }
    };
    round_trip(&server.tls_url(), 2, TEST);
}

#[test]
fn a_three_master_cluster_serves_the_fleet() {
    const TEST: &str = "a_three_master_cluster_serves_the_fleet";
    if !available(TEST) {
        return;
    }
    let cluster = RedisCluster::start();
    round_trip(&cluster.urls(), 6, TEST);
    // One seed is enough: the node says it is in a cluster.
    round_trip(&cluster.nodes[1].url(), 1, "single seed");
    let d = Dirs::new();
    let admin = RemoteCache::open(&remote(&cluster.urls(), &[d.key("k", 1)])).unwrap();
    assert_eq!(admin.stats().unwrap().servers.len(), 3, "every master");
    assert_eq!(admin.clear().unwrap(), 7);
}

#[test]
fn entries_signed_with_another_key_are_never_loaded() {
    const TEST: &str = "entries_signed_with_another_key_are_never_loaded";
    if !available(TEST) {
        return;
    }
    let server = RedisServer::start(&[]);
    let d = Dirs::new();
    let (old, new) = (d.key("old", 1), d.key("new", 2));
    let salt = salt(TEST);
    let writer = node(
        &d.disk("w"),
        &remote(&server.url(), std::slice::from_ref(&old)),
    );
    run(&writer, 3, &salt);

    let stranger = node(
        &d.disk("s"),
        &remote(&server.url(), std::slice::from_ref(&new)),
    );
    let s = run(&stranger, 3, &salt);
    assert_eq!(
        (s.compiles, s.remote_hits, s.remote_rejected),
        (1, 0, 1),
        "{}",
        s.summary()
    );

    // A rotation: the new key signs, the old one still verifies.
    let rotated = node(&d.disk("r"), &remote(&server.url(), &[new, old]));
    let s = run(&rotated, 3, &salt);
    assert_eq!(
        (s.compiles, s.remote_hits, s.remote_rejected),
        (0, 1, 0),
        "{}",
        s.summary()
    );
}

#[test]
fn corrupt_unsigned_or_misplaced_entries_are_never_loaded() {
    const TEST: &str = "corrupt_unsigned_or_misplaced_entries_are_never_loaded";
    if !available(TEST) {
        return;
    }
    let server = RedisServer::start(&[]);
    let d = Dirs::new();
    let r = remote(&server.url(), &[d.key("k", 7)]);
    let salt = salt(TEST);
    let mut conn = server.connection();
    let entries = |conn: &mut redis::Connection| -> Vec<String> {
        redis::cmd("KEYS")
            .arg("kernelkit:*:entry")
            .query(conn)
            .unwrap()
    };
    run(&node(&d.disk("w"), &r), 5, &salt);
    let five = entries(&mut conn).pop().unwrap();
    let tag = |name: &str| name.trim_end_matches(":entry").to_string();
    // A fresh node runs kernel 5 and reports what the fleet gave it.
    let mut fresh_runs = 0;
    let mut fresh = || {
        fresh_runs += 1;
        run(&node(&d.disk(&format!("f{fresh_runs}")), &r), 5, &salt)
    };

    // One byte flipped (inside the payload): the signature no longer
    // matches.
    let len: usize = redis::cmd("STRLEN").arg(&five).query(&mut conn).unwrap();
    let _: () = redis::cmd("SETRANGE")
        .arg(&five)
        .arg(len - 20)
        .arg(&b"\xff"[..])
        .query(&mut conn)
        .unwrap();
    let s = fresh();
    assert_eq!(
        (
            s.remote_rejected,
            s.remote_hits,
            s.compiles,
            s.remote_writes
        ),
        (1, 0, 1, 1),
        "a flipped byte (the compile rewrites it): {}",
        s.summary()
    );
    assert_eq!(fresh().remote_hits, 1, "rewritten");

    // The signature removed: unsigned.
    let _: () = redis::cmd("DEL")
        .arg(format!("{}:sig", tag(&five)))
        .query(&mut conn)
        .unwrap();
    let s = fresh();
    assert_eq!(
        (s.remote_rejected, s.remote_hits, s.compiles),
        (1, 0, 1),
        "an unsigned entry: {}",
        s.summary()
    );

    // A good entry of another kernel, rightly signed for the key it is
    // stored under: refused by the key check inside the entry.
    run(&node(&d.disk("w6"), &r), 6, &salt);
    let six = entries(&mut conn).into_iter().find(|e| *e != five).unwrap();
    let other: Vec<u8> = redis::cmd("GET").arg(&six).query(&mut conn).unwrap();
    let target =
        ModuleKey::from_hex(&five[five.find('{').unwrap() + 1..five.find('}').unwrap()]).unwrap();
    let ring = Keyring::from_bytes(&[&[7u8; 32]]).unwrap();
    let _: () = redis::cmd("SET")
        .arg(&five)
        .arg(&other)
        .query(&mut conn)
        .unwrap();
    let _: () = redis::cmd("SET")
        .arg(format!("{}:sig", tag(&five)))
        .arg(ring.sign(&target, &other))
        .query(&mut conn)
        .unwrap();
    let s = fresh();
    assert_eq!(
        (s.remote_rejected, s.remote_hits, s.compiles),
        (1, 0, 1),
        "an entry under another key: {}",
        s.summary()
    );
    let report = RemoteCache::open(&r).unwrap().verify().unwrap();
    assert_eq!((report.good, report.bad.len()), (2, 0), "all rewritten");
}

#[test]
fn a_server_killed_mid_run_then_restarted_empty_costs_only_compiles() {
    const TEST: &str = "a_server_killed_mid_run_then_restarted_empty_costs_only_compiles";
    if !available(TEST) {
        return;
    }
    let mut server = RedisServer::start(&[]);
    let d = Dirs::new();
    let mut r = remote(&server.url(), &[d.key("k", 3)]);
    r.breaker_cooldown = Duration::from_secs(3);
    let salt = salt(TEST);
    let a = node(&d.disk("a"), &r);
    run(&a, 1, &salt);
    server.kill();
    let s = run(&a, 2, &salt);
    assert_eq!(s.compiles, 2, "{}", s.summary());
    assert!(s.remote_errors >= 1, "{}", s.summary());
    let errors = s.remote_errors;
    // The breaker is open: the next kernel does not ask the dead server,
    // except for one probe if a compile outlasted the cooldown.
    let s = run(&a, 3, &salt);
    assert_eq!(s.compiles, 3, "{}", s.summary());
    assert!(s.remote_errors <= errors + 1, "{}", s.summary());

    server.restart_empty();
    std::thread::sleep(Duration::from_millis(3100)); // past the cooldown
    let s = run(&a, 4, &salt);
    assert_eq!((s.compiles, s.remote_writes), (4, 2), "{}", s.summary());
    // Another node: kernel 4 from the fleet, kernel 1 gone with the
    // restart (compiled again).
    let b = node(&d.disk("b"), &r);
    let s = run(&b, 4, &salt);
    assert_eq!((s.compiles, s.remote_hits), (0, 1), "{}", s.summary());
    let s = run(&b, 1, &salt);
    assert_eq!((s.compiles, s.remote_hits), (1, 1), "{}", s.summary());
}

#[test]
fn a_stalled_server_is_waited_for_briefly_then_skipped() {
    const TEST: &str = "a_stalled_server_is_waited_for_briefly_then_skipped";
    if !available(TEST) {
        return;
    }
    let server = RedisServer::start(&[]);
    let d = Dirs::new();
    let mut r = remote(&server.url(), &[d.key("k", 4)]);
    r.breaker_cooldown = Duration::from_secs(30);
    r.connect_timeout = Duration::from_secs(1);
    r.op_timeout = Duration::from_secs(1);
    let salt = salt(TEST);
    let a = node(&d.disk("a"), &r);
    run(&a, 1, &salt);
    server.stall();
    let b = node(&d.disk("b"), &r);
    for n in 1..=3 {
        run(&b, n, &salt);
    }
    let s = b.cache_stats();
    server.resume();
    assert_eq!(s.compiles, 3, "{}", s.summary());
    assert!(s.remote_errors >= 1, "{}", s.summary());
    // Each of the three would wait out its own timeouts without the
    // breaker: it opened at the first (a count, not a time: at most the
    // connect, read and claim of the first kernel failed).
    assert!(s.remote_errors <= 3, "{}", s.summary());
}

#[test]
fn a_full_server_refuses_writes_and_calls_still_succeed() {
    const TEST: &str = "a_full_server_refuses_writes_and_calls_still_succeed";
    if !available(TEST) {
        return;
    }
    let server = RedisServer::start(&["--maxmemory", "1", "--maxmemory-policy", "noeviction"]);
    let d = Dirs::new();
    let r = remote(&server.url(), &[d.key("k", 5)]);
    let salt = salt(TEST);
    let a = node(&d.disk("a"), &r);
    let s = run(&a, 1, &salt);
    let s2 = run(&a, 2, &salt);
    assert_eq!(s2.compiles, 2, "{}", s2.summary());
    assert_eq!(s2.remote_writes, 0, "{}", s2.summary());
    assert!(
        s.remote_errors >= 1 && s2.remote_errors >= 2,
        "{}",
        s2.summary()
    );

    // With an eviction policy the server makes room, and the fleet works.
    let lru = RedisServer::start(&["--maxmemory", "64mb", "--maxmemory-policy", "allkeys-lru"]);
    let r = remote(&lru.url(), &[d.key("k", 5)]);
    run(&node(&d.disk("c"), &r), 1, &salt);
    let s = run(&node(&d.disk("e"), &r), 1, &salt);
    assert_eq!((s.compiles, s.remote_hits), (0, 1), "{}", s.summary());
}

#[test]
fn without_a_usable_key_the_fleet_tier_stays_off() {
    const TEST: &str = "without_a_usable_key_the_fleet_tier_stays_off";
    if !available(TEST) {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let server = RedisServer::start(&[]);
    let d = Dirs::new();
    let salt = salt(TEST);
    let open_key = d.key("open", 1);
    std::fs::set_permissions(&open_key, std::fs::Permissions::from_mode(0o644)).unwrap();
    let short = key_file(d.root.path(), "short", 1, 31);
    for keys in [vec![], vec![open_key], vec![short]] {
        let a = node(&d.disk("a"), &remote(&server.url(), &keys));
        let s = run(&a, 1, &salt);
        assert_eq!(
            (s.remote_misses, s.remote_writes, s.remote_errors),
            (0, 0, 0),
            "{keys:?}: {}",
            s.summary()
        );
    }
    let n: usize = redis::cmd("DBSIZE")
        .query(&mut server.connection())
        .unwrap();
    assert_eq!(n, 0, "nothing was written unsigned");
}

/// Sixteen processes, each with its own empty disk store, start the same
/// new kernel at once: one compiles, the others wait for its entry.
#[test]
fn sixteen_processes_racing_on_one_key_compile_it_once() {
    const TEST: &str = "sixteen_processes_racing_on_one_key_compile_it_once";
    if is_child(TEST) {
        let var = |n: &str| std::env::var(n).unwrap();
        let r = remote(&var("KK_TEST_REDIS"), &[PathBuf::from(var("KK_TEST_KEY"))]);
        let device = node(Path::new(&var("KK_TEST_DISK")), &r);
        wait_for_start();
        let s = run(&device, 9, &var("KK_TEST_SALT"));
        println!("compiles={} remote_hits={}", s.compiles, s.remote_hits);
        return;
    }
    if !available(TEST) {
        return;
    }
    let server = RedisServer::start(&[]);
    let d = Dirs::new();
    let key = d.key("k", 6);
    let salt = salt(TEST);
    let outputs = children_at_once(TEST, 16, |i| {
        vec![
            ("KK_TEST_REDIS", server.url().into()),
            ("KK_TEST_KEY", key.clone().into()),
            ("KK_TEST_DISK", d.disk(&format!("node{i}")).into()),
            ("KK_TEST_SALT", salt.clone().into()),
        ]
    });
    let mut compiles = 0;
    let mut hits = 0;
    for out in outputs {
        let stdout = String::from_utf8_lossy(&out.stdout);
        // The test harness may print the test's name on the same line.
        let line = stdout
            .lines()
            .find_map(|l| l.find("compiles=").map(|at| &l[at..]))
            .expect("the child's counters");
        let field = |name: &str| -> u64 {
            line.split_whitespace()
                .find_map(|f| f.strip_prefix(name))
                .unwrap()
                .parse()
                .unwrap()
        };
        compiles += field("compiles=");
        hits += field("remote_hits=");
    }
    assert_eq!(
        (compiles, hits),
        (1, 15),
        "one compile for sixteen processes"
    );
}

/// A compile that outlasts the lease many times over keeps it (renewed
/// while it runs): a second node that misses the kernel meanwhile waits for
/// the entry and compiles nothing.
#[test]
fn a_long_compile_keeps_its_lease_and_the_other_node_waits() {
    const TEST: &str = "a_long_compile_keeps_its_lease_and_the_other_node_waits";
    if !available(TEST) {
        return;
    }
    let server = RedisServer::start(&[]);
    let d = Dirs::new();
    // A compiler that takes 2 s (every call: both nodes use it, so the
    // kernel's key is the same for both).
    let (_script_dir, slow) = common::script("sleep 2\nexec c++ \"$@\"");
    let mut r = remote(&server.url(), &[d.key("k", 8)]);
    r.lease = Duration::from_millis(300);
    let salt = salt(TEST);
    let open = |name: &str| {
        let config = Config::from_env()
            .cache_dir(d.disk(name))
            .remote(r.clone())
            .compiler(slow.to_str().unwrap())
            .pch_dir(None);
        Device::builder().config(config).cpu().unwrap()
    };
    let (a, b) = (open("a"), open("b"));
    let mut conn = server.connection();
    std::thread::scope(|s| {
        let first = s.spawn(|| run(&a, 2, &salt));
        // B starts once A holds the lease.
        loop {
            let leases: Vec<String> = redis::cmd("KEYS")
                .arg("kernelkit:*:lease")
                .query(&mut conn)
                .unwrap();
            if !leases.is_empty() {
                break;
            }
            assert!(!first.is_finished(), "A finished without a lease");
            std::thread::sleep(Duration::from_millis(5));
        }
        let sb = run(&b, 2, &salt);
        let sa = first.join().unwrap();
        assert_eq!((sa.compiles, sa.remote_writes), (1, 1), "{}", sa.summary());
        assert_eq!(
            (sb.compiles, sb.remote_hits),
            (0, 1),
            "B waited past many lease lifetimes: {}",
            sb.summary()
        );
    });
}

/// A lease whose holder died (taken here by hand, never renewed, never
/// released) expires, and the next node takes over and compiles; without
/// the expiry it would wait for its whole wait bound (an hour here).
#[test]
fn a_dead_compilers_lease_expires_and_another_node_takes_over() {
    const TEST: &str = "a_dead_compilers_lease_expires_and_another_node_takes_over";
    if !available(TEST) {
        return;
    }
    let (scout, server) = (RedisServer::start(&[]), RedisServer::start(&[]));
    let d = Dirs::new();
    let key = d.key("k", 9);
    let salt = salt(TEST);
    // The kernel's Redis keys, learned from a scout server.
    run(
        &node(
            &d.disk("scout"),
            &remote(&scout.url(), std::slice::from_ref(&key)),
        ),
        4,
        &salt,
    );
    let entry: Vec<String> = redis::cmd("KEYS")
        .arg("kernelkit:*:entry")
        .query(&mut scout.connection())
        .unwrap();
    let lease = entry[0].replace(":entry", ":lease");
    // A compiler that died holding the lease (1.5 s left).
    let mut conn = server.connection();
    let _: () = redis::cmd("SET")
        .arg(&lease)
        .arg("a-dead-process")
        .arg("PX")
        .arg(1500)
        .query(&mut conn)
        .unwrap();
    let mut r = remote(&server.url(), &[key]);
    r.wait = Duration::from_secs(3600);
    let s = run(&node(&d.disk("n"), &r), 4, &salt);
    assert_eq!((s.compiles, s.remote_writes), (1, 1), "{}", s.summary());
    let left: Option<String> = redis::cmd("GET").arg(&lease).query(&mut conn).unwrap();
    assert_eq!(left, None, "the new holder released its lease");
}

#[test]
fn cache_state_tells_the_fleet_tier_from_the_disk() {
    const TEST: &str = "cache_state_tells_the_fleet_tier_from_the_disk";
    if !available(TEST) {
        return;
    }
    let server = RedisServer::start(&[]);
    let d = Dirs::new();
    let key = d.key("k", 1);
    let r = remote(&server.url(), std::slice::from_ref(&key));
    let salt = salt(TEST);
    let a = node(&d.disk("a"), &r);
    let before = state(&a, 4, &salt);
    assert!(!before.compiled(), "nothing anywhere yet: {before:?}");
    run(&a, 4, &salt);

    // Node B: the kernel is in the fleet tier only; asking counts nothing.
    let b = node(&d.disk("b"), &r);
    let seen = state(&b, 4, &salt);
    assert!(
        seen.remote && !seen.disk && !seen.memory && seen.compiled(),
        "{seen:?}"
    );
    let s = b.cache_stats();
    assert_eq!(
        (
            s.remote_hits,
            s.remote_misses,
            s.remote_rejected,
            s.compiles
        ),
        (0, 0, 0, 0),
        "{}",
        s.summary()
    );
    // Its first call loads it from the fleet and keeps it on B's disk.
    let s = run(&b, 4, &salt);
    assert_eq!((s.compiles, s.remote_hits), (0, 1), "{}", s.summary());
    let after = state(&node(&d.disk("b"), &r), 4, &salt);
    assert!(after.disk, "{after:?}");

    // A node that holds another key would reject the entry: not compiled
    // for it.
    let other = remote(&server.url(), &[d.key("other", 2)]);
    let stranger = state(&node(&d.disk("s"), &other), 4, &salt);
    assert!(!stranger.compiled(), "{stranger:?}");
}

#[test]
fn an_entry_over_the_size_limit_is_refused_from_its_header_then_replaced() {
    const TEST: &str = "an_entry_over_the_size_limit_is_refused_from_its_header_then_replaced";
    if !available(TEST) {
        return;
    }
    let server = RedisServer::start(&[]);
    let d = Dirs::new();
    let mut r = remote(&server.url(), &[d.key("k", 8)]);
    r.max_entry_bytes = 256 << 10;
    let salt = salt(TEST);
    run(&node(&d.disk("w"), &r), 6, &salt);
    let mut conn = server.connection();
    let mut entries: Vec<String> = redis::cmd("KEYS")
        .arg("kernelkit:*:entry")
        .query(&mut conn)
        .unwrap();
    let six = entries.pop().expect("the entry was shared");
    // Another writer put 4 MiB under the key (its signature is the old
    // one's): over this node's limit, it is not read.
    let _: () = redis::cmd("SET")
        .arg(&six)
        .arg(vec![0u8; 4 << 20])
        .query(&mut conn)
        .unwrap();
    let s = run(&node(&d.disk("a"), &r), 6, &salt);
    assert_eq!(
        (
            s.compiles,
            s.remote_rejected,
            s.remote_hits,
            s.remote_writes
        ),
        (1, 1, 0, 1),
        "refused, compiled, written again: {}",
        s.summary()
    );
    // The connection dropped mid-reply was made again; the entry written
    // in its place is good.
    let s = run(&node(&d.disk("b"), &r), 6, &salt);
    assert_eq!(
        (s.compiles, s.remote_hits, s.remote_errors),
        (0, 1, 0),
        "{}",
        s.summary()
    );
}
