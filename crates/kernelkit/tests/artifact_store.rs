//! The artifact store between processes of their own: under a device (the
//! store is configured by the environment), what a failure to use an entry
//! does to the entry; and on its own, sixteen processes writing, reading and
//! evicting at once.

#![cfg(unix)]

use std::ffi::OsString;
use std::path::Path;

use kernelkit::{DType, Device, Error, Kernel};

mod common;
use common::{check_child, child, in_child, is_child};

const BODY: &str = "uint i = thread_position_in_grid.x;\nout[i] = inp[i] * 3.0f;";

/// Runs the test kernel on 4 floats on a new CPU device; returns the output
/// and the device's cache counters.
fn run_once() -> (kernelkit::Result<Vec<f32>>, kernelkit::CacheStats) {
    let device = Device::new_cpu();
    let kernel = Kernel::builder("stored")
        .inputs(["inp"])
        .outputs(["out"])
        .source(BODY)
        .build()
        .unwrap();
    let result = (|| {
        let x = device.array_from_slice(&[1.0f32, 2.0, 3.0, 4.0], [4])?;
        let out = kernel
            .call([&x])
            .output([4], DType::F32)
            .grid([4, 1, 1])
            .on(device.default_stream())
            .launch()?;
        out[0].to_vec::<f32>()
    })();
    (result, device.cache_stats())
}

/// Entry files in the store (in its subdirectories, or flat).
fn entries(dir: &Path) -> usize {
    let is_entry = |p: &Path| p.extension().is_some_and(|x| x == "kka");
    let Ok(top) = std::fs::read_dir(dir) else {
        return 0;
    };
    top.filter_map(|e| e.ok())
        .map(|e| e.path())
        .map(|p| match std::fs::read_dir(&p) {
            Ok(sub) => sub
                .filter_map(|e| e.ok())
                .filter(|e| is_entry(&e.path()))
                .count(),
            Err(_) => usize::from(is_entry(&p)),
        })
        .sum()
}

/// A process whose temporary directory is unusable cannot load (or
/// compile) a kernel, but the entry another process wrote is good: it is
/// counted as a disk error and kept for the next process.
#[test]
fn a_transient_load_failure_keeps_the_entry() {
    const TEST: &str = "a_transient_load_failure_keeps_the_entry";
    if is_child(TEST) {
        match std::env::var("KK_TEST_PHASE").unwrap().as_str() {
            "write" => {
                let (result, stats) = run_once();
                assert_eq!(result.unwrap(), vec![3.0, 6.0, 9.0, 12.0]);
                assert_eq!(
                    (stats.compiles, stats.disk_writes),
                    (1, 1),
                    "{}",
                    stats.summary()
                );
            }
            "broken-tmp" => {
                let (result, stats) = run_once();
                let err = result.unwrap_err();
                assert!(matches!(err, Error::Compile(_)), "{err:?}");
                assert_eq!(stats.disk_hits, 0, "{}", stats.summary());
                assert_eq!(stats.disk_errors, 1, "{}", stats.summary());
            }
            "read" => {
                let (result, stats) = run_once();
                assert_eq!(result.unwrap(), vec![3.0, 6.0, 9.0, 12.0]);
                assert_eq!(
                    (stats.compiles, stats.disk_hits),
                    (0, 1),
                    "{}",
                    stats.summary()
                );
            }
            other => panic!("unknown phase {other}"),
        }
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let env = |phase: &str, tmpdir: &Path| -> Vec<(&'static str, OsString)> {
        vec![
            ("KERNELKIT_CACHE", "disk".into()),
            ("KERNELKIT_CACHE_DIR", store.clone().into_os_string()),
            ("KERNELKIT_PCH_DIR", "".into()),
            ("TMPDIR", tmpdir.into()),
            ("KK_TEST_PHASE", phase.into()),
        ]
    };
    assert!(!in_child(TEST, &env("write", tmp.path())));
    assert_eq!(entries(&store), 1);
    let missing = tmp.path().join("no-such-directory");
    assert!(!in_child(TEST, &env("broken-tmp", &missing)));
    assert_eq!(entries(&store), 1, "the good entry was removed");
    assert!(!in_child(TEST, &env("read", tmp.path())));
}

/// What the writers of the next test share.
mod writers {
    use kernelkit::cache::entry::{Contents, Dependencies, EntryKind};
    use kernelkit::cache::key::{IdentityDigest, ModuleKey};
    use kernelkit::cache::store::ArtifactStore;

    pub const COUNT: usize = 16;
    pub const WRITES: usize = 30;
    /// The store's limit, in entries.
    pub const ROOM: u64 = 40;

    pub fn key(writer: usize, n: usize) -> ModuleKey {
        ModuleKey::derive("cpu", "writers", &format!("w{writer:02}_{n:03}"), "")
    }

    pub fn payload(writer: usize, n: usize) -> Vec<u8> {
        let mut p = format!("writer {writer:02} entry {n:03} ").into_bytes();
        p.resize(3000, b'0' + (n % 10) as u8);
        p
    }

    /// Entry `n` of `writer` (the hot entry is writer 99's entry 0).
    pub fn write(store: &ArtifactStore, writer: usize, n: usize) {
        let f = format!("f{writer:02}_{n:03}");
        store
            .write(
                &key(writer, n),
                &Contents {
                    kind: EntryKind::Code,
                    target: "native",
                    kernel: "writers",
                    backend: "cpu",
                    function: &f,
                    identity: IdentityDigest::of("cpu", "writers"),
                    dependencies: &Dependencies::default(),
                    payload: &payload(writer, n),
                },
            )
            .unwrap();
    }

    pub const HOT: usize = 99;
}

/// Sixteen processes write at once into a store with room for 40 entries,
/// each writing 30 of its own and reading one hot entry before each write:
/// no process ever reads a partial entry or misses the hot one, the store's
/// running total stays within the limit whenever a process looks, and at
/// the end it is exact, within the limit, with nothing partial left.
#[test]
fn sixteen_writer_processes_keep_the_store_within_its_limit() {
    use kernelkit::cache::store::ArtifactStore;
    const TEST: &str = "sixteen_writer_processes_keep_the_store_within_its_limit";
    let var = |name: &str| std::env::var(name).unwrap();
    if is_child(TEST) {
        let max: u64 = var("KK_MAX_BYTES").parse().unwrap();
        let me: usize = var("KK_WRITER").parse().unwrap();
        let store = ArtifactStore::create(var("KK_STORE"))
            .unwrap()
            .with_max_bytes(max);
        let go = std::path::PathBuf::from(var("KK_GO"));
        let started = std::time::Instant::now();
        while !go.exists() {
            assert!(started.elapsed().as_secs() < 60, "never told to go");
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        for n in 0..writers::WRITES {
            let hot = store.get(&writers::key(writers::HOT, 0));
            assert_eq!(
                hot.as_deref(),
                Some(&writers::payload(writers::HOT, 0)[..]),
                "writer {me}, write {n}: the hot entry was lost"
            );
            writers::write(&store, me, n);
            // Any entry read, of any writer, is whole.
            for (w, k) in [(me, n), ((me + 1) % writers::COUNT, n), (me, n / 2)] {
                if let Some(bytes) = store.get(&writers::key(w, k)) {
                    assert_eq!(bytes, writers::payload(w, k), "a partial entry");
                }
            }
            let s = store.stats().unwrap();
            assert!(!s.counted, "the running total was not usable");
            assert!(
                s.bytes <= max,
                "writer {me}, write {n}: {} bytes in a store of {max}",
                s.bytes
            );
        }
        return;
    }

    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("store");
    let store = ArtifactStore::create(&dir).unwrap();
    writers::write(&store, writers::HOT, 0);
    let entry_bytes = store.stats().unwrap().bytes;
    let max = writers::ROOM * entry_bytes;
    let go = tmp.path().join("go");
    let children: Vec<_> = (0..writers::COUNT)
        .map(|w| {
            let env: Vec<(&str, OsString)> = vec![
                ("KK_STORE", dir.clone().into_os_string()),
                ("KK_WRITER", w.to_string().into()),
                ("KK_MAX_BYTES", max.to_string().into()),
                ("KK_GO", go.clone().into_os_string()),
            ];
            child(TEST, &env)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    std::fs::write(&go, b"").unwrap();
    for c in children {
        check_child(TEST, &c.wait_with_output().unwrap());
    }

    let store = store.with_max_bytes(max);
    let running = store.stats().unwrap();
    assert!(!running.counted);
    let counted = store.recount().unwrap();
    assert_eq!(
        (running.entries, running.bytes),
        (counted.entries, counted.bytes),
        "the running total drifted from the files"
    );
    assert!(counted.bytes <= max, "{} bytes over {max}", counted.bytes);
    assert!(counted.entries >= writers::ROOM * 9 / 10 - 1);
    assert_eq!(entries(&dir) as u64, counted.entries);
    let report = store.verify().unwrap();
    assert_eq!((report.bad.len(), report.other_format), (0, 0));
    assert_eq!(report.good as u64, counted.entries);
    assert!(store.get(&writers::key(writers::HOT, 0)).is_some());
    let lifetime = store.stats().unwrap().lifetime;
    assert_eq!(
        (lifetime.writes, lifetime.errors),
        ((writers::COUNT * writers::WRITES + 1) as u64, 0)
    );
    // Nothing partial or held is left: no temporary or lock file.
    for sub in std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()) {
        if let Ok(files) = std::fs::read_dir(&sub) {
            for f in files.map(|e| e.unwrap().file_name()) {
                let f = f.to_string_lossy();
                assert!(f.ends_with(".kka"), "left in {}: {f}", sub.display());
            }
        }
    }
}

/// A builder's settings reach the device: a memory-only device writes
/// nothing to the directory the environment names, one given a store
/// directory compiles into it.
#[test]
fn the_cache_settings_reach_the_device() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let kernel = Kernel::builder("builder_store")
        .inputs(["inp"])
        .outputs(["out"])
        .source("uint i = thread_position_in_grid.x; out[i] = inp[i] + 1;")
        .build()
        .unwrap();
    let run = |device: &Device| {
        let x = device.array_from_slice(&[1.0f32; 4], [4]).unwrap();
        let out = kernel
            .call([&x])
            .output([4], DType::F32)
            .grid([4, 1, 1])
            .on(device.default_stream())
            .launch()
            .unwrap();
        assert_eq!(out[0].to_vec::<f32>().unwrap(), vec![2.0; 4]);
        device.cache_stats()
    };
    let memory = Device::builder()
        .cache_dir(&store)
        .cache_mode(kernelkit::CacheMode::Memory)
        .cpu()
        .unwrap();
    let s = run(&memory);
    assert_eq!((s.compiles, s.disk_writes), (1, 0));
    assert!(!store.exists(), "a memory-only device made the store");
    let disk = Device::builder().cache_dir(&store).cpu().unwrap();
    let s = run(&disk);
    assert_eq!((s.compiles, s.disk_writes), (1, 1));
    let again = Device::builder().cache_dir(&store).cpu().unwrap();
    let s = run(&again);
    assert_eq!((s.compiles, s.disk_hits), (0, 1), "the store answers");
}
