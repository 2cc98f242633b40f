//! kernelkit kernels inside JAX programs, through XLA's FFI.
//!
//! `kernelkit.jax` (Python) lowers a kernel call to `jax.ffi.ffi_call` of
//! one handler, registered once per platform (`cpu`, `cuda`) under the
//! target name `kernelkit`. The handler is this crate's Rust (no C++, no
//! build step): its raw C ABI and `extern "C"` entry points are in
//! [`crate::ffi::xla_ffi`], its two stages in [`handler`].
//!
//! - [`identity`]: a kernel's content-addressed identity (the hash of its
//!   canonical spec text), carried with the text as FFI attributes, so a
//!   lowered program reloads in any process.
//! - [`handler`]: instantiate (bind the kernel and the call's fixed
//!   arguments once per call site) and execute (launch on XLA's stream).
//! - here: the Python side's entry points: `_jax_kernel` (the kernel and
//!   its identity, and the variant compiled when a call is traced) and
//!   `_jax_targets` (the capsules to register).

pub mod handler;
pub mod identity;

use std::borrow::Cow;

use kernelkit::{Device, InputDesc, Kernel, PassMode, Precompile, TemplateParam, VariantDesc};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors::{self, IntoPy, Kind};
use crate::ffi::xla_ffi;
use handler::Platform;
use identity::JaxSpec;

/// A kernel as `kernelkit.jax` holds it: the kernelkit kernel, its spec
/// text and identity (the FFI attributes of its calls).
#[pyclass(name = "_JaxKernel", module = "kernelkit._kernelkit", frozen)]
pub(crate) struct PyJaxKernel {
    kernel: Kernel,
    spec: JaxSpec,
    text: String,
    identity: String,
}

#[pymethods]
impl PyJaxKernel {
    /// The content-addressed identity (hex of the spec text's 128-bit hash).
    #[getter]
    fn identity(&self) -> &str {
        &self.identity
    }

    /// The canonical spec text.
    #[getter]
    fn spec(&self) -> &str {
        &self.text
    }

    /// The kernel's name.
    #[getter]
    fn name(&self) -> &str {
        &self.spec.name
    }

    /// The input names.
    #[getter]
    fn input_names(&self) -> Vec<String> {
        self.spec.inputs.clone()
    }

    /// The output names.
    #[getter]
    fn output_names(&self) -> Vec<String> {
        self.spec.outputs.clone()
    }

    /// Compiles (or finds in a tier) the variant a call with these inputs,
    /// output dtypes and template arguments runs, on the kernelkit device
    /// of `platform` (`cpu`, or `cuda` for the GPU of ordinal 0): called
    /// when a call is traced, so that XLA's execution only loads it. The
    /// library's typed errors are raised here (a compile error shows the
    /// body's lines).
    fn compile(
        &self,
        py: Python<'_>,
        template: &str,
        input_dtypes: Vec<String>,
        input_shapes: Vec<Vec<usize>>,
        output_dtypes: Vec<String>,
        platform: &str,
    ) -> PyResult<()> {
        let name = self.spec.name.as_str();
        let template =
            handler::parse_template(name, template).map_err(|m| errors::raise(Kind::Call, m))?;
        let dtype = |d: &String| {
            kernelkit::DType::from_name(d).ok_or_else(|| {
                errors::raise(
                    Kind::Call,
                    format!("kernel `{name}`: kernelkit has no dtype {d}"),
                )
            })
        };
        let inputs = input_dtypes
            .iter()
            .zip(&input_shapes)
            .map(|(d, s)| {
                Ok(InputDesc {
                    dtype: dtype(d)?,
                    mode: PassMode::of(s.len(), s.iter().product()),
                })
            })
            .collect::<PyResult<Vec<_>>>()?;
        let outputs = output_dtypes
            .iter()
            .map(dtype)
            .collect::<PyResult<Vec<_>>>()?;
        let params: Vec<TemplateParam<'_>> = template
            .iter()
            .map(|(n, v)| TemplateParam {
                name: Cow::Borrowed(n.as_str()),
                value: *v,
            })
            .collect();
        let kernel = self.kernel.clone();
        // The package's device, which the handler finds again (one cache and
        // one set of counters with kk.gpu's).
        let device = match platform {
            "cpu" => Device::cpu(),
            _ => crate::device::Place::Cuda(0).open(py)?,
        };
        py.detach(move || {
            let desc = VariantDesc {
                inputs: &inputs,
                outputs: &outputs,
                template: &params,
            };
            let report = Precompile::builder()
                .variant(&kernel, &device, &desc)
                .start()
                .wait();
            for r in report.results {
                r.result?;
            }
            Ok(())
        })
        .py_err()
    }

    fn __repr__(&self) -> String {
        format!(
            "kernelkit.jax kernel `{}` ({})",
            self.spec.name, self.identity
        )
    }
}

/// `_jax_kernel(...)`: the kernel of `kernelkit.jax.metal_kernel` /
/// `cuda_kernel` (the Python side checked the arguments' types with the
/// plain constructor first).
#[pyfunction]
#[pyo3(signature = (language, name, input_names, output_names, source, header, ensure_row_contiguous, atomic_outputs, math_mode, shared_memory, batched))]
#[allow(clippy::too_many_arguments)] // MLX's constructor arguments, and the batch flag.
pub(crate) fn _jax_kernel(
    language: &str,
    name: String,
    input_names: Vec<String>,
    output_names: Vec<String>,
    source: String,
    header: String,
    ensure_row_contiguous: bool,
    atomic_outputs: bool,
    math_mode: String,
    shared_memory: u32,
    batched: bool,
) -> PyResult<PyJaxKernel> {
    let spec = JaxSpec {
        name,
        inputs: input_names,
        outputs: output_names,
        source,
        header,
        ensure_row_contiguous,
        atomic_outputs,
        language: language.to_string(),
        math_mode,
        shared_memory,
        batched,
    };
    let text = spec.text();
    let identity = JaxSpec::identity_of(&text);
    let kernel = identity::remember(&identity, &spec.build().py_err()?);
    Ok(PyJaxKernel {
        kernel,
        spec,
        text,
        identity,
    })
}

/// `_jax_targets(major, minor)`: per platform, the handler's capsules
/// (`instantiate`, `initialize`, `execute`) and its state type's (`type_id`,
/// `type_info`), for `jax.ffi.register_ffi_type` and
/// `register_ffi_target`; `major.minor` is the FFI version of the jaxlib
/// that loads them (XLA accepts only its own).
#[pyfunction]
pub(crate) fn _jax_targets(py: Python<'_>, major: i32, minor: i32) -> PyResult<Bound<'_, PyDict>> {
    xla_ffi::set_api_version(major, minor);
    let out = PyDict::new(py);
    for (platform, key) in [(Platform::Cpu, "cpu"), (Platform::Cuda, "cuda")] {
        let c = xla_ffi::capsules(py, platform)?;
        let d = PyDict::new(py);
        d.set_item("instantiate", c.instantiate)?;
        d.set_item("initialize", c.initialize)?;
        d.set_item("execute", c.execute)?;
        d.set_item("type_id", c.type_id)?;
        d.set_item("type_info", c.type_info)?;
        out.set_item(key, d)?;
    }
    Ok(out)
}
