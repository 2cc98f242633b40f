//! Production without JIT on the CPU: recording the variants a process
//! resolves (`kernel::record`), and the JIT policy (`kernel::jit`).
//! Each test sets the process's policy or recorder: they run as separate
//! processes under nextest, and each restores what it changed.

use kernelkit::kernel::jit::{self, JitPolicy};
use kernelkit::kernel::record;
use kernelkit::spec_file::SpecFile;
use kernelkit::{CallError, DType, Device, Error, Kernel};

fn kernel() -> Kernel {
    Kernel::builder("prod_add")
        .inputs(["inp"])
        .outputs(["out"])
        .source("uint i = thread_position_in_grid.x; out[i] = inp[i] + V;")
        .build()
        .unwrap()
}

fn run(kernel: &Kernel, device: &Device, v: i32) -> kernelkit::Result<Vec<f32>> {
    let x = device.array_from_slice(&[1.0f32; 8], [8])?;
    let out = kernel
        .call([&x])
        .template("V", v)
        .output([8], DType::F32)
        .grid([8, 1, 1])
        .on(device.default_stream())
        .launch()?;
    out[0].to_vec::<f32>()
}

#[test]
fn forbid_refuses_a_missing_variant_with_its_details_and_the_device_stays_usable() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    jit::set_policy(JitPolicy::Allow);
    let build = Device::builder().cache_dir(&store).cpu().unwrap();
    assert_eq!(run(&kernel(), &build, 1).unwrap(), vec![2.0; 8]);
    assert_eq!(build.cache_stats().compiles, 1);

    jit::set_policy(JitPolicy::Forbid);
    let serve = Device::builder().cache_dir(&store).cpu().unwrap();
    let k = kernel();
    // In the store: loads, no compile.
    assert_eq!(run(&k, &serve, 1).unwrap(), vec![2.0; 8]);
    // Not in any tier: the typed error, naming kernel, variant and arch.
    let err = run(&k, &serve, 2).unwrap_err();
    let message = err.to_string();
    match &err {
        Error::Call(CallError::JitForbidden {
            kernel,
            variant,
            arch,
            device,
        }) => {
            assert_eq!(kernel, "prod_add");
            assert!(variant.contains("V=2"), "{variant}");
            assert!(variant.contains("inp: float32[8]"), "{variant}");
            assert_eq!(arch, "native");
            assert_eq!(device, "cpu");
        }
        other => panic!("expected JitForbidden, got {other:?}"),
    }
    assert!(message.contains("JIT is forbidden"), "{message}");
    // Asked again (a memo hit now): the same refusal.
    assert!(matches!(
        run(&k, &serve, 2),
        Err(Error::Call(CallError::JitForbidden { .. }))
    ));
    assert_eq!(serve.cache_stats().compiles, 0);
    // The device is still usable.
    assert_eq!(run(&k, &serve, 1).unwrap(), vec![2.0; 8]);

    // `warn` compiles it (and logs it once).
    jit::set_policy(JitPolicy::Warn);
    assert_eq!(run(&k, &serve, 2).unwrap(), vec![3.0; 8]);
    assert_eq!(serve.cache_stats().compiles, 1);
    jit::set_policy(JitPolicy::Allow);
}

#[test]
fn recording_writes_each_variant_once_from_many_threads_without_paths() {
    let tmp = tempfile::tempdir().unwrap();
    let manifest = tmp.path().join("manifest.jsonl");
    jit::set_policy(JitPolicy::Allow);
    let device = Device::builder()
        .cache_mode(kernelkit::CacheMode::Memory)
        .cpu()
        .unwrap();
    let k = kernel();
    record::start(&manifest).unwrap();
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for v in 0..3 {
                    for _ in 0..5 {
                        run(&k, &device, v).unwrap();
                    }
                }
            });
        }
    });
    // A second kernel object with the same spec: its own memo misses, the
    // manifest already holds the lines.
    run(&kernel(), &device, 0).unwrap();
    assert_eq!(record::stop().as_deref(), Some(manifest.as_path()));
    // Not recording any more.
    run(&k, &device, 7).unwrap();
    let text = std::fs::read_to_string(&manifest).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    let tmp_path = tmp.path().to_str().unwrap();
    for line in &lines {
        assert!(!line.contains(tmp_path), "a path in {line}");
        if let Ok(home) = std::env::var("HOME") {
            assert!(!line.contains(&home), "the home directory in {line}");
        }
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["backend"], "cpu");
        assert_eq!(v["arch"], "native");
        // The spec replays as a spec file: same variant.
        let spec = SpecFile::from_json(&v["spec"].to_string(), tmp.path()).unwrap();
        let replayed = spec.kernel().unwrap();
        let inputs = spec.placeholder_inputs(&device).unwrap();
        let variant = spec.call(&replayed, &inputs).variant_on(&device).unwrap();
        assert_eq!(v["function"], variant.name());
    }
    // Started again on the same file: lines already there are not
    // written again.
    record::start(&manifest).unwrap();
    run(&kernel(), &device, 1).unwrap();
    run(&kernel(), &device, 9).unwrap();
    record::stop();
    assert_eq!(
        std::fs::read_to_string(&manifest).unwrap().lines().count(),
        4
    );
}

/// The CPU half of the recipe: record, precompile for `x86-64-v2` into a
/// bundle, import into a fresh store, replay with no compiler and JIT
/// forbidden: every variant loads, none compiles, every result is right.
#[test]
fn a_portable_cpu_bundle_replays_with_no_compiler_and_jit_forbidden() {
    use kernelkit::cache::bundle::{self, SecretKey, TrustedKeys};
    use kernelkit::cache::entry::EntryKind;
    use kernelkit::cache::store::ArtifactStore;
    use kernelkit::manifest::{precompile_to_bundle, BundleTargets};

    let tmp = tempfile::tempdir().unwrap();
    let manifest = tmp.path().join("manifest.jsonl");
    jit::set_policy(JitPolicy::Allow);
    let staging = Device::builder()
        .cache_mode(kernelkit::CacheMode::Memory)
        .cpu()
        .unwrap();
    let k = kernel();
    record::start(&manifest).unwrap();
    for v in 0..4 {
        run(&k, &staging, v).unwrap();
    }
    record::stop();

    let key = SecretKey::from_seed([7; 32]);
    let out = tmp.path().join("kernels.kkb");
    let targets = BundleTargets {
        cpu: vec!["x86-64-v2".into()],
        workers: Some(2),
        ..BundleTargets::default()
    };
    // Precompiling is the compile the policy moves compiles to: exempt.
    jit::set_policy(JitPolicy::Forbid);
    let report = precompile_to_bundle(&manifest, &targets, &out, &key).unwrap();
    jit::set_policy(JitPolicy::Allow);
    assert!(report.failed.is_empty(), "{:?}", report.failed);
    assert_eq!((report.variants, report.entries), (4, 4));
    // The CPU copies on the host: no kernel of kernelkit's rides along.
    assert!(report.builtins.is_empty(), "{:?}", report.builtins);
    let bytes = std::fs::read(&out).unwrap();
    let listed = bundle::inspect(&bytes).unwrap();
    for e in &listed.entries {
        assert_eq!(e.header.kind, EntryKind::Code);
        assert_eq!(e.header.target, "x86-64-v2");
        assert_eq!(e.header.backend, "cpu");
    }

    // The node: a fresh store, the bundle imported for its devices.
    let store_dir = tmp.path().join("node-store");
    let store = ArtifactStore::create(&store_dir).unwrap();
    let node = Device::builder()
        .cache_dir(&store_dir)
        .compiler("/nonexistent/c++")
        .cpu()
        .unwrap();
    let trusted = TrustedKeys::new([key.public()]);
    let started = std::time::Instant::now();
    let imported = bundle::import(&bytes, &trusted, &node.artifact_identities(), &store).unwrap();
    println!(
        "import of {} entries: {:?}",
        imported.imported,
        started.elapsed()
    );
    assert_eq!(imported.imported, 4, "{imported:?}");

    jit::set_policy(JitPolicy::Forbid);
    for v in 0..4 {
        assert_eq!(run(&k, &node, v).unwrap(), vec![1.0 + v as f32; 8]);
    }
    let stats = node.cache_stats();
    assert_eq!(
        (stats.compiles, stats.disk_hits),
        (0, 4),
        "{}",
        stats.summary()
    );
    // A variant not in the bundle: refused, not compiled.
    assert!(matches!(
        run(&k, &node, 99),
        Err(Error::Call(CallError::JitForbidden { .. }))
    ));
    jit::set_policy(JitPolicy::Allow);
}

/// A null device of the CUDA dialect: a GPU stand-in that resolves
/// kernelkit's strided-copy kernel as a GPU does, and runs nothing.
fn gpu_standin(store: &std::path::Path) -> Device {
    Device::builder()
        .cache_dir(store)
        .null(kernelkit::NullOptions::default().dialect(kernelkit::Dialect::Cuda))
}

/// A call of `prod_add` with an 8×8 input of `dtype`; with `strided`, a
/// transposed view of it (the same variant: kernelkit copies it first).
fn run_2d(
    kernel: &Kernel,
    device: &Device,
    v: i32,
    dtype: DType,
    strided: bool,
) -> kernelkit::Result<()> {
    let x = match dtype {
        DType::I32 => device.array_from_slice(&[1i32; 64], [8, 8])?,
        _ => device.array_from_slice(&[1.0f32; 64], [8, 8])?,
    };
    let x = if strided { x.transpose() } else { x };
    let out = kernel
        .call([&x])
        .template("V", v)
        .output([64], DType::F32)
        .grid([64, 1, 1])
        .on(device.default_stream())
        .launch();
    out.map(drop)
}

/// The kernel name of kernelkit's strided copy in entries and errors.
const COPY: &str = "kernelkit_strided_copy";

/// kernelkit's strided-copy kernel on a GPU stand-in goes through the
/// tiers as a variant does: compiled once per module (its entry points
/// share it), kept in the store, loaded from there by another device;
/// under `forbid` a store without it refuses the strided call with the
/// typed error before anything is queued, and the device goes on;
/// `prepare_strided_copy` (ahead of time: exempt) loads it.
#[test]
fn the_strided_copy_kernel_is_a_module_of_the_tiers_and_of_the_jit_policy() {
    let tmp = tempfile::tempdir().unwrap();
    let (with_copy, without_copy) = (tmp.path().join("a"), tmp.path().join("b"));
    jit::set_policy(JitPolicy::Allow);
    let k = kernel();
    let build = gpu_standin(&with_copy);
    run_2d(&k, &build, 1, DType::F32, false).unwrap();
    assert_eq!(build.cache_stats().compiles, 1);
    run_2d(&k, &build, 1, DType::F32, true).unwrap();
    assert_eq!(build.cache_stats().compiles, 2, "the copy kernel's module");
    // The kernel saw the contiguous copy.
    let launches = build.take_recorded_launches();
    assert_eq!(launches.last().unwrap().inputs[0].strides, vec![8, 1]);
    // Another element type: another entry point of the same module.
    run_2d(&k, &build, 1, DType::I32, true).unwrap();
    assert_eq!(build.cache_stats().compiles, 3, "the i32 variant only");
    let other = gpu_standin(&without_copy);
    run_2d(&k, &other, 1, DType::F32, false).unwrap();

    jit::set_policy(JitPolicy::Forbid);
    // In the store: loaded, nothing compiled.
    let serve = gpu_standin(&with_copy);
    run_2d(&k, &serve, 1, DType::F32, true).unwrap();
    let s = serve.cache_stats();
    assert_eq!((s.compiles, s.disk_hits), (0, 2), "{}", s.summary());

    // Not in the store: the typed error, nothing queued.
    let serve = gpu_standin(&without_copy);
    let err = run_2d(&k, &serve, 1, DType::F32, true).unwrap_err();
    let message = err.to_string();
    match &err {
        Error::Call(CallError::JitForbidden {
            kernel,
            variant,
            arch,
            device,
        }) => {
            assert_eq!(kernel, COPY);
            assert!(variant.contains("kk_gather_4"), "{variant}");
            assert!(variant.contains("kernelkit's strided copy"), "{variant}");
            assert!(variant.contains("float32"), "{variant}");
            assert_eq!(arch, "null");
            assert_eq!(device, "null");
        }
        other => panic!("expected JitForbidden, got {other:?}"),
    }
    assert!(message.contains("JIT is forbidden"), "{message}");
    assert!(serve.recorded_launches().is_empty(), "nothing was launched");
    // The device goes on; asked again, the same refusal.
    run_2d(&k, &serve, 1, DType::F32, false).unwrap();
    assert!(matches!(
        run_2d(&k, &serve, 1, DType::F32, true),
        Err(Error::Call(CallError::JitForbidden { .. }))
    ));
    assert_eq!(serve.cache_stats().compiles, 0);
    // Ahead of time, whatever the policy: then the strided call runs.
    assert!(serve.prepare_strided_copy().unwrap());
    assert_eq!(serve.cache_stats().compiles, 1);
    run_2d(&k, &serve, 1, DType::F32, true).unwrap();
    assert_eq!(serve.cache_stats().compiles, 1);
    // The CPU copies on the host: nothing to prepare, nothing refused.
    let cpu = Device::builder()
        .cache_mode(kernelkit::CacheMode::Memory)
        .cpu()
        .unwrap();
    assert!(!cpu.prepare_strided_copy().unwrap());
    // `warn` compiles what no tier holds (the variant and the copy kernel).
    jit::set_policy(JitPolicy::Warn);
    let warned = gpu_standin(&tmp.path().join("c"));
    run_2d(&k, &warned, 1, DType::F32, true).unwrap();
    assert_eq!(warned.cache_stats().compiles, 2);
    jit::set_policy(JitPolicy::Allow);
}

/// Recording names kernelkit's strided copy once per backend and
/// architecture, from many threads and copies of several element types,
/// in a line that `manifest::read` skips and `manifest::read_builtins`
/// reads; a builtin kernelkit does not know is an error naming the line.
#[test]
fn recording_names_the_strided_copy_once_per_backend_and_manifests_read_it() {
    use kernelkit::manifest::{read, read_builtins, ManifestError};

    let tmp = tempfile::tempdir().unwrap();
    let manifest = tmp.path().join("m.jsonl");
    jit::set_policy(JitPolicy::Allow);
    let gpu = gpu_standin(&tmp.path().join("store"));
    let cpu = Device::builder()
        .cache_mode(kernelkit::CacheMode::Memory)
        .cpu()
        .unwrap();
    let k = kernel();
    record::start(&manifest).unwrap();
    std::thread::scope(|s| {
        for t in 0..4 {
            let (k, gpu) = (&k, &gpu);
            s.spawn(move || {
                for _ in 0..3 {
                    let dtype = if t % 2 == 0 { DType::F32 } else { DType::I32 };
                    run_2d(k, gpu, 0, dtype, true).unwrap();
                }
            });
        }
    });
    run_2d(&k, &cpu, 0, DType::F32, true).unwrap();
    run_2d(&k, &cpu, 0, DType::F32, true).unwrap();
    record::stop();
    let text = std::fs::read_to_string(&manifest).unwrap();
    let builtins: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v.get("builtin").is_some())
        .collect();
    let mut seen: Vec<(String, String)> = builtins
        .iter()
        .map(|v| {
            assert_eq!(v["builtin"], "strided_copy", "{v}");
            (
                v["backend"].as_str().unwrap().to_string(),
                v["arch"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        vec![
            ("cpu".to_string(), "native".to_string()),
            ("null".to_string(), "null".to_string())
        ],
        "{text}"
    );
    // Two variants (f32 and i32 inputs; the CPU's f32 is the same spec).
    assert_eq!(read(&manifest).unwrap().len(), 2, "{text}");
    assert_eq!(read_builtins(&manifest).unwrap(), vec!["strided_copy"]);

    // A builtin of a later kernelkit: an error naming the line.
    let later = tmp.path().join("later.jsonl");
    std::fs::write(&later, format!("{text}{{\"builtin\": \"transpose\"}}\n")).unwrap();
    for err in [
        read(&later).unwrap_err(),
        read_builtins(&later).unwrap_err(),
    ] {
        match err {
            ManifestError::Line { line, reason, .. } => {
                assert_eq!(line, text.lines().count() + 1);
                assert!(reason.contains("transpose"), "{reason}");
            }
            other => panic!("expected a line error, got {other:?}"),
        }
    }
}
