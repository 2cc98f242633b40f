//! Tuning records beyond one process: a second process on the same disk
//! store launches the recorded choice without timing (`tunes` 0,
//! `tune_hits` 1); sixteen processes with fresh disks sharing one Redis
//! server, all calling one new tunable kernel at once, tune it once (one
//! node holds the lease while the others wait for its record).
//!
//! The Redis test starts its own `redis-server` on a free loopback port and
//! skips with a printed reason where there is none.

#![cfg(unix)]

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use kernelkit::config::RemoteConfig;
use kernelkit::{CacheStats, Config, DType, Device, Kernel, TuneConfig, Tuning};

mod common;
use common::redis_server::{available, key_file, RedisServer};
use common::{check_child, child, children_at_once, is_child, salt, wait_for_start};

/// A device whose disk store is `disk`, with the fleet tier `remote` if
/// given: the CPU, or GPU 0 where `KK_TUNE_BACKEND=cuda` (the GPU check's
/// `i44_tune_tests` step runs this file so).
fn node(disk: &Path, remote: Option<RemoteConfig>) -> Device {
    let mut config = Config::from_env().cache_dir(disk);
    if let Some(r) = remote {
        config = config.remote(r);
    }
    let builder = Device::builder().config(config);
    match std::env::var("KK_TUNE_BACKEND").as_deref() {
        Ok("cuda") => builder.cuda(0).expect("KK_TUNE_BACKEND=cuda: GPU 0"),
        _ => builder.cpu().unwrap(),
    }
}

/// Runs the tunable kernel (new by `salt`) once; checks its result;
/// returns the device's counters.
fn run(device: &Device, salt: &str) -> CacheStats {
    let kernel = Kernel::builder("tuned_fleet")
        .inputs(["inp"])
        .outputs(["out"])
        .source(format!(
            "// {salt}\nuint i = thread_position_in_grid.x;\n\
             if (i < inp_shape[0]) out[i] = inp[i] * SCALE;"
        ))
        .build()
        .unwrap();
    let tuning = Tuning::new(
        [[16, 1, 1], [64, 1, 1], [256, 1, 1]].map(|tg| TuneConfig::new(tg).template("SCALE", 3)),
    );
    let x = device.array_from_slice(&[1.0f32; 512], [512]).unwrap();
    let out = kernel
        .call([&x])
        .output([512], DType::F32)
        .grid([512, 1, 1])
        .tuned(&tuning)
        .launch()
        .unwrap();
    assert_eq!(out[0].to_vec::<f32>().unwrap(), vec![3.0f32; 512]);
    device.cache_stats()
}

/// `tunes=T tune_hits=H tune_launches=L` from a child's output.
fn counters(out: &std::process::Output) -> (u64, u64, u64) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find_map(|l| l.find("tunes=").map(|at| &l[at..]))
        .expect("the child's counters");
    let field = |name: &str| -> u64 {
        line.split_whitespace()
            .find_map(|f| f.strip_prefix(name))
            .unwrap()
            .parse()
            .unwrap()
    };
    (
        field("tunes="),
        field("tune_hits="),
        field("tune_launches="),
    )
}

fn print_counters(s: &CacheStats) {
    println!(
        "tunes={} tune_hits={} tune_launches={}",
        s.tunes, s.tune_hits, s.tune_launches
    );
}

#[test]
fn a_second_process_on_the_same_disk_uses_the_record() {
    const TEST: &str = "a_second_process_on_the_same_disk_uses_the_record";
    if is_child(TEST) {
        let var = |n: &str| std::env::var(n).unwrap();
        let device = node(Path::new(&var("KK_TEST_DISK")), None);
        print_counters(&run(&device, &var("KK_TEST_SALT")));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let disk = dir.path().join("store");
    let salt = salt(TEST);
    let first = run(&node(&disk, None), &salt);
    assert_eq!(first.tunes, 1, "{}", first.summary());
    let env: Vec<(&str, OsString)> = vec![
        ("KK_TEST_DISK", disk.clone().into()),
        ("KK_TEST_SALT", salt.clone().into()),
    ];
    let out = child(TEST, &env).output().unwrap();
    check_child(TEST, &out);
    let (tunes, hits, launches) = counters(&out);
    assert_eq!((tunes, launches), (0, 0), "no timing in the second process");
    assert!(hits >= 1, "the choice came from the disk store");
}

/// The fleet settings for `url` with `key`, short waits for tests.
fn remote(url: &str, key: PathBuf) -> RemoteConfig {
    let mut r = RemoteConfig::default();
    r.urls = kernelkit::config::parse_remote_urls(url).unwrap();
    r.key_files = vec![key];
    r.wait = Duration::from_secs(60);
    r.connect_timeout = Duration::from_secs(10);
    r.op_timeout = Duration::from_secs(10);
    r
}

#[test]
fn sixteen_processes_sharing_one_redis_tune_once() {
    const TEST: &str = "sixteen_processes_sharing_one_redis_tune_once";
    if is_child(TEST) {
        let var = |n: &str| std::env::var(n).unwrap();
        let r = remote(&var("KK_TEST_REDIS"), PathBuf::from(var("KK_TEST_KEY")));
        let device = node(Path::new(&var("KK_TEST_DISK")), Some(r));
        wait_for_start();
        print_counters(&run(&device, &var("KK_TEST_SALT")));
        return;
    }
    if !available(TEST) {
        return;
    }
    let server = RedisServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let key = key_file(dir.path(), "k", 9, 32);
    let salt = salt(TEST);
    let outputs = children_at_once(TEST, 16, |i| {
        vec![
            ("KK_TEST_REDIS", server.url().into()),
            ("KK_TEST_KEY", key.clone().into()),
            ("KK_TEST_DISK", dir.path().join(format!("node{i}")).into()),
            ("KK_TEST_SALT", salt.clone().into()),
        ]
    });
    let mut tunes = 0;
    let mut untimed = 0;
    for out in outputs {
        let (t, _, launches) = counters(&out);
        tunes += t;
        untimed += u64::from(launches == 0);
    }
    println!(
        "sixteen processes on {}: tunes summed {tunes}, processes without a timing launch {untimed}",
        std::env::var("KK_TUNE_BACKEND").unwrap_or_else(|_| "cpu".into())
    );
    assert_eq!(tunes, 1, "one tuning for sixteen processes");
    assert_eq!(untimed, 15, "fifteen processes launched no timing run");
}
