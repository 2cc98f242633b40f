//! Manifests: the variants a process resolved (recorded by
//! `kernel::record`, `KERNELKIT_RECORD`), compiled ahead of time for the
//! machines that will run them and shipped as one signed bundle
//! ([`precompile_to_bundle`], `kernelkit precompile --manifest`).
//!
//! A manifest line is `{"spec": SPEC, ...}` where `SPEC` is a spec file
//! without data ([`SpecFile`]); the other fields say where it was recorded
//! and are not needed: a manifest recorded on the CPU precompiles for CUDA
//! and the other way round. Lines are deduplicated on reading (many
//! processes may record one variant each). A line `{"builtin":
//! "strided_copy", ...}` says that the process copied strided inputs
//! (kernelkit's strided-copy kernel on a GPU, [`BUILTIN_STRIDED_COPY`]).
//!
//! kernelkit's strided-copy kernel goes into every CUDA target's entries,
//! whether or not the manifest names it (it is one small module, four entry
//! points): a GPU that copies a strided input under `KERNELKIT_JIT=forbid`
//! finds it in the bundle even when the staging run that recorded the
//! manifest never copied (it ran on the CPU, or its inputs were
//! contiguous). Recording it is then for people, never load-bearing.
//!
//! Precompiling needs no GPU: each target is a device that compiles and
//! loads nothing else: the CPU at a portable level (`x86-64-v2`, see
//! [`DeviceBuilder::cpu_target`](crate::DeviceBuilder::cpu_target)) or
//! `native`, and, with the `cuda` feature, NVRTC for a named architecture
//! (`sm_90a`: code; `compute_90`: PTX the driver finishes at load). Every
//! target's compiles go through the resolver into one temporary artifact
//! store, in parallel, and the store is exported as a bundle whose
//! producer note names kernelkit and NVRTC versions.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::cache::bundle::{self, BundleError, ExportFilter, SecretKey};
use crate::cache::store::ArtifactStore;
use crate::codegen::template::TemplateParam;
use crate::codegen::variant::{InputDesc, PassMode, VariantDesc};
use crate::config::Config;
use crate::device::Device;
use crate::kernel::precompile::Precompile;
use crate::spec_file::SpecFile;

/// Why a manifest could not be read or precompiled.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ManifestError {
    /// The file could not be read.
    #[error("manifest {path}: {source}")]
    Io {
        /// The manifest.
        path: PathBuf,
        /// The system's error.
        source: std::io::Error,
    },
    /// A line is not a manifest line.
    #[error("manifest {path}, line {line}: {reason}")]
    Line {
        /// The manifest.
        path: PathBuf,
        /// From 1.
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// A target could not be set up (an unknown CPU level, no NVRTC).
    #[error("target {target}: {reason}")]
    Target {
        /// The target asked for.
        target: String,
        /// Why.
        reason: String,
    },
    /// The temporary store or the bundle could not be made or written.
    #[error(transparent)]
    Bundle(#[from] BundleError),
}

/// What a manifest line names kernelkit's strided-copy kernel by:
/// `{"builtin": "strided_copy", "backend": ..., "arch": ...}`.
pub const BUILTIN_STRIDED_COPY: &str = "strided_copy";

/// kernelkit's own kernels a manifest names (`"builtin"` lines),
/// deduplicated: [`BUILTIN_STRIDED_COPY`] is the one there is.
pub fn read_builtins(path: &Path) -> Result<Vec<String>, ManifestError> {
    let mut out = Vec::new();
    for_each_line(path, |value, bad| {
        if let Some(name) = builtin_of(value, bad)? {
            if !out.iter().any(|n| n == name) {
                out.push(name.to_string());
            }
        }
        Ok(())
    })?;
    Ok(out)
}

/// The builtin kernel a line names, if it is a `"builtin"` line; an error
/// for a name kernelkit does not know (a manifest of a newer version).
fn builtin_of<'v>(
    value: &'v serde_json::Value,
    bad: &dyn Fn(String) -> ManifestError,
) -> Result<Option<&'v str>, ManifestError> {
    let Some(builtin) = value.get("builtin") else {
        return Ok(None);
    };
    match builtin.as_str() {
        Some(name) if name == BUILTIN_STRIDED_COPY => Ok(Some(name)),
        _ => Err(bad(format!(
            "`builtin` is {builtin}, not a kernel of kernelkit's (\"{BUILTIN_STRIDED_COPY}\")"
        ))),
    }
}

/// Calls `each` with every non-empty line of the manifest at `path`: its
/// JSON value, and how to make an error about that line.
fn for_each_line(
    path: &Path,
    mut each: impl FnMut(
        &serde_json::Value,
        &dyn Fn(String) -> ManifestError,
    ) -> Result<(), ManifestError>,
) -> Result<(), ManifestError> {
    let text = std::fs::read_to_string(path).map_err(|source| ManifestError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let bad = |reason: String| ManifestError::Line {
            path: path.to_path_buf(),
            line: i + 1,
            reason,
        };
        let value: serde_json::Value =
            serde_json::from_str(line).map_err(|e| bad(e.to_string()))?;
        each(&value, &bad)?;
    }
    Ok(())
}

/// The variants of a manifest, deduplicated, in the order of their first
/// line (`"builtin"` lines name no variant: see [`read_builtins`]).
pub fn read(path: &Path) -> Result<Vec<SpecFile>, ManifestError> {
    let base = path.parent().unwrap_or(Path::new("."));
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for_each_line(path, |value, bad| {
        if builtin_of(value, bad)?.is_some() {
            return Ok(());
        }
        let spec = value
            .get("spec")
            .ok_or_else(|| bad("no `spec` field".into()))?
            .to_string();
        if seen.insert(spec.clone()) {
            out.push(SpecFile::from_json(&spec, base).map_err(|e| bad(e.to_string()))?);
        }
        Ok(())
    })?;
    Ok(out)
}

/// What [`precompile_to_bundle`] builds.
#[derive(Clone, Debug, Default)]
pub struct BundleTargets {
    /// CPU targets: `native` or portable levels (`x86-64-v2`, ...).
    pub cpu: Vec<String>,
    /// CUDA architectures to make code for (`sm_80`, `sm_90a`), with NVRTC
    /// and no GPU (the `cuda` feature).
    pub cuda_archs: Vec<String>,
    /// Also make PTX for each architecture's plain virtual architecture
    /// (`compute_80`, `compute_90`), which newer GPUs load.
    pub ptx: bool,
    /// Compiles at once (default: the machine's cores, at most 16).
    pub workers: Option<usize>,
}

/// One variant on one target that failed.
#[derive(Debug)]
pub struct Failed {
    /// The target.
    pub target: String,
    /// The kernel.
    pub kernel: String,
    /// Why (one line).
    pub reason: String,
}

/// What [`precompile_to_bundle`] made.
#[derive(Debug)]
pub struct BundleReport {
    /// Distinct variants in the manifest.
    pub variants: usize,
    /// The targets compiled for, in order.
    pub targets: Vec<String>,
    /// Entries in the bundle.
    pub entries: usize,
    /// Variant × target items that failed (not in the bundle).
    pub failed: Vec<Failed>,
    /// kernelkit's own kernels compiled for the targets besides the
    /// manifest's variants ([`BUILTIN_STRIDED_COPY`] when there is a CUDA
    /// target: every CUDA bundle carries it).
    pub builtins: Vec<String>,
    /// Wall time of the compiles (all targets, in parallel).
    pub compile_time: Duration,
    /// The bundle's producer note.
    pub producer: String,
}

/// Compiles every variant of the manifest at `manifest` for every target
/// of `targets` and writes one bundle signed by `key` to `out` (see the
/// module documentation). Failed items are reported, not fatal; a target
/// that cannot be set up is.
pub fn precompile_to_bundle(
    manifest: &Path,
    targets: &BundleTargets,
    out: &Path,
    key: &SecretKey,
) -> Result<BundleReport, ManifestError> {
    let specs = read(manifest)?;
    let tmp = tempfile::tempdir().map_err(|source| ManifestError::Io {
        path: std::env::temp_dir(),
        source,
    })?;
    let store_dir = tmp.path().join("store");
    let config = Config::from_env().cache_dir(&store_dir);
    let mut devices: Vec<(String, Device)> = Vec::new();
    for t in &targets.cpu {
        let device = Device::builder()
            .config(config.clone())
            .cpu_target(t)
            .map_err(|e| ManifestError::Target {
                target: t.clone(),
                reason: e.to_string(),
            })?;
        devices.push((format!("cpu {t}"), device));
    }
    let mut producer = bundle::default_producer();
    if !targets.cuda_archs.is_empty() {
        let (cuda, nvrtc) = cuda_devices(&config, &targets.cuda_archs, targets.ptx)?;
        producer.push_str(&format!("; {nvrtc}"));
        devices.extend(cuda);
    }
    let mut builder = Precompile::builder();
    if let Some(n) = targets.workers {
        builder = builder.workers(n);
    }
    let mut items = Vec::new();
    for spec in &specs {
        let kernel = match spec.kernel() {
            Ok(k) => k,
            Err(e) => {
                for (target, _) in &devices {
                    items.push(Err(Failed {
                        target: target.clone(),
                        kernel: spec.name.clone(),
                        reason: e.to_string(),
                    }));
                }
                continue;
            }
        };
        let inputs: Vec<InputDesc> = spec
            .inputs
            .iter()
            .map(|p| InputDesc {
                dtype: p.dtype,
                mode: PassMode::of(p.shape.len(), p.shape.iter().product()),
            })
            .collect();
        let outputs: Vec<_> = spec.outputs.iter().map(|p| p.dtype).collect();
        let template: Vec<TemplateParam<'_>> = spec
            .template
            .iter()
            .map(|(name, value)| TemplateParam {
                name: name.as_str().into(),
                value: *value,
            })
            .collect();
        let desc = VariantDesc {
            inputs: &inputs,
            outputs: &outputs,
            template: &template,
        };
        for (target, device) in &devices {
            builder = builder.variant(&kernel, device, &desc);
            items.push(Ok(target.clone()));
        }
    }
    let started = Instant::now();
    // kernelkit's strided copy for every CUDA target (see the module
    // documentation), beside the variants' compiles.
    let (report, copies) = std::thread::scope(|scope| {
        let copies: Vec<_> = devices
            .iter()
            .map(|(target, device)| {
                scope.spawn(move || (target.clone(), device.prepare_strided_copy()))
            })
            .collect();
        let report = builder.start().wait();
        let copies: Vec<_> = copies.into_iter().filter_map(|h| h.join().ok()).collect();
        (report, copies)
    });
    let compile_time = started.elapsed();
    let mut failed: Vec<Failed> = Vec::new();
    let mut builtins = Vec::new();
    for (target, result) in copies {
        match result {
            Ok(true) if builtins.is_empty() => builtins.push(BUILTIN_STRIDED_COPY.to_string()),
            Ok(_) => {}
            Err(e) => failed.push(Failed {
                target,
                kernel: BUILTIN_STRIDED_COPY.to_string(),
                reason: e.to_string().lines().next().unwrap_or("").to_string(),
            }),
        }
    }
    let mut results = report.results.into_iter();
    for item in items {
        match item {
            Err(f) => failed.push(f),
            Ok(target) => {
                if let Some(r) = results.next() {
                    if let Err(e) = r.result {
                        failed.push(Failed {
                            target,
                            kernel: r.kernel,
                            reason: e.to_string().lines().next().unwrap_or("").to_string(),
                        });
                    }
                }
            }
        }
    }
    drop(devices);
    let store = ArtifactStore::open(&store_dir).map_err(BundleError::from)?;
    let exported = bundle::export_as(&store, &ExportFilter::default(), None, key, &producer)?;
    bundle::write(out, &exported.bundle)?;
    Ok(BundleReport {
        variants: specs.len(),
        targets: targets
            .cpu
            .iter()
            .map(|t| format!("cpu {t}"))
            .chain(cuda_target_names(&targets.cuda_archs, targets.ptx))
            .collect(),
        entries: exported.entries,
        failed,
        builtins,
        compile_time,
        producer,
    })
}

/// `cuda sm_90a`, and `cuda compute_90` with PTX, per architecture.
fn cuda_target_names(archs: &[String], ptx: bool) -> Vec<String> {
    let mut out = Vec::new();
    for a in archs {
        out.push(format!("cuda {a}"));
        if ptx {
            if let Some(v) = crate::device::ptx_target_of(a) {
                if !out.contains(&format!("cuda {v}")) {
                    out.push(format!("cuda {v}"));
                }
            }
        }
    }
    out
}

/// The compile-only CUDA devices for `archs` (and their PTX targets), and
/// NVRTC's version (`nvrtc 12.8`).
fn cuda_devices(
    config: &Config,
    archs: &[String],
    ptx: bool,
) -> Result<(Vec<(String, Device)>, String), ManifestError> {
    let mut out = Vec::new();
    let mut version = String::new();
    for name in cuda_target_names(archs, ptx) {
        let target = name.trim_start_matches("cuda ").to_string();
        let (device, nvrtc) =
            Device::open_cuda_compile_only(config, &target).map_err(|e| ManifestError::Target {
                target: target.clone(),
                reason: e.to_string(),
            })?;
        version = nvrtc;
        out.push((name, device));
    }
    Ok((out, version))
}

/// The compiler configurations of this machine's devices whose artifacts
/// a bundle import takes: the CPU's (and the portable levels it runs),
/// each CUDA GPU's that opens (and the PTX it loads).
pub fn local_identities(config: &Config) -> Vec<crate::cache::key::IdentityDigest> {
    let mut out = Device::builder()
        .config(config.clone())
        .cpu()
        .map(|d| d.artifact_identities())
        .unwrap_or_default();
    for ordinal in 0..64 {
        let Ok(d) = Device::builder().config(config.clone()).cuda(ordinal) else {
            break;
        };
        for id in d.artifact_identities() {
            if !out.contains(&id) {
                out.push(id);
            }
        }
    }
    out
}

/// Imports the bundle at `path`, signed by one of `trusted`, into the
/// artifact store `config` names, for this machine's devices
/// ([`local_identities`]); what Python's `kk.import_bundle` runs.
pub fn import_bundle(
    path: &Path,
    trusted: &bundle::TrustedKeys,
    config: &Config,
) -> Result<bundle::ImportReport, ManifestError> {
    let dir = config
        .cache
        .dir
        .clone()
        .ok_or_else(|| ManifestError::Target {
            target: "the artifact store".into(),
            reason: "no store directory (set KERNELKIT_CACHE_DIR)".into(),
        })?;
    let bytes = bundle::read(path, config.cache.bundle_max_bytes)?;
    let store = ArtifactStore::create(&dir)
        .map_err(BundleError::from)?
        .with_max_bytes(config.cache.max_bytes);
    Ok(bundle::import(
        &bytes,
        trusted,
        &local_identities(config),
        &store,
    )?)
}
