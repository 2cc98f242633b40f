//! Precompiling for a GPU with NVRTC alone, and finding what was
//! precompiled on a device of that architecture (docs/production.md): the
//! keys a compile-only device makes are the keys the GPU looks for, its
//! own code first, else the PTX of its virtual architecture
//! (`ptx_loads`), with JIT forbidden.
//!
//! Runs on the stand-in driver with a real NVRTC (`scripts/test.sh`:
//! `LD_LIBRARY_PATH=target/fakecuda/driver KERNELKIT_NVRTC_PATH=...`; the
//! stand-in GPU is an sm_90 part); kernels do not run there, so no result
//! is read. Elsewhere (no CUDA device, or no NVRTC named) it skips, saying
//! why. On the H200, the `i43_nojit` steps of scripts/gpu-remote.sh run
//! the same with results checked.

use kernelkit::cache::bundle::{self, SecretKey, TrustedKeys};
use kernelkit::cache::store::ArtifactStore;
use kernelkit::kernel::jit::{self, JitPolicy};
use kernelkit::kernel::record;
use kernelkit::manifest::{precompile_to_bundle, BundleTargets};
use kernelkit::{CacheMode, DType, Device, Kernel};

fn kernel() -> Kernel {
    Kernel::builder("nojit_cuda_add")
        .inputs(["inp"])
        .outputs(["out"])
        .source("uint i = thread_position_in_grid.x; out[i] = inp[i] + V;")
        .build()
        .unwrap()
}

fn call(k: &Kernel, device: &Device, v: i32) -> kernelkit::Result<()> {
    let x = device.array_from_slice(&[1.0f32; 64], [64])?;
    let out = k
        .call([&x])
        .template("V", v)
        .output([64], DType::F32)
        .grid([64, 1, 1])
        .on(device.default_stream())
        .launch();
    out.map(drop)
}

#[test]
fn standin_nvrtc_a_bundle_precompiled_without_a_gpu_loads_with_jit_forbidden() {
    if std::env::var_os("KERNELKIT_NVRTC_PATH").is_none() {
        println!("skipped: no KERNELKIT_NVRTC_PATH (scripts/test.sh names NVRTC 12.8)");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let gpu_probe = Device::builder().cache_mode(CacheMode::Memory).cuda(0);
    let Ok(probe) = gpu_probe else {
        println!("skipped: no CUDA device (the stand-in driver or a GPU)");
        return;
    };
    let arch = probe.target().to_string();
    let Some(virt) = arch
        .strip_prefix("sm_")
        .map(|n| format!("compute_{}", n.trim_end_matches('a')))
    else {
        println!("skipped: the device's NVRTC target is {arch}, not a real architecture");
        return;
    };

    // A manifest recorded on the CPU.
    let manifest = tmp.path().join("m.jsonl");
    let cpu = Device::builder()
        .cache_mode(CacheMode::Memory)
        .cpu()
        .unwrap();
    let k = kernel();
    record::start(&manifest).unwrap();
    for v in 0..3 {
        call(&k, &cpu, v).unwrap();
    }
    record::stop();

    let key = SecretKey::from_seed([3; 32]);
    let out = tmp.path().join("cuda.kkb");
    let targets = BundleTargets {
        cuda_archs: vec![arch.clone()],
        ptx: true,
        ..BundleTargets::default()
    };
    let report = precompile_to_bundle(&manifest, &targets, &out, &key).unwrap();
    assert!(report.failed.is_empty(), "{:?}", report.failed);
    assert_eq!(report.entries, 6, "{report:?}");
    assert!(report.producer.contains("nvrtc"), "{}", report.producer);
    let bytes = std::fs::read(&out).unwrap();
    let trusted = TrustedKeys::new([key.public()]);

    for without_code in [false, true] {
        let dir = tmp.path().join(format!("store-{without_code}"));
        let store = ArtifactStore::create(&dir).unwrap();
        let device = Device::builder().cache_dir(&dir).cuda(0).unwrap();
        let identities = device.artifact_identities();
        let verified = bundle::verify(&bytes, &trusted).unwrap();
        let mut written = 0;
        for e in &verified.entries {
            assert!(
                identities.contains(&e.header.identity),
                "{} entry for {} has an identity this device does not take",
                e.header.kind,
                e.header.target
            );
            if without_code && e.header.target == arch {
                continue;
            }
            store.write(&e.header.key, &e.contents()).unwrap();
            written += 1;
        }
        assert_eq!(written, if without_code { 3 } else { 6 });
        jit::set_policy(JitPolicy::Forbid);
        let k = kernel();
        for v in 0..3 {
            call(&k, &device, v).unwrap();
        }
        // A variant not in the bundle: the typed error, nothing queued,
        // and the device goes on.
        match call(&k, &device, 99) {
            Err(kernelkit::Error::Call(kernelkit::CallError::JitForbidden { arch: a, .. })) => {
                assert_eq!(a, arch)
            }
            other => panic!("expected JitForbidden, got {other:?}"),
        }
        call(&k, &device, 1).unwrap();
        let s = device.cache_stats();
        jit::set_policy(JitPolicy::Allow);
        assert_eq!(s.compiles, 0, "{}", s.summary());
        let expected_ptx = if without_code { 3 } else { 0 };
        assert_eq!(s.ptx_loads, expected_ptx, "{} ({virt})", s.summary());
    }
}
