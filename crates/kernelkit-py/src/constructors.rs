//! `metal_kernel` and `cuda_kernel`: MLX's two constructors, which build
//! the kernel (names validated, body scanned) once and return the callable
//! of `kernel`.

use kernelkit::{Kernel, MathMode};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::dtypes::describe;
use crate::errors::{self, IntoPy, Kind};
use crate::kernel::{Flavor, PyKernel};

/// `metal_kernel(name, input_names, output_names, source, header="",
/// ensure_row_contiguous=True, atomic_outputs=False, compile_options=None)`.
#[pyfunction]
#[pyo3(
    signature = (name, input_names, output_names, source, header = String::new(), ensure_row_contiguous = true, atomic_outputs = false, compile_options = None),
    text_signature = "(name, input_names, output_names, source, header='', ensure_row_contiguous=True, atomic_outputs=False, compile_options=None)"
)]
#[allow(clippy::too_many_arguments)] // MLX's signature.
pub(crate) fn metal_kernel(
    name: String,
    input_names: Vec<String>,
    output_names: Vec<String>,
    source: String,
    header: String,
    ensure_row_contiguous: bool,
    atomic_outputs: bool,
    compile_options: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyKernel> {
    let math_mode = compile_options_mode(&name, compile_options)?;
    let kernel = Kernel::builder(name)
        .inputs(input_names)
        .outputs(output_names)
        .source(source)
        .header(header)
        .ensure_row_contiguous(ensure_row_contiguous)
        .atomic_outputs(atomic_outputs)
        .math_mode(math_mode)
        .build()
        .py_err()?;
    Ok(PyKernel::new(kernel, Flavor::Metal, 0))
}

/// `cuda_kernel(name, input_names, output_names, source, header="",
/// ensure_row_contiguous=True, shared_memory=0)`.
#[pyfunction]
#[pyo3(
    signature = (name, input_names, output_names, source, header = String::new(), ensure_row_contiguous = true, shared_memory = 0),
    text_signature = "(name, input_names, output_names, source, header='', ensure_row_contiguous=True, shared_memory=0)"
)]
pub(crate) fn cuda_kernel(
    name: String,
    input_names: Vec<String>,
    output_names: Vec<String>,
    source: String,
    header: String,
    ensure_row_contiguous: bool,
    shared_memory: u32,
) -> PyResult<PyKernel> {
    let builder = Kernel::builder(name)
        .inputs(input_names)
        .outputs(output_names)
        .source(source)
        .header(header)
        .ensure_row_contiguous(ensure_row_contiguous)
        // A CUDA C++ body (MLX's `cuda_kernel`): CUDA devices only.
        .language(kernelkit::BodyLanguage::Cuda);
    let kernel = builder.build().py_err()?;
    Ok(PyKernel::new(kernel, Flavor::Cuda, shared_memory))
}

/// MLX's `compile_options`: a dict whose one key, `math_mode`, is `safe`
/// (the default), `relaxed` or `fast`; the math mode it names.
fn compile_options_mode(kernel: &str, options: Option<&Bound<'_, PyAny>>) -> PyResult<MathMode> {
    let mut mode = MathMode::Safe;
    let Some(options) = options.filter(|o| !o.is_none()) else {
        return Ok(mode);
    };
    let bad = |message: String| errors::raise(Kind::Build, format!("kernel `{kernel}`: {message}"));
    let Ok(dict) = options.cast::<PyDict>() else {
        return Err(bad(format!(
            "compile_options must be a dict, got {}",
            describe(options)
        )));
    };
    for (key, value) in dict.iter() {
        match key.extract::<String>().ok().as_deref() {
            Some("math_mode") => {
                let name = value.extract::<String>().unwrap_or_default();
                mode = MathMode::from_name(&name).ok_or_else(|| {
                    bad(format!(
                        "compile option math_mode is {}; expected 'safe', 'relaxed' or 'fast'",
                        describe(&value)
                    ))
                })?;
            }
            _ => return Err(bad(format!("unknown compile option {}", describe(&key)))),
        }
    }
    Ok(mode)
}
