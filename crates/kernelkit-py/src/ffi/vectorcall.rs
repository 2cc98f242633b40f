//! A function object that CPython calls through vectorcall
//! (`METH_FASTCALL | METH_KEYWORDS`), without PyO3's argument parsing: its
//! positional arguments and keyword values in one array, the keyword names
//! in a tuple. The raw parts (the C entry, the method definition, the
//! borrowed arguments) are here; what a call does is a [`Handler`]'s.

use std::panic::{catch_unwind, AssertUnwindSafe};

use pyo3::ffi;
use pyo3::panic::PanicException;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

/// One vectorcall's arguments, borrowed from the caller for the call:
/// `positional` arguments, then one value per name of `names`.
pub(crate) struct Args<'a, 'py> {
    py: Python<'py>,
    raw: &'a [*mut ffi::PyObject],
    positional: usize,
    names: Option<Bound<'py, PyTuple>>,
}

impl<'a, 'py> Args<'a, 'py> {
    pub(crate) fn py(&self) -> Python<'py> {
        self.py
    }

    /// How many arguments were passed by position.
    pub(crate) fn positional(&self) -> usize {
        self.positional
    }

    /// The keyword names, in the order of their values.
    pub(crate) fn names(&self) -> Option<&Bound<'py, PyTuple>> {
        self.names.as_ref()
    }

    /// How many arguments there are (positional and keyword).
    pub(crate) fn len(&self) -> usize {
        self.raw.len()
    }

    /// Argument `i` (the positional ones first, then the keyword values).
    pub(crate) fn get(&self, i: usize) -> Borrowed<'a, 'py, PyAny> {
        // SAFETY: every pointer of `raw` is a live object the caller lends
        // for the call, which `'a` does not outlive.
        unsafe { Borrowed::from_ptr(self.py, self.raw[i]) }
    }
}

/// What a function object made by [`function`] does when called: `slf` is
/// the object it was made for.
pub(crate) trait Handler {
    fn call<'py>(slf: &Bound<'py, PyAny>, args: Args<'_, 'py>) -> PyResult<Bound<'py, PyList>>;
}

/// CPython's vectorcall flag in `nargsf` (the top bit), not a count.
const ARGUMENTS_OFFSET: usize = 1 << (usize::BITS - 1);

/// The entry CPython calls (`slf` is the object the function was made for).
unsafe extern "C" fn entry<H: Handler>(
    slf: *mut ffi::PyObject,
    args: *const *mut ffi::PyObject,
    nargsf: ffi::Py_ssize_t,
    kwnames: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: CPython calls this with the GIL held (the thread attached).
    let py = unsafe { Python::assume_attached() };
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let positional = nargsf as usize & !ARGUMENTS_OFFSET;
        // SAFETY: `kwnames` is null or a tuple, `args` holds `positional`
        // arguments and then one value per name, and `slf` is the object
        // the function was made with (`function`): all borrowed from the
        // caller for the call.
        let names = unsafe { Borrowed::from_ptr_or_opt(py, kwnames) }
            .map(|n| unsafe { n.cast_unchecked::<PyTuple>() }.to_owned());
        let count = positional + names.as_ref().map_or(0, |n| n.len());
        let raw = if count == 0 {
            &[][..]
        } else {
            unsafe { std::slice::from_raw_parts(args, count) }
        };
        let slf = unsafe { Borrowed::from_ptr(py, slf) }.to_owned();
        H::call(
            &slf,
            Args {
                py,
                raw,
                positional,
                names,
            },
        )
    }));
    let result = outcome.unwrap_or_else(|payload| {
        let message = payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "panic from Rust code".into());
        Err(PanicException::new_err(message))
    });
    match result {
        Ok(list) => list.into_ptr(),
        Err(e) => {
            e.restore(py);
            std::ptr::null_mut()
        }
    }
}

/// A method definition of a vectorcall function (`PyMethodDef` holds raw
/// pointers, to static data here).
pub(crate) struct Def(ffi::PyMethodDef);

// SAFETY: the definition is never written; CPython only reads it.
unsafe impl Sync for Def {}

/// `METH_FASTCALL` (not in pyo3-ffi's limited API before 3.10; CPython's
/// value since 3.7) and `METH_KEYWORDS`.
const METH_FASTCALL_KEYWORDS: std::os::raw::c_int = 0x0080 | ffi::METH_KEYWORDS;

type FastWithKeywords = unsafe extern "C" fn(
    *mut ffi::PyObject,
    *const *mut ffi::PyObject,
    ffi::Py_ssize_t,
    *mut ffi::PyObject,
) -> *mut ffi::PyObject;

impl Def {
    /// The definition of a function named `name`, documented by `doc`
    /// (CPython's `name(signature)\n--\n\ntext` form), that `H` handles.
    pub(crate) const fn new<H: Handler>(
        name: &'static std::ffi::CStr,
        doc: &'static std::ffi::CStr,
    ) -> Def {
        Def(ffi::PyMethodDef {
            ml_name: name.as_ptr(),
            ml_meth: ffi::PyMethodDefPointer {
                // SAFETY: CPython calls a `METH_FASTCALL | METH_KEYWORDS`
                // function with this signature whatever the union's field
                // says (C declares it as `PyCFunction` and casts, as here).
                PyCFunction: unsafe {
                    std::mem::transmute::<FastWithKeywords, ffi::PyCFunction>(
                        entry::<H> as FastWithKeywords,
                    )
                },
            },
            ml_flags: METH_FASTCALL_KEYWORDS,
            ml_doc: doc.as_ptr(),
        })
    }
}

/// A function object of `def` bound to `slf` (CPython keeps a strong
/// reference to it in the function object).
pub(crate) fn function<'py>(
    slf: &Bound<'py, PyAny>,
    def: &'static Def,
) -> PyResult<Bound<'py, PyAny>> {
    // SAFETY: `def` is static and never written.
    unsafe {
        let f = ffi::PyCFunction_NewEx(
            std::ptr::addr_of!(def.0).cast_mut(),
            slf.as_ptr(),
            std::ptr::null_mut(),
        );
        Bound::from_owned_ptr_or_err(slf.py(), f)
    }
}
