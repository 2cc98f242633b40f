//! One launch of a kernel that checks its bounds
//! ([`KernelBuilder::check_bounds`](crate::KernelBuilder::check_bounds)).
//!
//! Two nets, checked once the launch has ended (the call waits for it):
//!
//! - the *views* (`codegen::bounds`): the kernel gets a block with one
//!   span per argument and a record, where the first access outside a
//!   view is written (and skipped);
//! - the *guard regions*: every buffer kernelkit allocates for the call
//!   (outputs, contiguous copies of strided inputs) is [`GUARD_BYTES`]
//!   longer than asked, that tail filled with [`GUARD_BYTE`] before the
//!   launch and compared after it. A write through a raw pointer or a cast
//!   past the end lands there, never in another allocation, and is named
//!   by the argument whose buffer it is.

use crate::backend::{ArgRef, Memory, StreamHandle};
use crate::codegen::bounds::{block, span, Violation, BLOCK_HEADER};
use crate::codegen::spec::KernelSpec;
use crate::codegen::variant::PassMode;
use crate::device::Stream;
use crate::error::{CallError, OutOfBounds, Result};

/// Bytes of the guard region after each buffer a checked call allocates.
pub(crate) const GUARD_BYTES: usize = 4096;

/// The byte a guard region holds until something writes over it.
pub(crate) const GUARD_BYTE: u8 = 0xA5;

/// A buffer of a checked call with a guard region after its `len` bytes:
/// `(role, argument index, memory, len)`.
pub(crate) struct Guarded<'a> {
    pub(crate) role: &'static str,
    pub(crate) arg: usize,
    pub(crate) mem: &'a Memory,
    pub(crate) len: usize,
}

/// The bytes to allocate for a guarded buffer of `len` bytes.
pub(crate) fn guarded_len(len: usize) -> usize {
    len + GUARD_BYTES
}

/// Fills the guard region after the first `len` bytes of `mem`, in the
/// order of `stream`.
pub(crate) fn arm(stream: &Stream, mem: &Memory, len: usize) -> Result<()> {
    let region = borrowed(mem.addr + len as u64, mem.len.saturating_sub(len));
    stream
        .device()
        .backend()
        .fill(&region, &[GUARD_BYTE], stream.handle())
}

/// `len` bytes at `addr`, borrowed: nothing is freed when it goes.
pub(crate) fn borrowed(addr: u64, len: usize) -> Memory {
    Memory {
        addr,
        len,
        owner: crate::backend::Owner::Foreign(Box::new(crate::backend::foreign::ForeignMem::new(
            crate::backend::foreign::ForeignOwner::none(),
            None,
            false,
        ))),
    }
}

/// Runs `launch` (given the device address of the bounds block) for
/// `spec` with `inputs` and `outputs` as the kernel sees them, waits for
/// it, and turns what the nets caught into [`CallError::OutOfBounds`]
/// (the views' record first: it names the thread).
pub(crate) fn run(
    stream: &Stream,
    spec: &KernelSpec,
    inputs: &[ArgRef<'_>],
    outputs: &[ArgRef<'_>],
    guarded: &[Guarded<'_>],
    launch: impl FnOnce(u64) -> Result<()>,
) -> Result<()> {
    let backend = stream.device().backend();
    let handle: &StreamHandle = stream.handle();
    let spans: Vec<(i64, i64)> = inputs
        .iter()
        .map(|a| match PassMode::of(a.shape.len(), a.size()) {
            PassMode::Scalar => (0, 1),
            _ => span(a.shape, a.strides),
        })
        .chain(outputs.iter().map(|a| span(a.shape, a.strides)))
        .collect();
    let mem = backend.upload(&block(&spans), handle)?;
    launch(mem.addr)?;
    stream.synchronize()?;
    let record = backend.download(&mem, 0, BLOCK_HEADER, handle)?;
    if let Some(v) = Violation::parse(&record) {
        let (role, argument) = name_of(spec, v.arg);
        return Err(CallError::OutOfBounds {
            kernel: spec.name.clone(),
            role,
            argument,
            access: Box::new(OutOfBounds::View {
                index: v.index,
                span: v.span,
                thread: v.thread,
                group: v.group,
            }),
        }
        .into());
    }
    for g in guarded {
        let tail = g.mem.len.saturating_sub(g.len);
        let bytes = backend.download(g.mem, g.len, tail, handle)?;
        if let Some(at) = bytes.iter().position(|&b| b != GUARD_BYTE) {
            let names = if g.role == "input" {
                &spec.input_names
            } else {
                &spec.output_names
            };
            return Err(CallError::OutOfBounds {
                kernel: spec.name.clone(),
                role: g.role,
                argument: names[g.arg].clone(),
                access: Box::new(OutOfBounds::Guard {
                    byte_offset: (g.len + at) as u64,
                    bytes: g.len as u64,
                }),
            }
            .into());
        }
    }
    Ok(())
}

/// The role and name of argument `k` (inputs, then outputs).
fn name_of(spec: &KernelSpec, k: usize) -> (&'static str, String) {
    match spec.input_names.get(k) {
        Some(n) => ("input", n.clone()),
        None => (
            "output",
            spec.output_names
                .get(k - spec.input_names.len())
                .cloned()
                .unwrap_or_else(|| format!("#{k}")),
        ),
    }
}
