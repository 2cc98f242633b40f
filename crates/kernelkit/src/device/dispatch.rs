//! One call's device work: wait for inputs made on other streams, make
//! strided inputs contiguous where the spec asks, allocate (and fill) the
//! outputs in the stream's order, and hand the backend one borrowed
//! launch description.
//!
//! On a stream that is being captured into a CUDA graph, memory kernelkit
//! allocates (outputs, strided inputs' copies) is a *graph allocation*
//! ([`Backend::alloc_in_graph`](crate::backend::Backend::alloc_in_graph)),
//! never a block of the stream's cache or a thread's spare: see
//! `kernel::call::capture` for what that means to the caller.
//!
//! A call whose inputs need nothing done first (the common case) goes
//! straight from here to the backend; the rest is out of line
//! ([`dispatch_in_full`]), so that its code does not crowd the
//! instruction cache of the calls that never run it (on a GPU host every
//! launch leaves that cache cold: `tools/fakecuda` measures the lines a
//! warm call runs).

use arrayvec::ArrayVec;
use smallvec::SmallVec;

use crate::array::foreign::LeaseUses;
use crate::array::outputs::Outputs;
use crate::array::{shape_from_extents, Array, Place, SharedStorage};
use crate::backend::copy::entry_index;
use crate::backend::{ArgRef, Function, LaunchDesc};
use crate::cache::loaded::FunctionRef;
use crate::codegen::spec::KernelSpec;
use crate::device::{bounds, Stream};
use crate::dtype::{fill_pattern, DType};
use crate::error::{CallError, Result};

/// An output's shape, as given (checked before any use), and dtype.
pub(crate) type OutputSpec = (SmallVec<[i64; 4]>, DType);

/// Arguments kept on the stack (more use the heap).
const STACK_ARGS: usize = 8;

/// One call, checked, with its function: what [`dispatch`] needs,
/// borrowed from a call or a prepared launch.
pub(crate) struct Dispatch<'a> {
    pub(crate) spec: &'a KernelSpec,
    pub(crate) function: &'a Function,
    pub(crate) inputs: &'a [&'a Array],
    /// Shape and dtype of each output, checked.
    pub(crate) outputs: &'a [OutputSpec],
    /// Checked to fit every output's dtype.
    pub(crate) init_value: Option<f64>,
    pub(crate) grid: [u32; 3],
    pub(crate) threadgroup: [u32; 3],
    pub(crate) shared_mem_bytes: u32,
    pub(crate) stream: &'a Stream,
    /// Outputs written into the caller's arrays (checked): index, array.
    pub(crate) targets: &'a [(usize, &'a Array)],
}

/// Runs `call`, its outputs allocated into `outputs` (empty): the caller
/// owns their slot, since [`Outputs`] holds arrays inline and returning it
/// by value through every layer would copy it at each. With `raw`, also
/// times `iters` launches of the same arguments by the backend alone (the
/// floor benchmarks compare dispatch to).
#[inline]
pub(crate) fn dispatch(
    call: &Dispatch<'_>,
    outputs: &mut Outputs,
    raw: Option<(u32, &mut std::time::Duration)>,
) -> Result<()> {
    let stream = call.stream;
    let contiguous = call.spec.ensure_row_contiguous;
    let ready = call.inputs.iter().all(|a| {
        a.producer().is_none_or(|p| p == stream)
            && (!contiguous || a.is_row_contiguous())
            && a.foreign_mem().is_none_or(|m| !m.needs_care())
    });
    if !ready || raw.is_some() || !call.targets.is_empty() || call.spec.check_bounds {
        return dispatch_in_full(call, outputs, raw);
    }
    new_outputs(call, outputs)?;
    launch(call, call.inputs, outputs, 1)
}

/// Allocates (in the order of the call's stream) and fills the outputs.
#[inline(always)]
fn new_outputs(call: &Dispatch<'_>, outputs: &mut Outputs) -> Result<()> {
    let stream = call.stream;
    if stream.may_capture() && !call.outputs.is_empty() && outputs_in_graph(call, outputs)? {
        return Ok(());
    }
    if call.spec.check_bounds {
        return guarded_outputs(call, outputs);
    }
    for (i, (extents, dtype)) in call.outputs.iter().enumerate() {
        let shape = shape_from_extents(extents);
        let bytes = shape.iter().product::<usize>() * dtype.size();
        let storage = match SharedStorage::output(stream, bytes) {
            Ok(storage) => storage,
            Err(e) => return Err(output_alloc_error(call, i, bytes, e)),
        };
        if let Some(v) = call.init_value {
            let pattern = fill_pattern(v, *dtype).expect("checked when the call was planned");
            stream
                .device()
                .backend()
                .fill(&storage.mem, &pattern, stream.handle())?;
        }
        outputs.push(Array::contiguous(storage, shape, *dtype));
    }
    Ok(())
}

/// [`new_outputs`] of a kernel that checks its bounds: each output its
/// own block, exactly as long as asked plus its guard region (armed), never
/// a thread's spare (`device::bounds`).
#[cold]
#[inline(never)]
fn guarded_outputs(call: &Dispatch<'_>, outputs: &mut Outputs) -> Result<()> {
    for i in 0..call.outputs.len() {
        outputs.push(guarded_output(call, i)?);
    }
    Ok(())
}

/// Output `i` of a call of a kernel that checks its bounds (see
/// [`guarded_outputs`]).
fn guarded_output(call: &Dispatch<'_>, i: usize) -> Result<Array> {
    let stream = call.stream;
    let backend = stream.device().backend();
    let (extents, dtype) = &call.outputs[i];
    let shape = shape_from_extents(extents);
    let bytes = shape.iter().product::<usize>() * dtype.size();
    let mem = backend
        .alloc(bounds::guarded_len(bytes), stream.handle())
        .map_err(|e| output_alloc_error(call, i, bytes, e))?;
    if let Some(v) = call.init_value {
        let pattern = fill_pattern(v, *dtype).expect("checked when the call was planned");
        backend.fill(&mem, &pattern, stream.handle())?;
    }
    bounds::arm(stream, &mem, bytes)?;
    let storage = SharedStorage::new(mem, Place::Queued(stream.clone()));
    Ok(Array::contiguous(storage, shape, *dtype))
}

/// [`new_outputs`] for a call with outputs written into the caller's
/// arrays: those are the outputs (clones sharing their memory), filled
/// where the call asks; the rest are allocated.
#[cold]
#[inline(never)]
fn outputs_with_targets(call: &Dispatch<'_>, outputs: &mut Outputs) -> Result<()> {
    let stream = call.stream;
    let backend = stream.device().backend();
    for (i, (extents, dtype)) in call.outputs.iter().enumerate() {
        let Some((_, target)) = call.targets.iter().find(|(j, _)| *j == i) else {
            if stream.capturing()? {
                outputs.push(graph_output(call, i)?);
                continue;
            }
            if call.spec.check_bounds {
                outputs.push(guarded_output(call, i)?);
                continue;
            }
            let shape = shape_from_extents(extents);
            let bytes = shape.iter().product::<usize>() * dtype.size();
            let storage = SharedStorage::output(stream, bytes)
                .map_err(|e| output_alloc_error(call, i, bytes, e))?;
            if let Some(v) = call.init_value {
                let pattern = fill_pattern(v, *dtype).expect("checked when the call was planned");
                backend.fill(&storage.mem, &pattern, stream.handle())?;
            }
            outputs.push(Array::contiguous(storage, shape, *dtype));
            continue;
        };
        backend.note_use(&target.storage.mem, stream.handle());
        if let Some(v) = call.init_value {
            let pattern = fill_pattern(v, *dtype).expect("checked when the call was planned");
            // The target's own elements only: it may be a view of a
            // larger buffer. Borrowed, so nothing is freed after.
            let view = crate::backend::Memory {
                addr: target.data_addr(),
                len: target.size() * dtype.size(),
                owner: crate::backend::Owner::Foreign(Box::new(
                    crate::backend::foreign::ForeignMem::new(
                        crate::backend::foreign::ForeignOwner::none(),
                        None,
                        false,
                    ),
                )),
            };
            backend.fill(&view, &pattern, stream.handle())?;
        }
        outputs.push((*target).clone());
    }
    Ok(())
}

/// What to do instead of allocating outputs under a capture, where the
/// device cannot.
const OUTPUTS_ADVICE: &str = "write the outputs into arrays allocated by an allocator that knows \
     the capture (`Call::output_into`; Python: PyTorch tensors, or `out=`), or allocated before \
     the capture began";

/// What to do instead of copying a strided input under a capture, where
/// the device cannot.
const COPY_ADVICE: &str = "make one call with a strided input of that dtype on this device before \
     the capture, or call `Device::prepare_strided_copy` (either loads the copy kernel), or pass \
     row-contiguous inputs";

/// What to do instead of capturing a kernel that checks its bounds.
const CHECKED_ADVICE: &str = "run the kernel with bounds checks outside the capture, or capture \
     it built without them";

/// What to do instead of waiting on the host under a capture.
const ORDER_ADVICE: &str = "produce the arrays on the capturing stream (or make it wait for \
     their stream before the capture)";

/// [`new_outputs`] on a stream that someone else may capture: while it is
/// being captured, every output is a graph allocation ([`graph_output`])
/// and this returns true; false, having done nothing, when it is not.
#[cold]
#[inline(never)]
fn outputs_in_graph(call: &Dispatch<'_>, outputs: &mut Outputs) -> Result<bool> {
    if !call.stream.capturing()? {
        return Ok(false);
    }
    for i in 0..call.outputs.len() {
        outputs.push(graph_output(call, i)?);
    }
    Ok(true)
}

/// Output `i` of `call`, whose stream is being captured, as a graph
/// allocation of that stream (filled where the call asks): an allocation
/// node of the graph, never a cached block. A [`CallError::Capturing`]
/// where the device cannot allocate under a capture.
#[cold]
#[inline(never)]
fn graph_output(call: &Dispatch<'_>, i: usize) -> Result<Array> {
    let stream = call.stream;
    let backend = stream.device().backend();
    if let Some(why) = backend.graph_alloc_refusal() {
        let what = format!(
            "output `{}` would be allocated by kernelkit, but {why}",
            call.spec.output_names[i]
        );
        return Err(capturing(call, what, OUTPUTS_ADVICE));
    }
    let (extents, dtype) = &call.outputs[i];
    let shape = shape_from_extents(extents);
    let bytes = shape.iter().product::<usize>() * dtype.size();
    let mem = backend
        .alloc_in_graph(bytes, stream.handle())
        .map_err(|e| output_alloc_error(call, i, bytes, e))?;
    let storage = SharedStorage::new(mem, Place::Queued(stream.clone()));
    if let Some(v) = call.init_value {
        let pattern = fill_pattern(v, *dtype).expect("checked when the call was planned");
        backend.fill(&storage.mem, &pattern, stream.handle())?;
    }
    Ok(Array::contiguous(storage, shape, *dtype))
}

/// Memory for a contiguous copy of strided input `i` (`bytes` long) on
/// the call's stream, which is being captured: a graph allocation, freed
/// by a free node when the copy is dropped after the launch. A
/// [`CallError::Capturing`] where the device cannot allocate under a
/// capture (whether it can copy was asked first: [`copy_functions`]).
#[cold]
#[inline(never)]
fn graph_copy(call: &Dispatch<'_>, i: usize, bytes: usize) -> Result<crate::backend::Memory> {
    let stream = call.stream;
    let backend = stream.device().backend();
    if let Some(why) = backend.graph_alloc_refusal() {
        return Err(copy_refused(call, i, why));
    }
    backend.alloc_in_graph(bytes, stream.handle())
}

/// The [`CallError::Capturing`] of strided input `i`, which kernelkit
/// cannot copy under a capture because of `why`.
#[cold]
#[inline(never)]
fn copy_refused(call: &Dispatch<'_>, i: usize, why: &str) -> crate::Error {
    let what = format!(
        "input `{}` is strided and would be copied by kernelkit, but {why}",
        call.spec.input_names[i]
    );
    capturing(call, what, COPY_ADVICE)
}

/// The entry points of kernelkit's copy kernel that a call's copies use,
/// by element size ([`entry_index`]); each `None` where none is needed
/// or the backend copies on the host.
#[derive(Default)]
struct CopyFunctions([Option<FunctionRef>; 4]);

impl CopyFunctions {
    /// The function to copy elements of `dtype` with.
    fn get(&self, dtype: DType) -> Option<&Function> {
        self.0[entry_index(dtype.size())]
            .as_ref()
            .map(|f| &f.bound().function)
    }
}

/// Resolves, before anything of the call is allocated or queued, the copy
/// kernel's entry points its copies need: of its strided inputs (a kernel
/// that asks for row-contiguous inputs) and of the outputs a checked
/// kernel stages (see [`stage_targets`]). Under `KERNELKIT_JIT=forbid`, a
/// copy kernel that no tier holds is [`CallError::JitForbidden`] here;
/// on a stream being captured, one the device has not loaded is
/// [`CallError::Capturing`].
fn copy_functions(call: &Dispatch<'_>) -> Result<CopyFunctions> {
    let stream = call.stream;
    let device = stream.device();
    let mut out = CopyFunctions::default();
    let inputs = call
        .inputs
        .iter()
        .enumerate()
        .filter(|(_, a)| call.spec.ensure_row_contiguous && !a.is_row_contiguous())
        .map(|(i, a)| (Some(i), a.dtype));
    // (A checked kernel is refused under a capture before this.)
    let staged = call
        .targets
        .iter()
        .filter(|(_, t)| call.spec.check_bounds && t.is_row_contiguous())
        .map(|(_, t)| (None, t.dtype));
    let mut needed = inputs.chain(staged).peekable();
    if needed.peek().is_none() {
        return Ok(out);
    }
    let capturing = stream.capturing()?;
    for (input, dtype) in needed {
        let slot = &mut out.0[entry_index(dtype.size())];
        if slot.is_some() {
            continue;
        }
        *slot = if capturing {
            match device.kept_copy_function(dtype) {
                Ok(f) => f,
                Err(why) => return Err(copy_refused(call, input.unwrap_or(0), why)),
            }
        } else {
            device.copy_function(dtype)?
        };
    }
    Ok(out)
}

/// A [`CallError::Capturing`] of `call`: it would do `what`, which a
/// capture of its stream forbids, before anything was queued.
#[cold]
#[inline(never)]
fn capturing(call: &Dispatch<'_>, what: String, advice: &'static str) -> crate::Error {
    CallError::Capturing {
        kernel: call.spec.name.clone(),
        what,
        advice,
    }
    .into()
}

#[cold]
#[inline(never)]
fn output_alloc_error(
    call: &Dispatch<'_>,
    output: usize,
    bytes: usize,
    e: crate::Error,
) -> crate::Error {
    CallError::OutputAlloc {
        kernel: call.spec.name.clone(),
        output: call.spec.output_names[output].clone(),
        bytes,
        device: call.stream.device().label().to_string(),
        reason: e.to_string(),
    }
    .into()
}

/// Hands the backend the launch of `call` with `inputs` as the kernel sees
/// them and its outputs, `iters` times. The arguments' descriptions sit on
/// the stack for up to [`STACK_ARGS`] of each.
#[inline]
fn launch(call: &Dispatch<'_>, inputs: &[&Array], outputs: &Outputs, iters: u32) -> Result<()> {
    let mut ins = ArrayVec::<ArgRef<'_>, STACK_ARGS>::new();
    let mut outs = ArrayVec::<ArgRef<'_>, STACK_ARGS>::new();
    if inputs.len() > STACK_ARGS || outputs.len() > STACK_ARGS {
        return launch_many(call, inputs, outputs, iters);
    }
    for a in inputs {
        ins.push(a.arg());
    }
    for a in outputs.iter() {
        outs.push(a.arg());
    }
    backend_launch(call, &ins, &outs, iters)
}

/// [`launch`] for more arguments than its stack arrays hold.
#[cold]
#[inline(never)]
fn launch_many(
    call: &Dispatch<'_>,
    inputs: &[&Array],
    outputs: &Outputs,
    iters: u32,
) -> Result<()> {
    let ins: Vec<ArgRef<'_>> = inputs.iter().map(|a| a.arg()).collect();
    let outs: Vec<ArgRef<'_>> = outputs.iter().map(|a| a.arg()).collect();
    backend_launch(call, &ins, &outs, iters)
}

#[inline]
fn backend_launch(
    call: &Dispatch<'_>,
    inputs: &[ArgRef<'_>],
    outputs: &[ArgRef<'_>],
    iters: u32,
) -> Result<()> {
    let stream = call.stream;
    stream.device().launch(&LaunchDesc {
        spec: call.spec,
        function: call.function,
        inputs,
        outputs,
        grid: call.grid,
        threadgroup: call.threadgroup,
        shared_mem_bytes: call.shared_mem_bytes,
        stream: stream.handle(),
        iters,
        bounds: 0,
    })
}

/// [`launch`] of a kernel that checks its bounds: with its bounds block,
/// waited for, its nets checked (`device::bounds`). The outputs that
/// kernelkit allocated and the copies of the inputs in `guarded_copies`
/// have guard regions.
#[cold]
#[inline(never)]
fn launch_checked(
    call: &Dispatch<'_>,
    inputs: &[&Array],
    outputs: &Outputs,
    guarded_copies: &[usize],
    staged: &[(usize, Array)],
) -> Result<()> {
    let stream = call.stream;
    let ins: Vec<ArgRef<'_>> = inputs.iter().map(|a| a.arg()).collect();
    let outs: Vec<ArgRef<'_>> = outputs.iter().map(|a| a.arg()).collect();
    let mut guarded = Vec::new();
    for &i in guarded_copies {
        let a = inputs[i];
        guarded.push(bounds::Guarded {
            role: "input",
            arg: i,
            mem: &a.storage.mem,
            len: a.size() * a.dtype.size(),
        });
    }
    for (i, a) in outputs.iter().enumerate() {
        let target = call.targets.iter().any(|(j, _)| *j == i);
        if target && !staged.iter().any(|(j, _)| *j == i) {
            // The caller's memory, which may be a view of a larger buffer.
            continue;
        }
        let len = a.size() * a.dtype.size();
        if a.storage.mem.len > len {
            guarded.push(bounds::Guarded {
                role: "output",
                arg: i,
                mem: &a.storage.mem,
                len,
            });
        }
    }
    bounds::run(stream, call.spec, &ins, &outs, &guarded, |block| {
        stream.device().launch(&LaunchDesc {
            spec: call.spec,
            function: call.function,
            inputs: &ins,
            outputs: &outs,
            grid: call.grid,
            threadgroup: call.threadgroup,
            shared_mem_bytes: call.shared_mem_bytes,
            stream: stream.handle(),
            iters: 1,
            bounds: block,
        })
    })
}

/// For a call of a kernel that checks its bounds, replaces each output
/// that is the caller's row-contiguous array by a guarded stand-in of
/// kernelkit's holding its contents (`device::bounds`), so that a write
/// past its end lands in a guard region rather than in whatever follows
/// the caller's array; returns the caller's arrays, by output index.
#[cold]
#[inline(never)]
fn stage_targets(
    call: &Dispatch<'_>,
    outputs: &mut Outputs,
    copies: &CopyFunctions,
) -> Result<SmallVec<[(usize, Array); 2]>> {
    let stream = call.stream;
    let backend = stream.device().backend();
    let mut staged = SmallVec::new();
    for &(i, target) in call.targets {
        if !target.is_row_contiguous() || stream.capturing()? {
            continue;
        }
        let bytes = target.size() * target.dtype.size();
        let mem = backend.alloc(bounds::guarded_len(bytes), stream.handle())?;
        backend.gather(
            &target.arg(),
            &mem,
            stream.handle(),
            copies.get(target.dtype),
        )?;
        bounds::arm(stream, &mem, bytes)?;
        let storage = SharedStorage::new(mem, Place::Queued(stream.clone()));
        let stand_in = Array::contiguous(storage, target.shape.clone(), target.dtype);
        let original = std::mem::replace(&mut outputs[i], stand_in);
        staged.push((i, original));
    }
    Ok(staged)
}

/// Copies each stand-in of [`stage_targets`] back into the caller's array
/// and puts that array back among the outputs.
#[cold]
#[inline(never)]
fn unstage_targets(
    call: &Dispatch<'_>,
    outputs: &mut Outputs,
    staged: SmallVec<[(usize, Array); 2]>,
    copies: &CopyFunctions,
) -> Result<()> {
    let stream = call.stream;
    let backend = stream.device().backend();
    for (i, target) in staged {
        let bytes = target.size() * target.dtype.size();
        let dst = bounds::borrowed(target.data_addr(), bytes);
        backend.gather(
            &outputs[i].arg(),
            &dst,
            stream.handle(),
            copies.get(target.dtype),
        )?;
        outputs[i] = target;
    }
    Ok(())
}

/// [`dispatch`] for inputs produced on another stream (waited for) or
/// strided where the spec wants them contiguous (copied), and for timing.
#[cold]
#[inline(never)]
fn dispatch_in_full(
    call: &Dispatch<'_>,
    outputs: &mut Outputs,
    raw: Option<(u32, &mut std::time::Duration)>,
) -> Result<()> {
    let stream = call.stream;
    // Borrowed memory is used only while its borrow lasts: every foreign
    // argument's lease is entered until the launch is queued.
    let mut leases = LeaseUses::new();
    for (i, input) in call.inputs.iter().enumerate() {
        if let Some(lease) = input.enter().map_err(|_| revoked(call, i, false))? {
            leases.push(lease);
        }
    }
    // kernelkit's own capture is replayed on the arrays' stream, which
    // orders them: nothing to wait for (see `Stream::captured_for_replay`).
    let ordered = stream.captured_for_replay();
    for &(i, target) in call.targets {
        if let Some(lease) = target.enter().map_err(|_| revoked(call, i, true))? {
            leases.push(lease);
        }
        if let Some(p) = target.producer().filter(|_| !ordered) {
            if p != stream {
                if stream.capturing()? || p.capturing()? {
                    let what = format!(
                        "output `{}` was written on another stream, which would be waited for \
                         on the host",
                        call.spec.output_names[i]
                    );
                    return Err(capturing(call, what, ORDER_ADVICE));
                }
                p.synchronize()?;
            }
        }
    }
    let mut raw = raw;
    with_owners(call, &mut || in_full(call, outputs, raw.take()))?;
    drop(leases);
    Ok(())
}

/// [`dispatch_in_full`] once the foreign arguments' leases are entered,
/// inside their owners' bookkeeping.
fn in_full(
    call: &Dispatch<'_>,
    outputs: &mut Outputs,
    raw: Option<(u32, &mut std::time::Duration)>,
) -> Result<()> {
    let stream = call.stream;
    let backend = stream.device().backend();
    let handle = stream.handle();
    if call.spec.check_bounds && stream.capturing()? {
        let what = "it checks bounds, and a checked launch is waited for on the host".to_string();
        return Err(capturing(call, what, CHECKED_ADVICE));
    }
    // The copy kernel's functions, before anything is allocated or queued.
    let copy_with = copy_functions(call)?;
    // Contiguous copies of strided inputs (kept alive until the launch).
    let mut copies: SmallVec<[(usize, Array); 2]> = SmallVec::new();
    // Inputs whose copies have guard regions (a kernel that checks bounds).
    let mut guarded_copies: SmallVec<[usize; 2]> = SmallVec::new();
    let ordered = stream.captured_for_replay();
    for (i, input) in call.inputs.iter().enumerate() {
        if let Some(p) = input.producer().filter(|_| !ordered) {
            if p != stream {
                if stream.capturing()? || p.capturing()? {
                    let what = format!(
                        "input `{}` was produced on another stream, which would be waited for \
                         on the host",
                        call.spec.input_names[i]
                    );
                    return Err(capturing(call, what, ORDER_ADVICE));
                }
                p.synchronize()?;
            }
        }
        if call.spec.ensure_row_contiguous && !input.is_row_contiguous() {
            let n = input.size() * input.dtype.size();
            let mem = if stream.capturing()? {
                graph_copy(call, i, n)?
            } else if call.spec.check_bounds {
                backend.alloc(bounds::guarded_len(n), handle)?
            } else {
                backend.alloc(n, handle)?
            };
            backend.gather(&input.arg(), &mem, handle, copy_with.get(input.dtype))?;
            if call.spec.check_bounds && mem.len > n {
                bounds::arm(stream, &mem, n)?;
                guarded_copies.push(i);
            }
            let storage = SharedStorage::new(mem, Place::Queued(stream.clone()));
            copies.push((
                i,
                Array::contiguous(storage, input.shape.clone(), input.dtype),
            ));
        }
    }
    let replaced: SmallVec<[&Array; 8]>;
    let inputs: &[&Array] = if copies.is_empty() {
        call.inputs
    } else {
        replaced = call
            .inputs
            .iter()
            .enumerate()
            .map(|(i, a)| match copies.iter().find(|(j, _)| *j == i) {
                Some((_, copy)) => copy,
                None => *a,
            })
            .collect();
        &replaced
    };
    // A GPU target that the call's stream does not produce is waited for
    // after the launch: its readers wait for its own stream, not this one.
    // Under a capture that wait is impossible: refused before the launch.
    let wait = !matches!(handle, crate::backend::StreamHandle::Host)
        && !ordered
        && call
            .targets
            .iter()
            .any(|(_, t)| t.producer().is_none_or(|p| p != stream));
    if wait && stream.capturing()? {
        let what = "an output's array belongs to another stream, which would wait for the \
                    launch on the host"
            .to_string();
        return Err(capturing(call, what, ORDER_ADVICE));
    }
    if call.targets.is_empty() {
        new_outputs(call, outputs)?;
    } else {
        outputs_with_targets(call, outputs)?;
    }
    if call.spec.check_bounds {
        let staged = stage_targets(call, outputs, &copy_with)?;
        launch_checked(call, inputs, outputs, &guarded_copies, &staged)?;
        unstage_targets(call, outputs, staged, &copy_with)?;
    } else {
        launch(call, inputs, outputs, 1)?;
    }
    if wait {
        stream.synchronize()?;
    }
    if let Some((iters, elapsed)) = raw {
        stream.synchronize()?;
        let started = std::time::Instant::now();
        if call.spec.check_bounds {
            for _ in 0..iters {
                launch_checked(call, inputs, outputs, &guarded_copies, &[])?;
            }
        } else {
            launch(call, inputs, outputs, iters)?;
        }
        *elapsed = started.elapsed();
        stream.synchronize()?;
    }
    Ok(())
}

/// The error for argument `i` (an output with `output`), whose borrowed
/// memory's scope has ended.
#[cold]
#[inline(never)]
fn revoked(call: &Dispatch<'_>, i: usize, output: bool) -> crate::Error {
    let spec = call.spec;
    let arg = if output {
        format!("output `{}`", spec.output_names[i])
    } else {
        format!("input `{}`", spec.input_names[i])
    };
    CallError::Foreign {
        kernel: spec.name.clone(),
        arg,
        reason: "views borrowed memory whose scope has ended".into(),
    }
    .into()
}

/// Runs `run` (which copies, allocates and launches) inside the
/// bookkeeping of every foreign argument's owner that keeps its own
/// (cudarc's events: each waits for earlier writes before, and records
/// this use after, the work is queued).
#[cfg(feature = "cuda")]
fn with_owners(call: &Dispatch<'_>, run: &mut dyn FnMut() -> Result<()>) -> Result<()> {
    let inputs = call.inputs.iter().enumerate().map(|(i, a)| (i, false, *a));
    let targets = call.targets.iter().map(|&(i, a)| (i, true, a));
    let hooks: SmallVec<[(usize, bool, &dyn crate::backend::foreign::ForeignAccess); 4]> = inputs
        .chain(targets)
        .filter_map(|(i, write, a)| Some((i, write, a.foreign_mem()?.access.as_deref()?)))
        .collect();
    if hooks.is_empty() {
        return run();
    }
    let Some(cudarc) = call.stream.handle().cuda().and_then(|s| s.cudarc()) else {
        let (i, write, _) = hooks[0];
        let spec = call.spec;
        return Err(CallError::Foreign {
            kernel: spec.name.clone(),
            arg: if write {
                format!("output `{}`", spec.output_names[i])
            } else {
                format!("input `{}`", spec.input_names[i])
            },
            reason: "is cudarc memory, which kernelkit uses on cudarc streams only: run the call \
                     on a stream made by `interop::cudarc::stream` (a call that names none runs \
                     on its first input's)"
                .into(),
        }
        .into());
    };
    let hooks: SmallVec<[(bool, &dyn crate::backend::foreign::ForeignAccess); 4]> =
        hooks.into_iter().map(|(_, w, h)| (w, h)).collect();
    crate::array::foreign::around(&hooks, cudarc, run)
}

#[cfg(not(feature = "cuda"))]
#[inline]
fn with_owners(call: &Dispatch<'_>, run: &mut dyn FnMut() -> Result<()>) -> Result<()> {
    let _ = call;
    run()
}
