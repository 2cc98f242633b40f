//! Recording: every variant the process resolves, appended once to a
//! manifest (JSON lines) that `kernelkit precompile --manifest` compiles
//! ahead of time for the machines that will run it.
//!
//! - **What a line holds.** `{"spec": {...}, "backend": "cpu", "arch":
//!   "native", "function": "custom_kernel_..."}`: `spec` is a spec file
//!   without data (`spec_file`: the kernel's name, inputs and outputs with
//!   their dtypes and shapes, body, header, flags, template arguments,
//!   language, math mode), enough to generate the variant again on any
//!   backend; the rest says where it was recorded (for people: a manifest
//!   recorded on the CPU precompiles for CUDA). No path, user or host name
//!   is in it.
//! - **Once.** Lines are written on a miss of a kernel's variant memo only
//!   (a warm call never comes here) and deduplicated by their text's hash
//!   against a set of this process's lines, seeded with the file's lines
//!   when recording starts.
//! - **Many writers.** Each line is one `write` of the whole line to a file
//!   opened with `O_APPEND`: lines of many threads and processes never
//!   interleave. Two processes that record the same variant at once may
//!   both write it; readers deduplicate (`kernelkit precompile` does).
//! - **Started** by `KERNELKIT_RECORD=FILE` (read at the first resolve), or
//!   by [`start`] / [`stop`] (Python's `kk.record(path)`).

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use xxhash_rust::xxh3::xxh3_64;

use crate::array::Array;
use crate::codegen::math::MathMode;
use crate::codegen::template::TemplateParam;
use crate::codegen::BodyLanguage;
use crate::config::Config;
use crate::device::dispatch::OutputSpec;
use crate::kernel::Kernel;

/// The open manifest and the hashes of the lines it holds.
struct Recorder {
    path: PathBuf,
    file: File,
    seen: HashSet<u64>,
}

/// `None` inside: not recording. Initialised from `KERNELKIT_RECORD` on
/// first use.
fn state() -> &'static Mutex<Option<Recorder>> {
    static STATE: OnceLock<Mutex<Option<Recorder>>> = OnceLock::new();
    STATE.get_or_init(|| {
        let recorder = Config::from_env().record.and_then(|path| {
            open(&path)
                .map_err(|e| {
                    tracing::warn!("KERNELKIT_RECORD: cannot record to {}: {e}", path.display())
                })
                .ok()
        });
        Mutex::new(recorder)
    })
}

fn open(path: &Path) -> std::io::Result<Recorder> {
    let file = OpenOptions::new().create(true).append(true).open(path)?;
    let seen = std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| xxh3_64(l.as_bytes()))
        .collect();
    Ok(Recorder {
        path: path.to_path_buf(),
        file,
        seen,
    })
}

/// Records the variants this process resolves from now on into `path`
/// (created if missing, appended to), instead of any manifest recorded
/// to before. The variants already in the file are not written again.
pub fn start(path: impl AsRef<Path>) -> std::io::Result<()> {
    let recorder = open(path.as_ref())?;
    *lock() = Some(recorder);
    Ok(())
}

/// Stops recording; returns the manifest recorded to, if any.
pub fn stop() -> Option<PathBuf> {
    lock().take().map(|r| r.path)
}

/// The manifest being recorded to, if any.
pub fn recording() -> Option<PathBuf> {
    lock().as_ref().map(|r| r.path.clone())
}

fn lock() -> std::sync::MutexGuard<'static, Option<Recorder>> {
    state().lock().unwrap_or_else(|p| p.into_inner())
}

/// What one call says of its variant (borrowed from the call).
pub(crate) struct Observed<'a> {
    pub(crate) kernel: &'a Kernel,
    pub(crate) inputs: &'a [&'a Array],
    pub(crate) outputs: &'a [OutputSpec],
    pub(crate) template: &'a [TemplateParam<'a>],
    pub(crate) backend: &'a str,
    pub(crate) arch: &'a str,
    pub(crate) function: &'a str,
}

/// Appends the variant `seen` describes, when recording and when it is not
/// in the manifest yet (a memo miss: see the module documentation). A
/// failed write is logged, never an error of the call.
pub(crate) fn note(seen: &Observed<'_>) {
    let mut guard = lock();
    let Some(recorder) = guard.as_mut() else {
        return;
    };
    let line = line_of(seen);
    let hash = xxh3_64(line.as_bytes());
    if !recorder.seen.insert(hash) {
        return;
    }
    let mut bytes = line.into_bytes();
    bytes.push(b'\n');
    // One write of the whole line to an O_APPEND file: lines never
    // interleave with other writers'.
    if let Err(e) = recorder.file.write_all(&bytes) {
        tracing::warn!(
            "kernelkit record: cannot append to {}: {e}",
            recorder.path.display()
        );
    }
}

/// The manifest line of `seen`.
pub(crate) fn line_of(seen: &Observed<'_>) -> String {
    let spec = seen.kernel.spec();
    let port = |name: &str, dtype: crate::DType, shape: Vec<i64>| {
        serde_json::json!([name, dtype.name(), shape])
    };
    let inputs: Vec<_> = spec
        .input_names
        .iter()
        .zip(seen.inputs)
        .map(|(n, a)| port(n, a.dtype(), a.shape().iter().map(|&d| d as i64).collect()))
        .collect();
    let outputs: Vec<_> = spec
        .output_names
        .iter()
        .zip(seen.outputs)
        .map(|(n, (shape, dtype))| port(n, *dtype, shape.to_vec()))
        .collect();
    let template: Vec<_> = seen
        .template
        .iter()
        .map(|t| {
            let value = match t.value {
                crate::TemplateArg::Int(i) => serde_json::json!(i),
                crate::TemplateArg::Bool(b) => serde_json::json!(b),
                crate::TemplateArg::DType(d) => serde_json::json!(d.name()),
            };
            serde_json::json!([t.name, value])
        })
        .collect();
    let mut s = serde_json::json!({
        "name": spec.name,
        "inputs": inputs,
        "outputs": outputs,
        "source": spec.source,
        "header": spec.header,
        "ensure_row_contiguous": spec.ensure_row_contiguous,
        "atomic_outputs": spec.atomic_outputs,
        "template": template,
    });
    if spec.language != BodyLanguage::Metal {
        s["language"] = serde_json::json!(spec.language.name());
    }
    if spec.math_mode != MathMode::Safe {
        s["compile_options"] = serde_json::json!({ "math_mode": spec.math_mode.name() });
    }
    serde_json::json!({
        "spec": s,
        "backend": seen.backend,
        "arch": seen.arch,
        "function": seen.function,
    })
    .to_string()
}
