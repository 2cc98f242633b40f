//! Where a variant is compiled, with a disk tier: a precompile fills the
//! artifact store, and a fresh device on that store (a process started
//! again) sees the variant on disk, not in memory, loads it on the first
//! call and compiles nothing.

use kernelkit::{DType, Device, Precompile};

#[test]
fn a_precompiled_variant_is_on_disk_for_a_fresh_device() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let kernel = kernelkit::Kernel::builder("state_on_disk")
        .inputs(["inp"])
        .outputs(["out"])
        .source("uint i = thread_position_in_grid.x; out[i] = inp[i] * 3;")
        .build()
        .unwrap();
    let run = |device: &Device, check: bool| {
        let x = device.array_from_slice(&[2.0f32; 8], [8]).unwrap();
        let call = kernel
            .call([&x])
            .output([8], DType::F32)
            .grid([8, 1, 1])
            .threadgroup([8, 1, 1]);
        let state = call.cache_state().unwrap();
        if check {
            let out = call.launch().unwrap();
            assert_eq!(out[0].to_vec::<f32>().unwrap(), vec![6.0; 8]);
        } else {
            let report = Precompile::builder().call(&call).start().wait();
            assert!(report.results[0].result.is_ok());
        }
        state
    };
    let first = Device::builder().cache_dir(&store).cpu().unwrap();
    let before = run(&first, false);
    assert!(!before.memory && !before.disk, "{before:?}");
    assert_eq!(first.cache_stats().compiles, 1);
    assert_eq!(first.cache_stats().disk_writes, 1);
    // The next process: a device of its own on the same store.
    kernel.clear_memo();
    let second = Device::builder().cache_dir(&store).cpu().unwrap();
    let seen = run(&second, true);
    assert!(!seen.memory && seen.disk, "{seen:?}");
    let stats = second.cache_stats();
    assert_eq!(
        (stats.compiles, stats.disk_hits),
        (0, 1),
        "the first call loaded the precompiled artifact"
    );
    // Asking counted nothing: one lookup, the call's.
    assert_eq!(stats.disk_misses, 0);
}
