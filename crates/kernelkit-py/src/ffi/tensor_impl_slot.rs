//! A `torch.Tensor`'s `TensorImpl` address, read from the Python object's
//! own memory instead of through its `_cdata` attribute.
//!
//! The shim (`crate::ffi::torch_shim`) reads a tensor through torch's C
//! functions, which take the tensor's `TensorImpl` address. The attribute
//! that gives it, `_cdata`, is a Python attribute read: a lookup through
//! `torch.Tensor`'s type, torch's check for `__torch_function__` overrides,
//! and a new Python `int`: among the largest parts of a warm `out=` call
//! past the launch, which reading the word instead removes (BENCHMARKS.md
//! has the figures).
//!
//! A tensor's Python object (torch's `THPVariable`) holds its `at::Tensor`
//! (one `TensorImpl` pointer) right after the object header: directly in
//! current torch (an instance size of 40 bytes in torch 2.11), after a
//! flag in older ones (a `c10::MaybeOwned<at::Tensor>`, whose borrowed form
//! is that same pointer). torch's own C++ projects read it the same way
//! (functorch's and minpybind's copies of the struct). This module takes
//! no layout on trust: [`Slot::locate`] finds the one word-aligned offset
//! in the object where several probe tensors all hold their own `_cdata`,
//! and there is no slot (every read takes the attribute) when no single
//! offset does.
//!
//! Only objects whose type is `torch.Tensor` itself or `torch.nn.Parameter`
//! (which torch's C++ code unpacks alike) are read this way: another
//! subclass may override attribute reads (`__torch_function__`), and its
//! `_cdata` is read as an attribute, as before.

use pyo3::ffi;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::PyType;
use smallvec::SmallVec;

/// Where `torch.Tensor` (and `torch.nn.Parameter`) objects keep their
/// `TensorImpl` address.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Slot {
    /// The types read this way (kept alive by torch's modules for the life
    /// of the process), compared by address; 0 where there is none (no
    /// object's type is at 0).
    types: [usize; 2],
    /// Byte offset of the address in the object.
    offset: usize,
}

impl Slot {
    /// The offset at which each of `probes` holds its `_cdata`, if exactly
    /// one word-aligned offset inside the smallest instance size of
    /// `types` (one or two) does so for all of them. Each probe's type must
    /// be one of `types`, each type must have a probe, and the probes must
    /// have distinct `TensorImpl`s (two at least).
    pub(crate) fn locate(
        types: &[&Bound<'_, PyType>],
        probes: &[Bound<'_, PyAny>],
    ) -> Option<Slot> {
        if types.is_empty() || types.len() > 2 || probes.len() < 2 {
            return None;
        }
        let py = probes[0].py();
        let mut size = usize::MAX;
        for ty in types {
            let basic: usize = ty
                .getattr(intern!(py, "__basicsize__"))
                .ok()?
                .extract()
                .ok()?;
            size = size.min(basic);
            if !probes.iter().any(|p| p.get_type().is(*ty)) {
                return None;
            }
        }
        let head = std::mem::size_of::<ffi::PyObject>();
        let word = std::mem::size_of::<u64>();
        let mut wanted: SmallVec<[(&Bound<'_, PyAny>, u64); 4]> = SmallVec::new();
        for p in probes {
            if !types.iter().any(|ty| p.get_type().is(*ty)) {
                return None;
            }
            let cdata: u64 = p.getattr(intern!(py, "_cdata")).ok()?.extract().ok()?;
            if cdata == 0 || wanted.iter().any(|(_, c)| *c == cdata) {
                return None;
            }
            wanted.push((p, cdata));
        }
        let mut found = (head..size.saturating_sub(word - 1))
            .step_by(word)
            .filter(|&offset| {
                wanted.iter().all(|(p, cdata)| {
                    // SAFETY: `p` is alive (borrowed for this call) and its
                    // type is one of `types`, so its allocation holds at
                    // least `size` bytes; `offset + 8` is within them, and
                    // a word-aligned offset in a Python object (allocated
                    // 8-byte aligned or better) is aligned.
                    let at = unsafe { word_at(p, offset) };
                    at == *cdata
                })
            });
        let offset = found.next()?;
        if found.next().is_some() {
            return None;
        }
        let mut read = [0; 2];
        for (r, ty) in read.iter_mut().zip(types) {
            *r = ty.as_ptr() as usize;
        }
        Some(Slot {
            types: read,
            offset,
        })
    }

    /// `t`'s `TensorImpl` address when `t`'s type is one of the slot's;
    /// `None` for any other object (read its `_cdata` instead).
    #[inline]
    pub(crate) fn read(&self, t: &Bound<'_, PyAny>) -> Option<u64> {
        // SAFETY: reading an object's type pointer (its header) is what
        // `Py_TYPE` does; `t` is alive.
        let ty = unsafe { ffi::Py_TYPE(t.as_ptr()) } as usize;
        if !self.types.contains(&ty) {
            return None;
        }
        // SAFETY: `t`'s type is one of the slot's (just compared), so its
        // memory holds at least the smallest of their instance sizes, which
        // `locate` found the slot inside of; the GIL is held, so the tensor
        // cannot be rebound to another `TensorImpl` while this reads.
        Some(unsafe { word_at(t, self.offset) })
    }
}

/// The aligned 8-byte word at `offset` bytes into `obj`'s memory.
///
/// # Safety
/// `offset + 8` must lie within `obj`'s allocation, and `offset` must be a
/// multiple of 8.
#[inline]
unsafe fn word_at(obj: &Bound<'_, PyAny>, offset: usize) -> u64 {
    // SAFETY: the caller's contract.
    unsafe { obj.as_ptr().cast::<u8>().add(offset).cast::<u64>().read() }
}

/// What [`Slot::read`] gives for each of `objects` once [`Slot::locate`]
/// searched `types` with `probes`; `None` when it found no slot. For tests,
/// which check the search without torch, on objects that hold a known word
/// (ctypes integers whose `_cdata` is their value); `crate::testing`.
#[pyfunction]
#[pyo3(name = "cdata_slot_check")]
pub(crate) fn _cdata_slot_check(
    types: Vec<Bound<'_, PyType>>,
    probes: Vec<Bound<'_, PyAny>>,
    objects: Vec<Bound<'_, PyAny>>,
) -> Option<Vec<Option<u64>>> {
    let types: SmallVec<[&Bound<'_, PyType>; 2]> = types.iter().collect();
    let slot = Slot::locate(&types, &probes)?;
    Some(objects.iter().map(|o| slot.read(o)).collect())
}
