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
    argument_type: Py<PyType>,
    array: Py<PyType>,
    compile: Py<PyType>,
    device: Py<PyType>,
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
            argument_type: get("ArgumentTypeError")?,
            array: get("ArrayError")?,
            compile: get("CompileError")?,
            device: get("DeviceError")?,
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
    ArgumentType,
    Array,
    Compile,
    Device,
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
                Kind::ArgumentType => &c.argument_type,
                Kind::Array => &c.array,
                Kind::Compile => &c.compile,
                Kind::Device => &c.device,
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

/// An `ArgumentTypeError` (a `TypeError`): a value of the wrong type.
pub(crate) fn argument_type(message: impl Into<String>) -> PyErr {
    raise(Kind::ArgumentType, message)
}

/// The Python exception for a kernelkit error, same message; a compile
/// error also carries the compiler's log and the generated source.
pub(crate) fn from_kernelkit(err: kernelkit::Error) -> PyErr {
    use kernelkit::Error;
    let kind = match &err {
        Error::Build(_) => Kind::Build,
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
