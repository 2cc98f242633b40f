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
//! - **kernelkit's strided copy.** A call whose strided input a GPU copies
//!   with kernelkit's own kernel (a kernel that asks for row-contiguous
//!   inputs) also records that kernel, once per backend and architecture:
//!   `{"builtin": "strided_copy", "backend": "cuda", "arch": "sm_90a",
//!   ...}` (`device::copy`; the file itself is kept by
//!   `device::record_sink`, so that the device floor writes to it too).

use std::path::{Path, PathBuf};

use crate::array::Array;
use crate::codegen::math::MathMode;
use crate::codegen::template::TemplateParam;
use crate::codegen::BodyLanguage;
use crate::device::dispatch::OutputSpec;
use crate::device::record_sink;
use crate::kernel::Kernel;

/// Records the variants this process resolves from now on into `path`
/// (created if missing, appended to), instead of any manifest recorded
/// to before. The variants already in the file are not written again.
pub fn start(path: impl AsRef<Path>) -> std::io::Result<()> {
    record_sink::start(path.as_ref())
}

/// Stops recording; returns the manifest recorded to, if any.
pub fn stop() -> Option<PathBuf> {
    record_sink::stop()
}

/// The manifest being recorded to, if any.
pub fn recording() -> Option<PathBuf> {
    record_sink::recording()
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
    if record_sink::active() {
        record_sink::append(&line_of(seen));
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
