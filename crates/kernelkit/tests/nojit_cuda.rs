//! Precompiling for a GPU with NVRTC alone, and finding what was
//! precompiled on a device of that architecture (docs/production.md): the
//! keys a compile-only device makes are the keys the GPU looks for, its
//! own code first, else the PTX of its virtual architecture
//! (`ptx_loads`), with JIT forbidden. kernelkit's strided-copy kernel
//! (a strided input of a kernel that asks for row-contiguous inputs) is in
//! the bundle as the variants are, and found the same way; a store
//! without it refuses the copy with the typed error.
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
use kernelkit::manifest::{precompile_to_bundle, read_builtins, BundleTargets};
use kernelkit::{CacheMode, CallError, DType, Device, Error, Kernel};

/// The kernel name of kernelkit's strided copy in entries and errors.
const COPY: &str = "kernelkit_strided_copy";

fn kernel() -> Kernel {
    Kernel::builder("nojit_cuda_add")
        .inputs(["inp"])
        .outputs(["out"])
        .source("uint i = thread_position_in_grid.x; out[i] = inp[i] + V;")
        .build()
        .unwrap()
}

/// A call of variant `v`; with `strided`, its input is a transposed view
/// (the same variant: kernelkit copies it with its strided-copy kernel).
fn call(k: &Kernel, device: &Device, v: i32, strided: bool) -> kernelkit::Result<()> {
    let x = device.array_from_slice(&[1.0f32; 64], [8, 8])?;
    let x = if strided { x.transpose() } else { x };
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
        call(&k, &cpu, v, false).unwrap();
    }
    // The CPU copies on the host, and records that the workload copies.
    call(&k, &cpu, 0, true).unwrap();
    record::stop();
    assert_eq!(read_builtins(&manifest).unwrap(), vec!["strided_copy"]);

    let key = SecretKey::from_seed([3; 32]);
    let out = tmp.path().join("cuda.kkb");
    let targets = BundleTargets {
        cuda_archs: vec![arch.clone()],
        ptx: true,
        ..BundleTargets::default()
    };
    let report = precompile_to_bundle(&manifest, &targets, &out, &key).unwrap();
    assert!(report.failed.is_empty(), "{:?}", report.failed);
    // Three variants and the copy kernel, each as code and as PTX.
    assert_eq!(report.entries, 8, "{report:?}");
    assert_eq!(report.builtins, vec!["strided_copy"]);
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
        assert_eq!(written, if without_code { 4 } else { 8 });
        jit::set_policy(JitPolicy::Forbid);
        let k = kernel();
        for v in 0..3 {
            call(&k, &device, v, false).unwrap();
        }
        // A strided input: the copy kernel from the bundle, no compile.
        call(&k, &device, 1, true).unwrap();
        // A variant not in the bundle: the typed error, nothing queued,
        // and the device goes on.
        match call(&k, &device, 99, false) {
            Err(kernelkit::Error::Call(kernelkit::CallError::JitForbidden { arch: a, .. })) => {
                assert_eq!(a, arch)
            }
            other => panic!("expected JitForbidden, got {other:?}"),
        }
        call(&k, &device, 1, false).unwrap();
        let s = device.cache_stats();
        jit::set_policy(JitPolicy::Allow);
        assert_eq!(s.compiles, 0, "{}", s.summary());
        let expected_ptx = if without_code { 4 } else { 0 };
        assert_eq!(s.ptx_loads, expected_ptx, "{} ({virt})", s.summary());
    }

    // The variants without the copy kernel: a strided input is refused
    // with the typed error naming it, before anything is queued; the
    // device goes on.
    let dir = tmp.path().join("store-no-copy");
    let store = ArtifactStore::create(&dir).unwrap();
    let device = Device::builder().cache_dir(&dir).cuda(0).unwrap();
    for e in &bundle::verify(&bytes, &trusted).unwrap().entries {
        if e.header.kernel != COPY {
            store.write(&e.header.key, &e.contents()).unwrap();
        }
    }
    jit::set_policy(JitPolicy::Forbid);
    let k = kernel();
    let refused = call(&k, &device, 0, true);
    call(&k, &device, 0, false).unwrap();
    let s = device.cache_stats();
    jit::set_policy(JitPolicy::Allow);
    let err = refused.unwrap_err();
    let message = err.to_string();
    match &err {
        Error::Call(CallError::JitForbidden {
            kernel,
            variant,
            arch: a,
            ..
        }) => {
            assert_eq!(kernel, COPY);
            assert!(variant.contains("kk_gather_4"), "{variant}");
            assert!(variant.contains("kernelkit's strided copy"), "{variant}");
            assert!(variant.contains("float32"), "{variant}");
            assert_eq!(a, &arch);
        }
        other => panic!("expected JitForbidden, got {other:?}"),
    }
    assert!(message.contains("JIT is forbidden"), "{message}");
    assert_eq!(s.compiles, 0, "{}", s.summary());
}
