//! `metal_kernel` and `cuda_kernel`: MLX's two constructors, which build
//! the kernel (names validated, body scanned) once and return the callable
//! of `kernel`.

use kernelkit::{Kernel, KernelBuilder, MathMode};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyInt};

use crate::args::{flag, text, texts, wrong_type};
use crate::dtypes::describe;
use crate::errors::{self, IntoPy, Kind};
use crate::kernel::PyKernel;

/// `metal_kernel(name, input_names, output_names, source, header="",
/// ensure_row_contiguous=True, atomic_outputs=False, compile_options=None,
/// check_bounds=None)`; `check_bounds` is kernelkit's (default: the
/// environment's `KERNELKIT_CHECK_BOUNDS`).
#[pyfunction]
#[pyo3(
    signature = (name, input_names, output_names, source, header = None, ensure_row_contiguous = None, atomic_outputs = None, compile_options = None, check_bounds = None),
    text_signature = "(name, input_names, output_names, source, header='', ensure_row_contiguous=True, atomic_outputs=False, compile_options=None, check_bounds=None)"
)]
#[allow(clippy::too_many_arguments)] // MLX's signature.
pub(crate) fn metal_kernel(
    name: &Bound<'_, PyAny>,
    input_names: &Bound<'_, PyAny>,
    output_names: &Bound<'_, PyAny>,
    source: &Bound<'_, PyAny>,
    header: Option<&Bound<'_, PyAny>>,
    ensure_row_contiguous: Option<&Bound<'_, PyAny>>,
    atomic_outputs: Option<&Bound<'_, PyAny>>,
    compile_options: Option<&Bound<'_, PyAny>>,
    check_bounds: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyKernel> {
    let (builder, name) = Spec::read(
        "metal_kernel",
        name,
        input_names,
        output_names,
        source,
        header,
    )?
    .builder(ensure_row_contiguous)?;
    let atomic_outputs = flag(atomic_outputs, &name, "atomic_outputs", false)?;
    let math_mode = compile_options_mode(&name, compile_options)?;
    let builder = with_check_bounds(builder, &name, check_bounds)?;
    let kernel = builder
        .atomic_outputs(atomic_outputs)
        .math_mode(math_mode)
        .build()
        .py_err()?;
    Ok(PyKernel::new(kernel, 0))
}

/// `cuda_kernel(name, input_names, output_names, source, header="",
/// ensure_row_contiguous=True, shared_memory=0, check_bounds=None)`.
#[pyfunction]
#[pyo3(
    signature = (name, input_names, output_names, source, header = None, ensure_row_contiguous = None, shared_memory = None, check_bounds = None),
    text_signature = "(name, input_names, output_names, source, header='', ensure_row_contiguous=True, shared_memory=0, check_bounds=None)"
)]
#[allow(clippy::too_many_arguments)] // MLX's signature and kernelkit's keyword.
pub(crate) fn cuda_kernel(
    name: &Bound<'_, PyAny>,
    input_names: &Bound<'_, PyAny>,
    output_names: &Bound<'_, PyAny>,
    source: &Bound<'_, PyAny>,
    header: Option<&Bound<'_, PyAny>>,
    ensure_row_contiguous: Option<&Bound<'_, PyAny>>,
    shared_memory: Option<&Bound<'_, PyAny>>,
    check_bounds: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyKernel> {
    let (builder, name) = Spec::read(
        "cuda_kernel",
        name,
        input_names,
        output_names,
        source,
        header,
    )?
    .builder(ensure_row_contiguous)?;
    let name = name.as_str();
    let shared_memory = match shared_memory.filter(|v| !v.is_none()) {
        None => 0,
        Some(v) if v.is_instance_of::<PyBool>() => {
            return Err(wrong_type(name, "shared_memory", "an int of bytes", v))
        }
        Some(v) => v.extract::<u32>().map_err(|_| match v.is_instance_of::<PyInt>() {
            // The right type, out of range: a `ValueError`.
            true => errors::raise(
                Kind::Build,
                format!("kernel `{name}`: shared_memory must be from 0 to 4294967295 bytes, got {v}"),
            ),
            false => wrong_type(name, "shared_memory", "an int of bytes", v),
        })?,
    };
    // A CUDA C++ body (MLX's `cuda_kernel`): CUDA devices only.
    let builder =
        with_check_bounds(builder, name, check_bounds)?.language(kernelkit::BodyLanguage::Cuda);
    let kernel = builder.build().py_err()?;
    Ok(PyKernel::new(kernel, shared_memory))
}

/// `check_bounds=`: a bool, or `None` for the environment's default
/// (`KERNELKIT_CHECK_BOUNDS`).
fn with_check_bounds(
    builder: KernelBuilder,
    name: &str,
    check_bounds: Option<&Bound<'_, PyAny>>,
) -> PyResult<KernelBuilder> {
    match check_bounds.filter(|v| !v.is_none()) {
        None => Ok(builder),
        Some(v) => {
            let yes = flag(Some(v), name, "check_bounds", false)?;
            Ok(builder.check_bounds(yes))
        }
    }
}

/// The texts both constructors take, read here rather than by PyO3 so that
/// one of the wrong type is an `ArgumentTypeError` (a `TypeError`) naming
/// the kernel and the argument, as the library's own errors do. (What the
/// texts say, names that collide or are reserved, is the library's check.)
struct Spec {
    name: String,
    input_names: Vec<String>,
    output_names: Vec<String>,
    source: String,
    header: String,
}

impl Spec {
    fn read(
        constructor: &str,
        name: &Bound<'_, PyAny>,
        input_names: &Bound<'_, PyAny>,
        output_names: &Bound<'_, PyAny>,
        source: &Bound<'_, PyAny>,
        header: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Spec> {
        let name = name.extract::<String>().map_err(|_| {
            errors::argument_type(format!(
                "{constructor}: the kernel's name must be a str, got {}",
                describe(name)
            ))
        })?;
        let kernel = name.as_str();
        Ok(Spec {
            input_names: texts(input_names, kernel, "input_names")?,
            output_names: texts(output_names, kernel, "output_names")?,
            source: text(source, kernel, "source")?,
            header: match header.filter(|h| !h.is_none()) {
                Some(header) => text(header, kernel, "header")?,
                None => String::new(),
            },
            name,
        })
    }

    /// The library's builder of these texts and `ensure_row_contiguous`
    /// (a bool, `True` by default), and the kernel's name for the
    /// constructor's later messages.
    fn builder(
        self,
        ensure_row_contiguous: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<(KernelBuilder, String)> {
        let contiguous = flag(
            ensure_row_contiguous,
            &self.name,
            "ensure_row_contiguous",
            true,
        )?;
        let builder = Kernel::builder(self.name.clone())
            .inputs(self.input_names)
            .outputs(self.output_names)
            .source(self.source)
            .header(self.header)
            .ensure_row_contiguous(contiguous);
        Ok((builder, self.name))
    }
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
