//! Production without JIT from Python: recording the variants a process
//! resolves (`kk.record`), the JIT policy (`kk.set_jit`), precompiling a
//! manifest into a bundle (`kk.precompile`) and importing one
//! (`kk.import_bundle`). Each is a thin layer over `kernelkit::kernel::jit`,
//! `kernelkit::kernel::record` and `kernelkit::manifest`.

use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::PyDict;

use kernelkit::cache::bundle::{SecretKey, TrustedKeys};
use kernelkit::kernel::jit::{self, JitPolicy};
use kernelkit::kernel::record;
use kernelkit::manifest::{self, BundleTargets};
use kernelkit::Config;

use crate::errors;

/// Starts recording every variant this process resolves into `path`.
#[pyfunction]
pub(crate) fn _record_start(path: PathBuf) -> PyResult<()> {
    record::start(&path).map_err(|e| {
        errors::call(format!(
            "kk.record: cannot record to {}: {e}",
            path.display()
        ))
    })
}

/// Stops recording; the manifest recorded to, if any.
#[pyfunction]
pub(crate) fn _record_stop() -> Option<PathBuf> {
    record::stop()
}

/// Sets the process's JIT policy: "allow", "warn" or "forbid".
#[pyfunction]
pub(crate) fn set_jit(policy: &str) -> PyResult<()> {
    let p = JitPolicy::parse(policy).ok_or_else(|| {
        errors::call(format!(
            "set_jit: {policy:?} is not \"allow\", \"warn\" or \"forbid\""
        ))
    })?;
    jit::set_policy(p);
    Ok(())
}

/// The process's JIT policy: "allow", "warn" or "forbid".
#[pyfunction]
pub(crate) fn jit_policy() -> &'static str {
    jit::policy().as_str()
}

/// Compiles every variant of `manifest` for the CUDA architectures `arch`
/// (NVRTC only, no GPU), with PTX when `ptx`, and the CPU levels `cpu`
/// into the bundle `out`, signed by the private key in `signing_key`.
#[pyfunction]
#[pyo3(signature = (manifest, out, signing_key, arch=Vec::new(), ptx=true, cpu=Vec::new(), workers=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn precompile<'py>(
    py: Python<'py>,
    manifest: PathBuf,
    out: PathBuf,
    signing_key: PathBuf,
    arch: Vec<String>,
    ptx: bool,
    cpu: Vec<String>,
    workers: Option<usize>,
) -> PyResult<Bound<'py, PyDict>> {
    let key = SecretKey::read(&signing_key).map_err(|e| errors::call(e.to_string()))?;
    let targets = BundleTargets {
        cpu,
        cuda_archs: arch,
        ptx,
        workers,
    };
    let report = py
        .detach(|| manifest::precompile_to_bundle(&manifest, &targets, &out, &key))
        .map_err(|e| errors::call(e.to_string()))?;
    let dict = PyDict::new(py);
    dict.set_item("variants", report.variants)?;
    dict.set_item("entries", report.entries)?;
    dict.set_item("targets", report.targets)?;
    dict.set_item("seconds", report.compile_time.as_secs_f64())?;
    dict.set_item("producer", report.producer)?;
    // kernelkit's own kernels in the bundle (its strided copy, for CUDA).
    dict.set_item("builtins", report.builtins)?;
    let failed: Vec<(String, String, String)> = report
        .failed
        .into_iter()
        .map(|f| (f.kernel, f.target, f.reason))
        .collect();
    dict.set_item("failed", failed)?;
    Ok(dict)
}

/// Makes an Ed25519 key pair for signing bundles: `out` (private, mode
/// 0600) and `out.pub` (for the nodes' trusted keys); returns the public
/// key's line.
#[pyfunction]
#[pyo3(signature = (out, comment=""))]
pub(crate) fn keygen(out: PathBuf, comment: &str) -> PyResult<String> {
    let mut public = out.clone().into_os_string();
    public.push(".pub");
    let key = SecretKey::generate().map_err(|e| errors::call(e.to_string()))?;
    key.write(&out, &PathBuf::from(public), comment)
        .map_err(|e| errors::call(e.to_string()))?;
    Ok(key.public().to_line())
}

/// Imports the signed bundle at `path` into this process's artifact store
/// for this machine's devices; `trusted_keys` is a file of public keys
/// (default: `KERNELKIT_TRUSTED_KEYS`).
#[pyfunction]
#[pyo3(signature = (path, trusted_keys=None))]
pub(crate) fn import_bundle<'py>(
    py: Python<'py>,
    path: PathBuf,
    trusted_keys: Option<PathBuf>,
) -> PyResult<Bound<'py, PyDict>> {
    let config = Config::from_env();
    let keys_file = trusted_keys.or(config.cache.trusted_keys.clone());
    let trusted = match keys_file {
        Some(f) => TrustedKeys::read(&f).map_err(|e| errors::call(e.to_string()))?,
        None => TrustedKeys::default(),
    };
    let report = py
        .detach(|| manifest::import_bundle(&path, &trusted, &config))
        .map_err(|e| errors::call(e.to_string()))?;
    let dict = PyDict::new(py);
    dict.set_item("imported", report.imported)?;
    dict.set_item("present", report.present)?;
    dict.set_item("other_compiler", report.other_compiler.len())?;
    dict.set_item("stale", report.stale.len())?;
    Ok(dict)
}
