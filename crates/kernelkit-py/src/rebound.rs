//! Calls on torch tensors whose layouts repeat: launched through a kernelkit
//! [`Rebindable`], prepared by the first call of each layout.
//!
//! A warm call on torch tensors is otherwise mostly wrapping: every tensor
//! becomes a borrowed kernelkit array, the call is checked, its variant and
//! function are found, and the wrappers are dropped, though only the
//! tensors' addresses differ from the last call (a training loop calls with
//! new tensors of the same shapes every step). Each callable keeps the
//! rebindable launches of its last few layouts ([`KEPT`]); a call whose
//! layout is one of them reads its tensors (as every call must: a tensor's
//! storage can change in place) and launches with their addresses.
//!
//! The layout is everything the launch was prepared for: the GPU, torch's
//! current stream there, the grid, the threadgroup, the template values,
//! and each input's and output's dtype, shape and strides. Everything else
//! a call can say (`stream=`, `device=`, `init_value=`, `verbose=`, arrays
//! other than `torch.Tensor`s or `nn.Parameter`s on one GPU) takes the
//! general path.

use std::sync::{Arc, Mutex};

use kernelkit::{DType, Rebindable};
use smallvec::SmallVec;

use crate::args::Template;
use crate::donation::Aliasing;
use crate::ffi::torch_shim::Raw;
use crate::torch::Tensor;

/// Layouts kept per callable.
const KEPT: usize = 4;

/// One argument's layout.
#[derive(Clone, PartialEq)]
pub(crate) struct Layout {
    dtype: DType,
    shape: SmallVec<[usize; 4]>,
    strides: SmallVec<[isize; 4]>,
}

impl Layout {
    fn of(t: &Tensor) -> Layout {
        Layout {
            dtype: t.dtype,
            shape: t.shape.clone(),
            strides: t.strides.clone(),
        }
    }

    fn fits(&self, t: &impl Read) -> bool {
        t.fits(self)
    }

    /// Whether this is an output of `shape` and `dtype` (`output_shapes`
    /// and `output_dtypes` given beside `out=`).
    pub(crate) fn is(&self, shape: &[i64], dtype: DType) -> bool {
        self.dtype == dtype
            && self.shape.len() == shape.len()
            && self.shape.iter().zip(shape).all(|(&a, &b)| a as i64 == b)
    }
}

/// A tensor's layout as a call read it: copied ([`Tensor`]), or as torch
/// gives it ([`Raw`], the warm path's: nothing copied).
pub(crate) trait Read {
    fn fits(&self, kept: &Layout) -> bool;
}

impl Read for &Tensor {
    fn fits(&self, kept: &Layout) -> bool {
        kept.dtype == self.dtype && kept.shape == self.shape && kept.strides == self.strides
    }
}

impl Read for Raw<'_> {
    #[inline]
    fn fits(&self, kept: &Layout) -> bool {
        // Extents and strides fit in `isize` (the kept ones were read from
        // a tensor), so none of these casts changes a value it matters for.
        kept.dtype == self.dtype
            && kept.shape.len() == self.shape.len()
            && kept.strides.len() == self.strides.len()
            && kept
                .shape
                .iter()
                .zip(self.shape)
                .all(|(&k, &s)| k as i64 == s)
            && kept
                .strides
                .iter()
                .zip(self.strides)
                .all(|(&k, &s)| k as i64 == s)
    }
}

/// What a torch call is, but for its tensors' addresses.
pub(crate) struct Key<'a, T: Read> {
    pub ordinal: u32,
    /// torch's current stream on the GPU.
    pub stream: u64,
    pub grid: [u64; 3],
    pub threadgroup: [u64; 3],
    pub template: &'a Template,
    pub inputs: &'a [T],
    pub outputs: &'a [T],
    /// Donated outputs and `allow_overlap=`: a launch prepared to let
    /// outputs share inputs' memory runs only for calls that asked.
    pub aliasing: &'a Aliasing,
}

/// What a launch was prepared for: a call's layout, as [`Key`] but kept.
#[derive(Clone, PartialEq)]
struct Prepared {
    ordinal: u32,
    stream: u64,
    grid: [u64; 3],
    threadgroup: [u64; 3],
    template: Template,
    inputs: SmallVec<[Layout; 4]>,
    outputs: SmallVec<[Layout; 2]>,
    aliasing: Aliasing,
}

impl Entry {
    /// The layouts of the outputs the launch was prepared for.
    pub(crate) fn outputs(&self) -> &[Layout] {
        &self.prepared.outputs
    }
}

/// A prepared launch and the layout it was prepared for.
pub(crate) struct Entry {
    prepared: Prepared,
    /// Shared with the entries that name the same launch under another
    /// key ([`Entry::relabeled`]).
    pub(crate) launch: Arc<Rebindable>,
}

impl Entry {
    pub(crate) fn new(key: &Key<'_, &Tensor>, launch: Rebindable) -> Entry {
        Entry {
            launch: Arc::new(launch),
            prepared: Prepared {
                ordinal: key.ordinal,
                stream: key.stream,
                grid: key.grid,
                threadgroup: key.threadgroup,
                template: key.template.clone(),
                inputs: key.inputs.iter().map(|t| Layout::of(t)).collect(),
                outputs: key.outputs.iter().map(|t| Layout::of(t)).collect(),
                aliasing: key.aliasing.clone(),
            },
        }
    }

    /// The same launch, for calls of the same tensors' layouts, GPU and
    /// stream that say `grid`, `threadgroup` and `template`: a tuned
    /// kernel keeps the launch of its chosen configuration under the
    /// call's own arguments (`crate::tune`).
    pub(crate) fn relabeled(
        &self,
        grid: [u64; 3],
        threadgroup: [u64; 3],
        template: &Template,
    ) -> Entry {
        Entry {
            prepared: Prepared {
                grid,
                threadgroup,
                template: template.clone(),
                ..self.prepared.clone()
            },
            launch: Arc::clone(&self.launch),
        }
    }

    fn fits<T: Read>(&self, key: &Key<'_, T>) -> bool {
        let p = &self.prepared;
        p.ordinal == key.ordinal
            && p.stream == key.stream
            && p.grid == key.grid
            && p.threadgroup == key.threadgroup
            && p.inputs.len() == key.inputs.len()
            && p.outputs.len() == key.outputs.len()
            && p.inputs.iter().zip(key.inputs).all(|(l, t)| l.fits(t))
            && p.outputs.iter().zip(key.outputs).all(|(l, t)| l.fits(t))
            && p.template == *key.template
            && p.aliasing == *key.aliasing
    }
}

/// A callable's kept launches, newest last.
#[derive(Default)]
pub(crate) struct Rebound(Mutex<SmallVec<[Arc<Entry>; KEPT]>>);

impl Rebound {
    /// The launch prepared for `key`'s layout, if one is kept.
    pub(crate) fn find<T: Read>(&self, key: &Key<'_, T>) -> Option<Arc<Entry>> {
        let kept = self.0.lock().unwrap_or_else(|p| p.into_inner());
        kept.iter().rev().find(|e| e.fits(key)).cloned()
    }

    /// Keeps `entry`, dropping the oldest beyond [`KEPT`]; not when a
    /// launch for its layout is kept already (threads that made the same
    /// new layout's first call at once each prepared one). Returns the
    /// entry kept for the layout.
    pub(crate) fn keep(&self, entry: Entry) -> Arc<Entry> {
        let mut kept = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(e) = kept.iter().find(|e| e.prepared == entry.prepared) {
            return Arc::clone(e);
        }
        if kept.len() >= KEPT {
            kept.remove(0);
        }
        let entry = Arc::new(entry);
        kept.push(Arc::clone(&entry));
        entry
    }

    /// How many launches are kept (for tests).
    pub(crate) fn len(&self) -> usize {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}
