//! A kernel call's Python arguments as kernelkit values: grid and
//! threadgroup extents, output shapes and dtypes, template arguments.
//!
//! Template lists are usually the same objects call after call (a literal
//! list of interned names, small ints and dtype singletons), so each
//! callable remembers the last list it parsed, by the identity of its
//! names and values: a repeated call compares pointers and parses nothing.
//! `output_shapes`/`output_dtypes` likewise ([`OutputsMemo`]), a shape
//! that is a tuple (`x.shape`: a tuple, or torch's `torch.Size`, a tuple
//! subclass) by identity: immutable, so the same objects are the same
//! values. Whatever is not the remembered object (a tuple built at each
//! call, a list, a new `torch.Size`, a dtype's name) is compared by value
//! with what was remembered, reading each item once, before anything is
//! parsed: every spelling of a repeated call is found without parsing.

use std::fmt::Display;
use std::sync::{Arc, Mutex};

use kernelkit::{DType, TemplateArg};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyInt, PyList, PySequence, PyString, PyTuple};
use smallvec::SmallVec;

use crate::dtypes::{describe, dtype_of};
use crate::errors;
use crate::kernel::route::{self, Route};

/// A call's template arguments, names shared with the memo.
pub(crate) type Template = SmallVec<[(Arc<str>, TemplateArg); 4]>;

/// An output's shape (as given: kernelkit checks the extents) and dtype.
pub(crate) type OutputSpec = (SmallVec<[i64; 4]>, DType);

/// The items of a list or tuple (other sequences too, but not `str`, and
/// not a NumPy array, whose rows would silently become the items).
pub(crate) fn items<'py>(
    obj: &Bound<'py, PyAny>,
    kernel: &str,
    what: &dyn Display,
) -> PyResult<SmallVec<[Bound<'py, PyAny>; 4]>> {
    if let Ok(list) = obj.cast::<PyList>() {
        return Ok(list.iter().collect());
    }
    if let Ok(tuple) = obj.cast::<PyTuple>() {
        return Ok(tuple.iter().collect());
    }
    if !obj.is_instance_of::<PyString>() && !obj.hasattr("__array_interface__")? {
        if let Ok(seq) = obj.cast::<PySequence>() {
            return seq.try_iter()?.collect();
        }
    }
    Err(errors::argument_type(format!(
        "kernel `{kernel}`: {what} must be a list or a tuple, got {}",
        describe(obj)
    )))
}

/// An `ArgumentTypeError`: `what` of kernel `kernel` is not `expected`.
pub(crate) fn wrong_type(
    kernel: &str,
    what: &str,
    expected: &str,
    value: &Bound<'_, PyAny>,
) -> PyErr {
    errors::argument_type(format!(
        "kernel `{kernel}`: {what} must be {expected}, got {}",
        describe(value)
    ))
}

/// A bool argument (NumPy's included, as PyO3 takes them); `None` or
/// absent is `default`.
pub(crate) fn flag(
    value: Option<&Bound<'_, PyAny>>,
    kernel: &str,
    what: &str,
    default: bool,
) -> PyResult<bool> {
    match value.filter(|v| !v.is_none()) {
        None => Ok(default),
        Some(v) => v
            .extract::<bool>()
            .map_err(|_| wrong_type(kernel, what, "a bool", v)),
    }
}

/// A str argument.
pub(crate) fn text(value: &Bound<'_, PyAny>, kernel: &str, what: &str) -> PyResult<String> {
    value
        .extract::<String>()
        .map_err(|_| wrong_type(kernel, what, "a str", value))
}

/// Strs, from a list, a tuple or any other iterable but a str itself (a
/// kernel's input and output names).
pub(crate) fn texts(value: &Bound<'_, PyAny>, kernel: &str, what: &str) -> PyResult<Vec<String>> {
    let expected = "a list of str";
    if value.is_instance_of::<PyString>() {
        return Err(wrong_type(kernel, what, expected, value));
    }
    let items = value
        .try_iter()
        .map_err(|_| wrong_type(kernel, what, expected, value))?;
    items
        .enumerate()
        .map(|(i, item)| text(&item?, kernel, &format!("{what}[{i}]")))
        .collect()
}

/// A 3-tuple of extents (`grid`, `threadgroup`). Zero and the device's
/// limits are kernelkit's to check; negative numbers and numbers past 64
/// bits are refused here.
pub(crate) fn dims3(
    obj: &Bound<'_, PyAny>,
    kernel: &str,
    what: &'static str,
) -> PyResult<[u64; 3]> {
    let items = items(obj, kernel, &what)?;
    if items.len() != 3 {
        return Err(errors::call(format!(
            "kernel `{kernel}`: {what} must have 3 extents (x, y, z), got {}",
            items.len()
        )));
    }
    let mut dims = [0u64; 3];
    for (d, item) in dims.iter_mut().zip(&items) {
        if !item.is_instance_of::<PyInt>() || item.is_instance_of::<PyBool>() {
            return Err(errors::argument_type(format!(
                "kernel `{kernel}`: {what} extents must be ints, got {}",
                describe(item)
            )));
        }
        *d = item.extract::<u64>().map_err(|_| {
            errors::call(format!(
                "kernel `{kernel}`: {what} {}: every extent must be at least 1 and fit 64 bits",
                obj.repr().map(|r| r.to_string()).unwrap_or_default()
            ))
        })?;
    }
    Ok(dims)
}

/// The last extents a kernel was called with, and the tuple they came
/// from: `grid=(n, 1, 1)` written as a constant is the same tuple object
/// call after call, and a tuple cannot change, so a repeated call compares
/// a pointer and parses nothing; another object (a tuple built at each
/// call, a list) is compared by value with the extents ([`same_ints`]).
#[derive(Default)]
pub(crate) struct DimsMemo(Mutex<Option<(Py<PyAny>, [u64; 3])>>);

impl DimsMemo {
    /// [`dims3`] of `obj`, remembered when `obj` is a tuple.
    pub(crate) fn get(
        &self,
        obj: &Bound<'_, PyAny>,
        kernel: &str,
        what: &'static str,
    ) -> PyResult<[u64; 3]> {
        {
            let memo = self.0.lock().unwrap_or_else(|p| p.into_inner());
            if let Some((o, dims)) = &*memo {
                if o.as_ptr() == obj.as_ptr() {
                    return Ok(*dims);
                }
            }
        }
        // Another object (`(n, 1, 1)` built at each call, a list): its
        // values compared with the remembered ones, which it usually has.
        let kept = self
            .0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .map(|(_, d)| *d);
        if let Some(dims) = kept.filter(|d| same_ints(obj, d)) {
            return Ok(dims);
        }
        route::note(Route::Parsed);
        let dims = dims3(obj, kernel, what)?;
        // A tuple cannot change: remembered by identity (the strong
        // reference keeps it, so its address cannot be another object's
        // meanwhile). A list may change in place: only its values are.
        let kept = if obj.get_type().is(obj.py().get_type::<PyTuple>()) {
            obj.clone().unbind()
        } else {
            obj.py().None()
        };
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some((kept, dims));
        Ok(dims)
    }
}

/// Whether `obj` is a list or a tuple of exactly these ints (`bool`s are
/// not ints here, as in [`dims3`]): the value comparison of a memo, which
/// reads each item once and raises nothing.
pub(crate) fn same_ints<T: Copy + TryFrom<i64> + PartialEq>(
    obj: &Bound<'_, PyAny>,
    kept: &[T],
) -> bool {
    let same = |item: Bound<'_, PyAny>, k: &T| {
        item.is_exact_instance_of::<PyInt>()
            && item
                .extract::<i64>()
                .ok()
                .and_then(|v| T::try_from(v).ok())
                .is_some_and(|v| v == *k)
    };
    if let Ok(t) = obj.cast::<PyTuple>() {
        return t.len() == kept.len() && t.iter().zip(kept).all(|(i, k)| same(i, k));
    }
    if let Ok(l) = obj.cast::<PyList>() {
        return l.len() == kept.len() && l.iter().zip(kept).all(|(i, k)| same(i, k));
    }
    false
}

/// "the shape of output `y`", formatted only for an error.
struct ShapeOf<'a>(&'a dyn Display);

impl Display for ShapeOf<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the shape of {}", self.0)
    }
}

/// One output shape: a sequence of ints. `output` names it (``output `y` ``).
pub(crate) fn shape(
    obj: &Bound<'_, PyAny>,
    kernel: &str,
    output: &dyn Display,
) -> PyResult<SmallVec<[i64; 4]>> {
    let what = ShapeOf(output);
    let mut shape = SmallVec::new();
    for item in items(obj, kernel, &what)? {
        if !item.is_instance_of::<PyInt>() || item.is_instance_of::<PyBool>() {
            return Err(errors::argument_type(format!(
                "kernel `{kernel}`: {what} must hold ints, got {}",
                describe(&item)
            )));
        }
        shape.push(item.extract::<i64>().map_err(|_| {
            errors::call(format!(
                "kernel `{kernel}`: {what} has extent {}, which does not fit 64 bits",
                item.str().map(|s| s.to_string()).unwrap_or_default()
            ))
        })?);
    }
    Ok(shape)
}

/// One output dtype. `output` names it (``output `y` ``).
pub(crate) fn dtype(obj: &Bound<'_, PyAny>, kernel: &str, output: &dyn Display) -> PyResult<DType> {
    dtype_of(obj)?.ok_or_else(|| {
        errors::argument_type(format!(
            "kernel `{kernel}`: the dtype of {output} is {}, which names no dtype \
             kernelkit has (a NumPy or PyTorch dtype, or a name such as \"float32\")",
            describe(obj)
        ))
    })
}

/// One parsed template argument, with the objects it came from.
struct Remembered {
    name_obj: Py<PyAny>,
    value_obj: Py<PyAny>,
    name: Arc<str>,
    value: TemplateArg,
}

/// The last template list a callable parsed.
#[derive(Default)]
pub(crate) struct TemplateMemo(Mutex<Parsed>);

#[derive(Default)]
struct Parsed {
    args: Vec<Remembered>,
    /// The bytes [`TemplateMemo::parse_encoded`]'s encoder made of `args`
    /// (`None`: not asked for since they were parsed).
    encoded: Option<Vec<u8>>,
}

impl Parsed {
    /// Whether `pairs` are the remembered arguments: the same objects (a
    /// literal list of interned names and small ints), else the same
    /// values (a computed int, a dict built anew), compared without
    /// parsing.
    #[inline]
    fn holds(&self, pairs: &[Pair<'_>]) -> bool {
        self.args.len() == pairs.len()
            && self.args.iter().zip(pairs).all(|(m, (n, v))| {
                (n.is(&m.name_obj) || same_text(n, &m.name))
                    && (v.is(&m.value_obj) || same_value(v, m.value))
            })
    }

    /// The bytes `encode` writes of the remembered arguments, written once
    /// per parse.
    #[inline]
    fn encoded_with(&mut self, encode: Encoder) -> &[u8] {
        if self.encoded.is_none() {
            self.encoded = Some(self.encode_now(encode));
        }
        self.encoded.as_deref().unwrap_or_default()
    }

    #[cold]
    fn encode_now(&self, encode: Encoder) -> Vec<u8> {
        let out: Template = self
            .args
            .iter()
            .map(|m| (m.name.clone(), m.value))
            .collect();
        let mut v = Vec::new();
        encode(&out, &mut v);
        v
    }
}

/// Writes a parsed template's bytes (a tuned call's signature).
pub(crate) type Encoder = fn(&Template, &mut Vec<u8>);

impl TemplateMemo {
    /// `template` (a list of `(name, value)` pairs, or a dict) as kernelkit
    /// template arguments. Names are checked by kernelkit, once per variant.
    #[inline]
    pub(crate) fn parse(
        &self,
        template: Option<&Bound<'_, PyAny>>,
        kernel: &str,
    ) -> PyResult<Template> {
        self.parse_with(template, kernel, None, |_| {})
    }

    /// [`TemplateMemo::parse`], and the bytes `encode` writes of the result
    /// given to `bytes` (none for no template): kept with the parse, so a
    /// call whose template is the last one's does not write them again.
    #[inline]
    pub(crate) fn parse_encoded(
        &self,
        template: Option<&Bound<'_, PyAny>>,
        kernel: &str,
        encode: Encoder,
        bytes: impl FnOnce(&[u8]),
    ) -> PyResult<Template> {
        self.parse_with(template, kernel, Some(encode), bytes)
    }

    /// The bytes of [`TemplateMemo::parse_encoded`] alone, given to
    /// `bytes`: a call whose template is the last one's copies them and
    /// builds no list of values (a tuned call that finds its launch kept).
    #[inline]
    pub(crate) fn encoded(
        &self,
        template: Option<&Bound<'_, PyAny>>,
        kernel: &str,
        encode: Encoder,
        bytes: impl FnOnce(&[u8]),
    ) -> PyResult<()> {
        let Some(template) = template.filter(|t| !t.is_none()) else {
            bytes(&[]);
            return Ok(());
        };
        let pairs = pairs(template, kernel)?;
        {
            let mut memo = self.0.lock().unwrap_or_else(|p| p.into_inner());
            if memo.holds(&pairs) {
                bytes(memo.encoded_with(encode));
                return Ok(());
            }
        }
        let (_, encoded) = self.parse_anew(&pairs, kernel, Some(encode))?;
        bytes(encoded.as_deref().unwrap_or_default());
        Ok(())
    }

    #[inline(always)]
    fn parse_with(
        &self,
        template: Option<&Bound<'_, PyAny>>,
        kernel: &str,
        encode: Option<Encoder>,
        bytes: impl FnOnce(&[u8]),
    ) -> PyResult<Template> {
        let Some(template) = template.filter(|t| !t.is_none()) else {
            bytes(&[]);
            return Ok(Template::new());
        };
        let pairs = pairs(template, kernel)?;
        {
            let mut memo = self.0.lock().unwrap_or_else(|p| p.into_inner());
            if memo.holds(&pairs) {
                // One push each (a few values): no generic extend.
                let mut out = Template::new();
                for m in &memo.args {
                    out.push((m.name.clone(), m.value));
                }
                if let Some(encode) = encode {
                    bytes(memo.encoded_with(encode));
                }
                return Ok(out);
            }
        }
        let (out, encoded) = self.parse_anew(&pairs, kernel, encode)?;
        if let Some(v) = &encoded {
            bytes(v);
        }
        Ok(out)
    }

    /// A template not the last one parsed: parsed, remembered (with its
    /// bytes when an encoder is given) and returned with those bytes. Out
    /// of the warm path's code (a call's hot instructions stay few lines).
    #[cold]
    #[inline(never)]
    fn parse_anew(
        &self,
        pairs: &[Pair<'_>],
        kernel: &str,
        encode: Option<Encoder>,
    ) -> PyResult<(Template, Option<Vec<u8>>)> {
        route::note(Route::Parsed);
        let mut parsed = Vec::with_capacity(pairs.len());
        for (name_obj, value_obj) in pairs {
            let Ok(name) = name_obj.cast::<PyString>() else {
                return Err(errors::argument_type(format!(
                    "kernel `{kernel}`: a template argument's name must be a str, got {}",
                    describe(name_obj)
                )));
            };
            let name: Arc<str> = Arc::from(&*name.to_cow()?);
            let value = template_value(value_obj, kernel, &name)?;
            parsed.push(Remembered {
                name_obj: name_obj.clone().unbind(),
                value_obj: value_obj.clone().unbind(),
                name,
                value,
            });
        }
        let out: Template = parsed.iter().map(|m| (m.name.clone(), m.value)).collect();
        let encoded = encode.map(|encode| {
            let mut v = Vec::new();
            encode(&out, &mut v);
            v
        });
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Parsed {
            args: parsed,
            encoded: encoded.clone(),
        };
        Ok((out, encoded))
    }
}

/// Whether `obj` is a str of this text. (Not inlined: a warm call finds
/// its objects by identity first.)
#[inline(never)]
fn same_text(obj: &Bound<'_, PyAny>, text: &str) -> bool {
    obj.cast::<PyString>()
        .is_ok_and(|s| s.to_cow().is_ok_and(|t| *t == *text))
}

/// Whether `obj` is this template value (a bool, an int or a dtype
/// object seen before), read without raising. (Not inlined, as
/// `same_text`.)
#[inline(never)]
fn same_value(obj: &Bound<'_, PyAny>, value: TemplateArg) -> bool {
    match value {
        TemplateArg::Bool(b) => obj.cast::<PyBool>().is_ok_and(|o| o.is_true() == b),
        TemplateArg::Int(i) => {
            obj.is_exact_instance_of::<PyInt>() && obj.extract::<i32>().is_ok_and(|v| v == i)
        }
        TemplateArg::DType(d) => {
            !obj.is_instance_of::<PyInt>() && dtype_of(obj).ok().flatten() == Some(d)
        }
    }
}

/// A template argument's name and value objects.
pub(crate) type Pair<'py> = (Bound<'py, PyAny>, Bound<'py, PyAny>);

/// The `(name, value)` pairs of a template list or dict.
pub(crate) fn pairs<'py>(
    template: &Bound<'py, PyAny>,
    kernel: &str,
) -> PyResult<SmallVec<[Pair<'py>; 4]>> {
    if let Ok(dict) = template.cast::<PyDict>() {
        return Ok(dict.iter().collect());
    }
    let mut out = SmallVec::new();
    for item in items(template, kernel, &"template")? {
        let pair = items(&item, kernel, &"each template argument")
            .ok()
            .filter(|p| p.len() == 2)
            .ok_or_else(|| {
                errors::argument_type(format!(
                    "kernel `{kernel}`: each template argument must be a (name, value) pair, got {}",
                    describe(&item)
                ))
            })?;
        out.push((pair[0].clone(), pair[1].clone()));
    }
    Ok(out)
}

/// A template value: `bool` (checked first: it is a subclass of `int`),
/// `int` (32 bits, as in MLX), or a dtype.
fn template_value(value: &Bound<'_, PyAny>, kernel: &str, name: &str) -> PyResult<TemplateArg> {
    if let Ok(b) = value.cast::<PyBool>() {
        return Ok(TemplateArg::Bool(b.is_true()));
    }
    if value.is_instance_of::<PyInt>() {
        return value.extract::<i32>().map(TemplateArg::Int).map_err(|_| {
            errors::call(format!(
                "kernel `{kernel}`: template argument `{}` is {}, which does not fit a 32-bit int",
                name.escape_debug(),
                value.str().map(|s| s.to_string()).unwrap_or_default()
            ))
        });
    }
    if let Some(d) = dtype_of(value)? {
        return Ok(TemplateArg::DType(d));
    }
    Err(errors::argument_type(format!(
        "kernel `{kernel}`: template argument `{}` is {}; expected an int, a bool or a dtype",
        name.escape_debug(),
        describe(value)
    )))
}

/// The last `output_shapes`/`output_dtypes` a callable parsed, by the
/// identity of their items: each shape a tuple (immutable; a tuple subclass
/// such as `torch.Size` too, read as a tuple), each dtype an object whose
/// meaning cannot change (dtype objects, names). The strong references keep
/// the objects, so their addresses cannot be reused while remembered.
#[derive(Default)]
pub(crate) struct OutputsMemo(Mutex<Option<RememberedOutputs>>);

struct RememberedOutputs {
    shapes: SmallVec<[Py<PyAny>; 2]>,
    dtypes: SmallVec<[Py<PyAny>; 2]>,
    specs: SmallVec<[OutputSpec; 2]>,
}

impl OutputsMemo {
    /// The specs parsed for these very items before, if any.
    pub(crate) fn find(
        &self,
        shapes: &[Bound<'_, PyAny>],
        dtypes: &[Bound<'_, PyAny>],
    ) -> Option<SmallVec<[OutputSpec; 2]>> {
        let memo = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let m = memo.as_ref()?;
        if m.specs.len() != shapes.len() || m.specs.len() != dtypes.len() {
            return None;
        }
        // Each item the remembered object, else of the same value: a
        // shape of the same ints (`x.shape` is a new `torch.Size` at every
        // read), a dtype that names the same one (a name, another spelling
        // of it).
        let same = m.specs.iter().enumerate().all(|(i, (shape, dtype))| {
            let (s, d) = (&shapes[i], &dtypes[i]);
            ((s.is(&m.shapes[i]) && s.is_instance_of::<PyTuple>()) || same_ints(s, shape))
                && (d.is(&m.dtypes[i]) || dtype_of(d).ok().flatten() == Some(*dtype))
        });
        same.then(|| m.specs.clone())
    }

    /// Remembers `specs` as parsed from these items. (A list kept here
    /// may change in place: that is why each item is compared by value
    /// when it is not the remembered object, and why the remembered
    /// object counts only when its value is unchanged.)
    pub(crate) fn keep(
        &self,
        shapes: &[Bound<'_, PyAny>],
        dtypes: &[Bound<'_, PyAny>],
        specs: &SmallVec<[OutputSpec; 2]>,
    ) {
        let kept = RememberedOutputs {
            shapes: shapes.iter().map(|s| s.clone().unbind()).collect(),
            dtypes: dtypes.iter().map(|d| d.clone().unbind()).collect(),
            specs: specs.clone(),
        };
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(kept);
    }
}
