//! kernelkit's errors as Python exceptions.
//!
//! The classes are defined in Python (`kernelkit/_errors.py`), where
//! multiple inheritance from `ValueError`, `TypeError` and `RuntimeError` is
//! plain to read; this module fetches them once and raises them with the
//! library's message unchanged.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;

/// The exception classes of `kernelkit._errors`.
struct Classes {
    kernel: Py<PyType>,
    build: Py<PyType>,
    call: Py<PyType>,
    donation: Py<PyType>,
    argument_type: Py<PyType>,
    array: Py<PyType>,
    compile: Py<PyType>,
    device: Py<PyType>,
    out_of_bounds: Py<PyType>,
    jit: Py<PyType>,
}

static CLASSES: PyOnceLock<Classes> = PyOnceLock::new();

fn classes(py: Python<'_>) -> PyResult<&Classes> {
    CLASSES.get_or_try_init(py, || {
        let module = py.import("kernelkit._errors")?;
        let get = |name: &str| -> PyResult<Py<PyType>> {
            Ok(module.getattr(name)?.cast_into::<PyType>()?.unbind())
        };
        Ok(Classes {
            kernel: get("KernelError")?,
            build: get("BuildError")?,
            call: get("CallError")?,
            donation: get("DonationError")?,
            argument_type: get("ArgumentTypeError")?,
            array: get("ArrayError")?,
            compile: get("CompileError")?,
            device: get("DeviceError")?,
            out_of_bounds: get("OutOfBoundsError")?,
            jit: get("JitError")?,
        })
    })
}

/// Which class an error is raised as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Kernel,
    Build,
    Call,
    Donation,
    ArgumentType,
    Array,
    Compile,
    Device,
    OutOfBounds,
    Jit,
}

/// An exception of `kind` with `message`.
pub(crate) fn raise(kind: Kind, message: impl Into<String>) -> PyErr {
    let message = message.into();
    Python::attach(|py| match classes(py) {
        Ok(c) => {
            let class = match kind {
                Kind::Kernel => &c.kernel,
                Kind::Build => &c.build,
                Kind::Call => &c.call,
                Kind::Donation => &c.donation,
                Kind::ArgumentType => &c.argument_type,
                Kind::Array => &c.array,
                Kind::Compile => &c.compile,
                Kind::Device => &c.device,
                Kind::OutOfBounds => &c.out_of_bounds,
                Kind::Jit => &c.jit,
            };
            PyErr::from_type(class.bind(py).clone(), (message,))
        }
        // `kernelkit._errors` could not be imported (a broken install):
        // the message still reaches the user.
        Err(e) => {
            let err = pyo3::exceptions::PyRuntimeError::new_err(message);
            err.set_cause(py, Some(e));
            err
        }
    })
}

/// A `CallError` (a `ValueError`): a value that does not fit.
pub(crate) fn call(message: impl Into<String>) -> PyErr {
    raise(Kind::Call, message)
}

/// A `DonationError` (a `CallError`): a donation the call cannot make.
pub(crate) fn donation(message: impl Into<String>) -> PyErr {
    raise(Kind::Donation, message)
}

/// An `ArgumentTypeError` (a `TypeError`): a value of the wrong type.
pub(crate) fn argument_type(message: impl Into<String>) -> PyErr {
    raise(Kind::ArgumentType, message)
}

/// The Python exception for a kernelkit error, same message; a compile
/// error also carries the compiler's log and the generated source.
pub(crate) fn from_kernelkit(err: kernelkit::Error) -> PyErr {
    use kernelkit::Error;
    let kind = match &err {
        Error::Call(kernelkit::CallError::OutOfBounds { .. }) => Kind::OutOfBounds,
        Error::Build(_) => Kind::Build,
        Error::Call(kernelkit::CallError::Donation { .. }) => Kind::Donation,
        Error::Call(kernelkit::CallError::JitForbidden { .. }) => Kind::Jit,
        Error::Call(_) => Kind::Call,
        Error::Compile(_) => Kind::Compile,
        Error::Array(_) => Kind::Array,
        Error::Device(_) => Kind::Device,
        _ => Kind::Kernel,
    };
    let py_err = raise(kind, err.to_string());
    if let Error::Compile(c) = &err {
        Python::attach(|py| {
            let value = py_err.value(py);
            // Attribute writes on a fresh exception instance cannot fail in
            // practice; if one did, the message alone is still right.
            let _ = value.setattr("log", c.log());
            let _ = value.setattr("source", c.source_code());
        });
    }
    if let Error::Call(kernelkit::CallError::OutOfBounds {
        kernel,
        role,
        argument,
        access,
    }) = &err
    {
        Python::attach(|py| {
            let value = py_err.value(py);
            // As above: the message alone is right if a write failed.
            let _ = value.setattr("kernel", kernel.as_str());
            let _ = value.setattr("role", *role);
            let _ = value.setattr("argument", argument.as_str());
            match &**access {
                kernelkit::OutOfBounds::View {
                    index,
                    span,
                    thread,
                    group,
                } => {
                    let _ = value.setattr("index", *index);
                    let _ = value.setattr("span", *span);
                    let xyz = |v: &[u32; 3]| (v[0], v[1], v[2]);
                    let _ = value.setattr("thread", xyz(thread));
                    let _ = value.setattr("threadgroup", xyz(group));
                }
                kernelkit::OutOfBounds::Guard { byte_offset, bytes } => {
                    let _ = value.setattr("byte_offset", *byte_offset);
                    let _ = value.setattr("buffer_bytes", *bytes);
                }
                _ => {}
            }
        });
    }
    py_err
}

/// `Result<T, kernelkit::Error>` into `PyResult<T>`.
pub(crate) trait IntoPy<T> {
    fn py_err(self) -> PyResult<T>;

    /// The same, an array error said of `kernel`'s `argument` (an array
    /// the caller passed, which the library knows only by its address).
    fn py_err_of(self, kernel: &str, argument: &dyn std::fmt::Display) -> PyResult<T>;
}

impl<T> IntoPy<T> for kernelkit::Result<T> {
    fn py_err(self) -> PyResult<T> {
        self.map_err(from_kernelkit)
    }

    fn py_err_of(self, kernel: &str, argument: &dyn std::fmt::Display) -> PyResult<T> {
        self.map_err(|e| from_kernelkit(kernelkit::ArrayError::of_argument(e, kernel, argument)))
    }
}
