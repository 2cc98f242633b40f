//! The artifact store under a device, in processes of their own (the store
//! is configured by the environment): what a failure to use an entry does
//! to the entry.

#![cfg(unix)]

use std::ffi::OsString;
use std::path::Path;

use kernelkit::{DType, Device, Error, Kernel};

mod common;
use common::{in_child, is_child};

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

fn entries(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter(|e| e.path().extension().is_some_and(|x| x == "kka"))
                .count()
        })
        .unwrap_or(0)
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
