//! Kept launches (`crate::rebound`) run with the addresses of a call's
//! tensors.
//!
//! A [`Rebindable`] run takes bare addresses: kernelkit checks their
//! count, alignment and overlaps, but not that each is element 0 of live
//! memory laid out as the launch was prepared for. That is established
//! here: a [`Fitted`] is made only from tensors whose layouts were just
//! found to fit a kept launch, and it borrows them, so they outlive the
//! launch.

use std::marker::PhantomData;
use std::sync::Arc;

use kernelkit::Rebindable;
use pyo3::prelude::*;
use smallvec::SmallVec;

use crate::args::Template;
use crate::device::Place;
use crate::donation::Aliasing;
use crate::ffi::torch_shim::{Raw, Shim};
use crate::rebound::{Entry, Key, Rebound};
use crate::torch::Tensor;

/// A kept launch and the addresses of the tensors (borrowed for `'t`) that
/// fit the layout it was prepared for.
pub(crate) struct Fitted<'t> {
    entry: Arc<Entry>,
    inputs: SmallVec<[u64; 4]>,
    outputs: SmallVec<[u64; 4]>,
    held: PhantomData<&'t ()>,
}

impl Fitted<'_> {
    /// The kept launch found.
    pub(crate) fn entry(&self) -> &Arc<Entry> {
        &self.entry
    }

    /// The kept launch's output layouts.
    pub(crate) fn output_layouts(&self) -> &[crate::rebound::Layout] {
        self.entry.outputs()
    }

    /// Launches on the kept launch's stream, the GIL released meanwhile.
    #[inline]
    pub(crate) fn run(&self, py: Python<'_>) -> kernelkit::Result<()> {
        let (launch, inputs, outputs) = (&self.entry.launch, &self.inputs, &self.outputs);
        // SAFETY: the addresses are element 0 of tensors whose dtype,
        // shape and strides fit the launch's (`Rebound::find`), on its GPU
        // and with torch's current stream there its stream (both part of
        // the key), so torch orders their other use on it; the tensors are
        // borrowed for the `Fitted`'s lifetime, so alive through the call.
        py.detach(|| unsafe { launch.run(inputs, outputs) })
    }
}

/// The grid, threadgroup and template values of a call: the rest of a
/// kept launch's key.
pub(crate) struct Shape<'a> {
    pub grid: [u64; 3],
    pub threadgroup: [u64; 3],
    pub template: &'a Template,
    /// `stream=`'s handle, when given: it must be torch's current stream.
    pub stream: Option<u64>,
    pub aliasing: &'a Aliasing,
}

/// Each of `tensors` read in place into `raws` (its `TensorImpl` address
/// from its object's memory: no attribute read, which could run Python
/// code), and its data's address into `addresses`, when all are on the GPU
/// `ordinal` is (or is set to, when `None`). Filled in the caller's frame:
/// lists of them returned would be copied.
#[inline]
fn read<'t>(
    shim: &Shim,
    tensors: &'t [Bound<'_, PyAny>],
    ordinal: &mut Option<u32>,
    raws: &mut SmallVec<[Raw<'t>; 4]>,
    addresses: &mut SmallVec<[u64; 4]>,
) -> Option<()> {
    for t in tensors {
        // SAFETY: the size and stride arrays of `raw` are used only in
        // `find_in_place`, which runs no Python code before it is done
        // with them (see there).
        let raw = unsafe { shim.raw_in_place(t) }?;
        match raw.place {
            Place::Cuda(n) if ordinal.is_none_or(|o| o == n) => *ordinal = Some(n),
            _ => return None,
        }
        addresses.push(raw.data);
        raws.push(raw);
    }
    Some(())
}

/// The kept launch that `inputs` and `outputs`, read in place, fit, with
/// the call's `shape`; `None` when a tensor cannot be read so or no kept
/// launch fits. From the reads to the comparison with the kept layouts no
/// Python code runs.
#[inline]
pub(crate) fn find_in_place<'t>(
    shim: &Shim,
    rebound: &Rebound,
    inputs: &'t [Bound<'_, PyAny>],
    outputs: &'t [Bound<'_, PyAny>],
    shape: Shape<'_>,
) -> Option<Fitted<'t>> {
    let (mut ordinal, mut ins, mut outs) = (None, SmallVec::new(), SmallVec::new());
    let (mut in_addrs, mut out_addrs) = (SmallVec::new(), SmallVec::new());
    read(shim, inputs, &mut ordinal, &mut ins, &mut in_addrs)?;
    read(shim, outputs, &mut ordinal, &mut outs, &mut out_addrs)?;
    let ordinal = ordinal?;
    let current = shim.current_stream(ordinal)?;
    if shape.stream.is_some_and(|s| s != current) {
        return None;
    }
    let key = Key {
        ordinal,
        stream: current,
        grid: shape.grid,
        threadgroup: shape.threadgroup,
        template: shape.template,
        inputs: &ins,
        outputs: &outs,
        aliasing: shape.aliasing,
    };
    let entry = rebound.find(&key)?;
    Some(Fitted {
        entry,
        inputs: in_addrs,
        outputs: out_addrs,
        held: PhantomData,
    })
}

/// The kept launch that `key`'s tensors (read through their methods, each
/// held by `_held` for `'t`) fit; `None` when none fits.
pub(crate) fn find_read<'t, H: ?Sized>(
    rebound: &Rebound,
    key: &Key<'_, &Tensor>,
    _held: &'t H,
) -> Option<Fitted<'t>> {
    let entry = rebound.find(key)?;
    Some(Fitted {
        entry,
        inputs: key.inputs.iter().map(|t| t.data).collect(),
        outputs: key.outputs.iter().map(|t| t.data).collect(),
        held: PhantomData,
    })
}

/// Runs `launch`, just prepared from arrays over the tensors at
/// `inputs` and `outputs` (which the caller still holds), with those
/// addresses: the first run of a layout.
pub(crate) fn run_prepared(
    launch: &Rebindable,
    inputs: &[u64],
    outputs: &[u64],
) -> kernelkit::Result<()> {
    // SAFETY: the addresses are those of the arrays the launch was just
    // prepared with, so their layouts are the launch's, and the arrays,
    // alive in the caller, keep the memory.
    unsafe { launch.run(inputs, outputs) }
}
