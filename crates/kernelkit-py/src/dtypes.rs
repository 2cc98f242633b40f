//! Python objects that name a dtype, as kernelkit [`DType`]s.
//!
//! Accepted: kernelkit's names (`"float32"`, `"bfloat16"`, `"f16"`, ...),
//! NumPy dtypes and scalar types (`np.float32`, `np.dtype("int8")`,
//! `ml_dtypes.bfloat16`), `torch.dtype`s and MLX dtypes. None of these
//! libraries is imported here: an object is recognised by its type's module
//! and read through its name, so that `import kernelkit` stays fast and
//! works without them.
//!
//! Dtype objects are singletons in practice (`np.float32`, `torch.half`,
//! `value.dtype` of a NumPy array is a cached descriptor), so the answer for
//! each object is remembered by identity: a call that passes the same dtype
//! objects again converts them with a pointer comparison each.

use std::sync::Mutex;

use kernelkit::DType;
use pyo3::prelude::*;
use pyo3::types::{PyString, PyType};

/// Dtype objects remembered at most (a program uses a handful).
const REMEMBERED: usize = 64;

/// Objects seen before and their dtypes. The strong reference keeps each
/// object alive, so its address cannot be reused by another object.
static SEEN: Mutex<Vec<(Py<PyAny>, DType)>> = Mutex::new(Vec::new());

fn seen() -> std::sync::MutexGuard<'static, Vec<(Py<PyAny>, DType)>> {
    SEEN.lock().unwrap_or_else(|p| p.into_inner())
}

/// The dtype `obj` names, or `None` when it names none (the caller words
/// the error, since it knows which argument it was).
pub(crate) fn dtype_of(obj: &Bound<'_, PyAny>) -> PyResult<Option<DType>> {
    let ptr = obj.as_ptr();
    if let Some((_, d)) = seen().iter().find(|(o, _)| o.as_ptr() == ptr) {
        return Ok(Some(*d));
    }
    let Some(dtype) = resolve(obj)? else {
        return Ok(None);
    };
    // Strings are not remembered: a computed one would be a new object
    // on every call and would fill the table.
    if !obj.is_instance_of::<PyString>() {
        let mut table = seen();
        if table.len() < REMEMBERED && !table.iter().any(|(o, _)| o.as_ptr() == ptr) {
            table.push((obj.clone().unbind(), dtype));
        }
    }
    Ok(Some(dtype))
}

/// The kernelkit dtype of a NumPy kind character and item size in bytes
/// (`('f', 4)`: float32), the pair both NumPy's dtypes and the array
/// interface's type strings are made of; `None` where kernelkit has none
/// (bfloat16 has no kind of its own: see `arrays`).
pub(crate) fn dtype_of_kind(kind: u8, size: usize) -> Option<DType> {
    Some(match (kind, size) {
        (b'b', 1) => DType::Bool,
        (b'u', 1) => DType::U8,
        (b'u', 2) => DType::U16,
        (b'u', 4) => DType::U32,
        (b'u', 8) => DType::U64,
        (b'i', 1) => DType::I8,
        (b'i', 2) => DType::I16,
        (b'i', 4) => DType::I32,
        (b'i', 8) => DType::I64,
        (b'f', 2) => DType::F16,
        (b'f', 4) => DType::F32,
        (b'f', 8) => DType::F64,
        (b'c', 8) => DType::Complex64,
        _ => return None,
    })
}

/// The dtype of a name: kernelkit's names, also with the prefix a library
/// prints before it (`torch.float32`, `mlx.core.float16`).
pub(crate) fn from_name(name: &str) -> Option<DType> {
    let bare = ["torch.", "mlx.core.", "numpy.", "np."]
        .iter()
        .find_map(|p| name.strip_prefix(p))
        .unwrap_or(name);
    DType::from_name(bare)
}

/// Works out what `obj` names, without the table.
fn resolve(obj: &Bound<'_, PyAny>) -> PyResult<Option<DType>> {
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(from_name(&s.to_cow()?));
    }
    let class = obj.get_type();
    let module = class.module()?;
    let module = module.to_cow()?;
    let root = module.split('.').next().unwrap_or("");
    match root {
        // NumPy (and ml_dtypes, which registers bfloat16 with NumPy):
        // a dtype instance has `.name`; a scalar type is turned into one.
        "numpy" | "ml_dtypes" => numpy_name(obj),
        // A scalar type object: its type is `type`, its own module says
        // where it comes from.
        "builtins" if obj.is_instance_of::<PyType>() => {
            let ty = obj.cast::<PyType>()?;
            let own = ty.module()?;
            let own = own.to_cow()?;
            if own.starts_with("numpy") || own.starts_with("ml_dtypes") {
                numpy_name(obj)
            } else {
                Ok(None)
            }
        }
        // `torch.dtype` prints as `torch.float32`; MLX's `Dtype` as
        // `mlx.core.float32`.
        "torch" | "mlx" => {
            let name = class.name()?;
            if name.to_cow()?.eq_ignore_ascii_case("dtype") {
                Ok(from_name(&obj.str()?.to_cow()?))
            } else {
                Ok(None)
            }
        }
        _ => Ok(None),
    }
}

/// The dtype of a NumPy dtype or scalar type, through `numpy.dtype(obj).name`
/// (NumPy is imported already: `obj` came from it).
fn numpy_name(obj: &Bound<'_, PyAny>) -> PyResult<Option<DType>> {
    let py = obj.py();
    let descr = match obj.getattr(pyo3::intern!(py, "name")) {
        Ok(name) if !obj.is_instance_of::<PyType>() => name,
        _ => {
            let numpy = py.import("numpy")?;
            match numpy.getattr("dtype")?.call1((obj,)) {
                Ok(d) => d.getattr(pyo3::intern!(py, "name"))?,
                Err(_) => return Ok(None),
            }
        }
    };
    let Ok(name) = descr.cast::<PyString>() else {
        return Ok(None);
    };
    let name = name.to_cow()?;
    // NumPy's own spellings that differ from kernelkit's.
    Ok(match &*name {
        "bool" => Some(DType::Bool),
        "float" | "double" => Some(DType::F64),
        other => DType::from_name(other),
    })
}

/// A short description of `obj` for messages: its type's name and, for a
/// short `repr`, the value (`str 'floot32'`, `float 1.5`).
pub(crate) fn describe(obj: &Bound<'_, PyAny>) -> String {
    let type_name = obj
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "object".into());
    match obj.repr() {
        Ok(r) => {
            let r = r.to_string();
            if r.chars().count() <= 40 {
                format!("{type_name} {r}")
            } else {
                type_name
            }
        }
        Err(_) => type_name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn library_prefixes_are_stripped() {
        assert_eq!(from_name("torch.float32"), Some(DType::F32));
        assert_eq!(from_name("mlx.core.bfloat16"), Some(DType::BF16));
        assert_eq!(from_name("float16"), Some(DType::F16));
        assert_eq!(from_name("torch.complex128"), None);
        assert_eq!(from_name("floot32"), None);
    }
}
