//! The tuned call's warm path: which configuration a call of a tuned
//! kernel runs, found from what the kernel's call reads of its arguments
//! anyway, without timing and without a Python object built.
//!
//! A call's *signature* is the bytes of what its tuning key depends on:
//! each input's kind, place, dtype and shape (or the user's key), each
//! output's shape and dtype (`output_shapes`/`output_dtypes` through a
//! memo of the objects, as the kernel's own; or the `out=` arrays'), the
//! call's own template values (through a template memo of its own, so that
//! the kernel's memo keeps the combined list the tuned call passes it), the
//! call's grid when a configuration takes it, and the device (`device=`'s
//! place, or `stream=`'s object by identity, held so that its address is
//! no other object's while remembered). Signatures are compared byte for
//! byte: no hash, no collision. A call whose signature cannot be read
//! (an array known only through `__dlpack__` without `shape` and `dtype`
//! attributes) has none and asks the library every time (`Tuning::best`,
//! which keeps its own memo).

use std::sync::{Arc, Mutex};

use numpy::prelude::PyArrayDescrMethods;
use numpy::PyUntypedArrayMethods;
use pyo3::prelude::*;
use smallvec::SmallVec;

use crate::args::{OutputSpec, Template, TemplateMemo};
use crate::array_args::Source;
use crate::device::Place;
use crate::kernel::Launch;
use kernelkit::TemplateArg;

/// The bytes of a call's signature (kernelkit's writer: on the stack for
/// most calls, each write one bounds check and a copy).
pub(crate) use kernelkit::kernel::tune::SignatureBytes as Sig;

/// Signatures remembered at most per tuned kernel (a program's distinct
/// shapes of one kernel; one not remembered is chosen again through the
/// library's memo, which times nothing).
const KEPT: usize = 16;

/// A remembered choice.
pub(super) struct Entry {
    pub(super) sig: Sig,
    /// The objects whose addresses the signature holds (`stream=`),
    /// kept alive so that no other object takes their address.
    pub(super) _held: SmallVec<[Py<PyAny>; 1]>,
    /// The configuration's index.
    pub(super) index: usize,
    /// The template the kernel is called with: the call's own values, then
    /// the configuration's, one list kept for the kernel's template memo
    /// to find by identity (`None`: neither gives any).
    pub(super) template: Option<Py<PyAny>>,
    /// The launch a call of this signature makes, when the signature
    /// decides all of it (no grid function's grid): a warm call shares it
    /// and builds nothing.
    pub(super) launch: Option<Arc<Launch>>,
}

/// What the memo holds for a signature: the whole launch, else the
/// configuration's index (its grid the grid function's, called again).
pub(super) enum Found {
    Launch(Arc<Launch>),
    Index(usize),
}

/// The choices of one tuned kernel, newest last.
#[derive(Default)]
pub(super) struct Memo(Mutex<Vec<Entry>>);

impl Memo {
    /// The configuration and template of a call of signature `sig`.
    #[inline]
    pub(super) fn find(&self, py: Python<'_>, sig: &[u8]) -> Option<(usize, Option<Py<PyAny>>)> {
        let memo = self.0.lock().unwrap_or_else(|p| p.into_inner());
        memo.iter()
            .rev()
            .find(|e| *e.sig == *sig)
            .map(|e| (e.index, e.template.as_ref().map(|t| t.clone_ref(py))))
    }

    /// The launch, else the configuration, of a call of signature `sig`
    /// (the general path's and the torch routes' warm call).
    #[inline]
    pub(super) fn found(&self, sig: &[u8]) -> Option<Found> {
        let memo = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let e = memo.iter().rev().find(|e| *e.sig == *sig)?;
        Some(match &e.launch {
            Some(launch) => Found::Launch(launch.clone()),
            None => Found::Index(e.index),
        })
    }

    /// Remembers `entry` (the oldest goes when full).
    pub(super) fn keep(&self, entry: Entry) {
        let mut memo = self.0.lock().unwrap_or_else(|p| p.into_inner());
        memo.retain(|e| e.sig != entry.sig);
        if memo.len() == KEPT {
            memo.remove(0);
        }
        memo.push(entry);
    }
}

/// Writes a dtype's and a shape's bytes.
#[inline]
pub(super) fn push_shape(sig: &mut Sig, dtype: u8, shape: impl ExactSizeIterator<Item = u64>) {
    sig.extend_from_slice(&[dtype, shape.len() as u8]);
    for d in shape {
        sig.extend_from_slice(&d.to_le_bytes());
    }
}

#[inline]
pub(super) fn push_place(sig: &mut Sig, place: Place) {
    match place {
        Place::Cpu => sig.push(0),
        Place::Cuda(n) => {
            sig.push(1);
            sig.extend_from_slice(&n.to_le_bytes());
        }
    }
}

/// Writes what of an array argument makes another tuning key (its kind,
/// place, dtype and shape); `false` when it cannot be read cheaply.
pub(super) fn push_source(sig: &mut Sig, source: &Source<'_>) -> bool {
    match source {
        Source::Scalar(dtype, _) => {
            sig.push(b's');
            push_shape(sig, *dtype as u8, std::iter::empty());
        }
        Source::NumPy(a) => {
            sig.push(b'n');
            let descr = a.dtype();
            // The type number tells NumPy's dtypes (and registered ones,
            // as bfloat16's) apart; the byte order and size complete it.
            sig.extend_from_slice(&descr.num().to_le_bytes());
            sig.push(descr.byteorder());
            push_shape(
                sig,
                descr.itemsize() as u8,
                a.shape().iter().map(|&d| d as u64),
            );
        }
        Source::Torch(_, t) => {
            sig.push(b't');
            push_place(sig, t.place);
            push_shape(sig, t.dtype as u8, t.shape.iter().map(|&d| d as u64));
        }
        Source::Cai(_, i, _) => {
            sig.push(b'c');
            sig.extend_from_slice(&i.ordinal.map_or(u32::MAX, |o| o).to_le_bytes());
            push_shape(sig, i.dtype as u8, i.shape.iter().map(|&d| d as u64));
        }
        Source::Dlpack(obj, place) => {
            // Known only through `__dlpack__`: its `shape` and `dtype`
            // attributes, when it has them (no export for a signature).
            let (Ok(shape), Ok(dtype)) = (obj.getattr("shape"), obj.getattr("dtype")) else {
                return false;
            };
            let (Ok(shape), Ok(dtype)) = (shape.extract::<Vec<u64>>(), dtype.str()) else {
                return false;
            };
            sig.push(b'd');
            push_place(sig, *place);
            let Ok(dtype) = dtype.to_cow() else {
                return false;
            };
            sig.extend_from_slice(&(dtype.len() as u32).to_le_bytes());
            sig.extend_from_slice(dtype.as_bytes());
            push_shape(sig, 0, shape.into_iter());
        }
    }
    true
}

/// Writes output specs (shapes and dtypes).
#[inline]
pub(super) fn push_outputs(sig: &mut Sig, specs: &[OutputSpec]) {
    sig.push(b'o');
    for (shape, dtype) in specs {
        push_shape(sig, *dtype as u8, shape.iter().map(|&d| d as u64));
    }
}

/// Writes the call's own template values (`template`, through the tuned
/// kernel's memo) without building their list: a warm call whose launch
/// is kept needs only their bytes.
#[inline]
pub(super) fn push_template_bytes(
    sig: &mut Sig,
    memo: &TemplateMemo,
    template: Option<&Bound<'_, PyAny>>,
    kernel: &str,
) -> PyResult<()> {
    sig.push(b'T');
    memo.encoded(template, kernel, template_bytes, |bytes| {
        sig.extend_from_slice(bytes)
    })
}

/// Parses the call's own template values (`template`, through the tuned
/// kernel's memo) and writes them.
#[inline]
pub(super) fn push_template(
    sig: &mut Sig,
    memo: &TemplateMemo,
    template: Option<&Bound<'_, PyAny>>,
    kernel: &str,
) -> PyResult<Template> {
    sig.push(b'T');
    memo.parse_encoded(template, kernel, template_bytes, |bytes| {
        sig.extend_from_slice(bytes)
    })
}

/// The bytes of the call's own template values in a signature (after its
/// tag `T`): what the tuned kernel's template memo keeps with its last
/// parse (`TemplateMemo::parse_encoded`), so a warm call copies them.
fn template_bytes(template: &Template, sig: &mut Vec<u8>) {
    for (name, value) in template {
        sig.extend_from_slice(&(name.len() as u32).to_le_bytes());
        sig.extend_from_slice(name.as_bytes());
        match value {
            TemplateArg::Int(v) => {
                sig.push(0);
                sig.extend_from_slice(&v.to_le_bytes());
            }
            TemplateArg::Bool(v) => sig.extend_from_slice(&[1, *v as u8]),
            TemplateArg::DType(d) => sig.extend_from_slice(&[2, *d as u8]),
        }
    }
}

/// Writes extents (the call's grid).
#[inline]
pub(super) fn push_dims(sig: &mut Sig, dims: Option<[u64; 3]>) {
    match dims {
        None => sig.push(b'-'),
        Some(d) => {
            let mut bytes = [b'g'; 25];
            for (i, v) in d.iter().enumerate() {
                bytes[1 + 8 * i..9 + 8 * i].copy_from_slice(&v.to_le_bytes());
            }
            sig.extend_from_slice(&bytes);
        }
    }
}

/// Writes the device a call names: `device=`'s place, else `stream=`'s
/// object (by address: the caller holds it in the entry), else nothing
/// (the arrays' places, written with them, decide).
pub(super) fn push_device(sig: &mut Sig, device: Option<Place>, stream: Option<&Bound<'_, PyAny>>) {
    if let Some(s) = stream {
        sig.push(b'S');
        sig.extend_from_slice(&(s.as_ptr() as usize).to_le_bytes());
    }
    if let Some(p) = device {
        sig.push(b'D');
        push_place(sig, p);
    }
}

/// Writes the user's key.
pub(super) fn push_key(sig: &mut Sig, key: &str) {
    sig.push(b'k');
    sig.extend_from_slice(&(key.len() as u64).to_le_bytes());
    sig.extend_from_slice(key.as_bytes());
}
