//! Ship compiled kernels with a service: compile every call it makes ahead
//! of time on a build machine, export them as a signed bundle, import the
//! bundle on a node, and serve the first request there without a compile.
//!
//! The three steps, each its own directory here (in production: a build
//! machine, the image, the node):
//!
//! 1. build: `Precompile` compiles the service's calls in parallel into an
//!    artifact store (nothing runs);
//! 2. export: `cache::bundle::export` writes that store's entries into one
//!    file signed with an Ed25519 key (the `kernelkit cache keygen` /
//!    `cache export` commands do the same from the shell);
//! 3. node: `cache::bundle::import` checks the signature against the keys
//!    the node trusts and the entries against this machine's compiler and
//!    GPU (its artifact identity), then the service's device finds every
//!    variant on disk: `compiles == 0`.
//!
//! Run: `cargo run -p kernelkit --example precompile_bundle` (`--features
//! cuda` for a GPU: the bundle then holds CUDA modules).

use std::error::Error;
use std::path::Path;

use kernelkit::cache::bundle::{self, ExportFilter, SecretKey, TrustedKeys};
use kernelkit::cache::store::ArtifactStore;
use kernelkit::{CacheMode, Call, DType, Device, Kernel, Precompile, Stream};

/// The service's kernel; its calls differ by the `SCALE` template value,
/// so each is a variant of its own (its own compile).
fn service_kernel() -> Result<Kernel, kernelkit::Error> {
    Kernel::builder("scale")
        .inputs(["inp"])
        .outputs(["out"])
        .source("uint i = thread_position_in_grid.x; out[i] = inp[i] * SCALE;")
        .build()
}

/// The calls the service makes.
const SCALES: [i32; 3] = [2, 3, 4];

fn call<'a>(
    kernel: &'a Kernel,
    x: &'a kernelkit::Array,
    stream: &'a Stream,
    scale: i32,
) -> Call<'a> {
    kernel
        .call([x])
        .template("SCALE", scale)
        .output([256], DType::F32)
        .grid([256, 1, 1])
        .threadgroup([64, 1, 1])
        .on(stream)
}

/// A device whose artifact store is `dir`: the GPU where there is one,
/// else the CPU.
fn device_on(dir: &Path) -> Result<Device, kernelkit::Error> {
    let builder = || Device::builder().cache_mode(CacheMode::Disk).cache_dir(dir);
    builder().cuda(0).or_else(|_| builder().cpu())
}

fn main() -> Result<(), Box<dyn Error>> {
    let work = tempfile::tempdir()?;
    let (build_dir, node_dir) = (work.path().join("build"), work.path().join("node"));
    let kernel = service_kernel()?;

    // 1. Build: every call compiled, none run.
    let device = device_on(&build_dir)?;
    let stream = device.new_stream()?;
    let x = device.array_from_slice(&[1.0f32; 256], [256])?;
    let mut precompile = Precompile::builder();
    for scale in SCALES {
        precompile = precompile.call(&call(&kernel, &x, &stream, scale));
    }
    let report = precompile.start().wait();
    if let Some(failed) = report.failures().next() {
        return Err(format!(
            "precompile of `{}` failed: {:?}",
            failed.kernel, failed.result
        )
        .into());
    }
    println!(
        "build: {} variants compiled on {} in {:?}",
        report.results.len(),
        device.label(),
        report.elapsed
    );
    let identity = device.artifact_identity();
    drop((x, stream, device));

    // 2. Export: one signed file. The secret key stays on the build
    //    machine; nodes trust its public half.
    let key = SecretKey::generate()?;
    let exported = bundle::export(
        &ArtifactStore::open(&build_dir)?,
        &ExportFilter::default(),
        None,
        &key,
    )?;
    println!(
        "export: {} entries, {} bytes",
        exported.entries,
        exported.bundle.len()
    );

    // 3. Node: import into the node's store, then serve.
    let trusted = TrustedKeys::new([key.public()]);
    let imported = bundle::import(
        &exported.bundle,
        &trusted,
        &[identity],
        &ArtifactStore::create(&node_dir)?,
    )?;
    println!("node: imported {} entries", imported.imported);
    let device = device_on(&node_dir)?;
    let stream = device.new_stream()?;
    let x = device.array_from_slice(&[1.0f32; 256], [256])?;
    for scale in SCALES {
        let out = call(&kernel, &x, &stream, scale).launch()?;
        let got: Vec<f32> = out[0].to_vec()?;
        assert!(
            got.iter().all(|v| *v == scale as f32),
            "scale {scale}: {:?}",
            &got[..4]
        );
    }
    let stats = device.cache_stats();
    assert_eq!(stats.compiles, 0, "the node compiled: {stats:?}");
    assert_eq!(stats.disk_hits, SCALES.len() as u64, "{stats:?}");
    println!(
        "node: {} calls served, {} compiles, {} loaded from the imported store",
        SCALES.len(),
        stats.compiles,
        stats.disk_hits
    );
    Ok(())
}
