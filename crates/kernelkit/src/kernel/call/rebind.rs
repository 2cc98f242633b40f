//! A prepared call whose arrays are given again, as addresses, at every run
//! ([`Rebindable`]).
//!
//! A binding whose arrays are new objects on every call (Python's tensors:
//! `kernel(inputs=[x], out=[y])` in a loop) would otherwise wrap each as a
//! borrowed array, check the call, find its variant and function, and drop
//! the wrappers, on every call, though only the addresses changed. A
//! rebindable launch does all of that once, for one layout of every
//! argument; a run takes the addresses alone, checks what depends on them
//! (null, alignment, outputs sharing memory), finds the function (so an
//! unloaded module is loaded again and a capture pins it, as any call) and
//! launches.
//!
//! Only calls that need nothing but the launch are rebindable: every
//! output written into a given array, no fill, every array produced in the
//! order of the call's stream (nothing to wait for, before or after), none
//! with an owner's bookkeeping (cudarc's events, a revocable borrow), and
//! inputs row-contiguous where the spec asks (no copy).

use std::sync::Arc;

use smallvec::SmallVec;

use super::check::{shares_with_input, shares_with_output};
use super::Call;
use crate::array::foreign::{bytes_at, bytes_overlap, check_address, element_span};
use crate::array::{Array, Shape, Strides};
use crate::backend::foreign::{ForeignMem, ForeignOwner};
use crate::backend::{ArgRef, LaunchDesc, Memory, Owner};
use crate::device::Stream;
use crate::dtype::DType;
use crate::error::{ArrayError, CallError, Result};
use crate::kernel::variant::Variant;
use crate::kernel::Kernel;

/// One argument's layout, as the launch was prepared with it.
struct Layout {
    dtype: DType,
    shape: Shape,
    strides: Strides,
    /// The elements' span from element 0, `[lo, hi)` in elements.
    span: (isize, isize),
}

impl Layout {
    fn of(array: &Array) -> Result<Layout> {
        Ok(Layout {
            dtype: array.dtype(),
            shape: array.shape().iter().copied().collect(),
            strides: array.strides().iter().copied().collect(),
            span: element_span(array.shape(), array.strides())?,
        })
    }

    /// The bytes `[lo, hi)` the elements lie in with element 0 at `addr`.
    fn bytes(&self, addr: u64) -> (u64, u64) {
        bytes_at(addr, self.dtype, self.span)
    }

    fn arg<'a>(&'a self, addr: u64, mem: &'a Memory) -> ArgRef<'a> {
        ArgRef {
            addr,
            mem,
            dtype: self.dtype,
            shape: &self.shape,
            strides: &self.strides,
        }
    }
}

/// The backend's view of arguments of these layouts at these addresses,
/// added to `to` (on the stack for up to eight). Pushed one by one into the
/// caller's frame: a collected list this size would be copied on return.
#[inline(always)]
fn args<'a>(
    to: &mut SmallVec<[ArgRef<'a>; 8]>,
    layouts: &'a [Layout],
    addrs: &[u64],
    mem: &'a Memory,
) {
    for (l, &a) in layouts.iter().zip(addrs) {
        to.push(l.arg(a, mem));
    }
}

/// A call prepared once for one layout of each argument, run with new
/// addresses each time: see the module documentation. Made by
/// [`Call::rebindable`]; it owns what it needs (kernel, variant, stream)
/// and may be kept, shared between threads and run on any of them.
pub struct Rebindable {
    kernel: Kernel,
    variant: Arc<Variant>,
    stream: Stream,
    inputs: SmallVec<[Layout; 4]>,
    outputs: SmallVec<[Layout; 2]>,
    grid: [u32; 3],
    threadgroup: [u32; 3],
    shared_mem_bytes: u32,
    allow_overlap: bool,
    /// Each donated output and the input whose buffer it is
    /// ([`Call::donate`]): that pair may share memory.
    donated: SmallVec<[(usize, usize); 1]>,
    /// What every argument's memory is to the backend: foreign memory
    /// owned by no one (the caller keeps it alive for a run).
    memory: Memory,
}

impl std::fmt::Debug for Rebindable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rebindable")
            .field("kernel", &self.kernel.name())
            .field("variant", &self.variant.name())
            .field("grid", &self.grid)
            .field("threadgroup", &self.threadgroup)
            .finish_non_exhaustive()
    }
}

impl Call<'_> {
    /// This call as a [`Rebindable`] launch, checked as a launch would be,
    /// its variant found (or built); `None` when the call needs more than
    /// the launch (see the module documentation). Nothing runs.
    pub fn rebindable(&self) -> Result<Option<Rebindable>> {
        let checked = self.check()?;
        let Some(targets) = self.targets.as_deref() else {
            return Ok(None);
        };
        if self.init_value.is_some() || targets.list.len() != self.outputs.len() {
            return Ok(None);
        }
        let stream: &Stream = &checked.stream;
        let host = matches!(stream.handle(), crate::backend::StreamHandle::Host);
        let plain = |a: &Array| {
            a.producer().is_none_or(|p| p == stream)
                && a.foreign_mem().is_none_or(|m| !m.needs_care())
        };
        let contiguous = self.spec().ensure_row_contiguous;
        if !self
            .inputs
            .iter()
            .all(|a| plain(a) && (!contiguous || a.is_row_contiguous()))
        {
            return Ok(None);
        }
        // A GPU output its stream does not produce is waited for after a
        // launch (see `device::dispatch`): not a launch alone.
        if !targets
            .list
            .iter()
            .all(|(_, t)| plain(t) && (host || t.producer().is_some()))
        {
            return Ok(None);
        }
        let variant = self.variant(&checked)?.into_arc();
        let mut outputs: SmallVec<[(usize, Layout); 2]> = SmallVec::new();
        for &(i, t) in &targets.list {
            outputs.push((i, Layout::of(t)?));
        }
        outputs.sort_by_key(|(i, _)| *i);
        Ok(Some(Rebindable {
            kernel: self.kernel.clone(),
            variant,
            inputs: self
                .inputs
                .iter()
                .map(|a| Layout::of(a))
                .collect::<Result<_>>()?,
            outputs: outputs.into_iter().map(|(_, l)| l).collect(),
            grid: checked.grid,
            threadgroup: checked.threadgroup,
            shared_mem_bytes: self.shared_mem_bytes,
            allow_overlap: targets.allow_overlap,
            donated: (0..self.outputs.len())
                .filter_map(|i| targets.donated_input(i).map(|j| (i, j)))
                .collect(),
            memory: Memory {
                addr: 0,
                len: 0,
                owner: Owner::Foreign(Box::new(ForeignMem::new(ForeignOwner::none(), None, false))),
            },
            stream: checked.stream.into_owned(),
        }))
    }
}

impl Rebindable {
    /// The stream it runs on.
    pub fn stream(&self) -> &Stream {
        &self.stream
    }

    /// The variant it runs.
    pub fn variant(&self) -> &Arc<Variant> {
        &self.variant
    }

    /// Launches with element 0 of input `i` at `inputs[i]` and of output
    /// `j` at `outputs[j]`, on the launch's stream.
    ///
    /// Checked here: the counts, each address (not null, aligned for its
    /// dtype, no wrap-around) and, unless the call allowed it, outputs that
    /// share memory with an input or another output: the errors a call
    /// with arrays at these addresses would give.
    ///
    /// # Safety
    ///
    /// Each address must be element 0 of memory of the launch's device laid
    /// out as the array in that position was when the launch was made
    /// (dtype, shape, strides), alive until the work queued now has run,
    /// and used by other work only in the order of the launch's stream;
    /// outputs must be writable. That is what an array over the memory
    /// would have promised to the call.
    pub unsafe fn run(&self, inputs: &[u64], outputs: &[u64]) -> Result<()> {
        if inputs.len() != self.inputs.len() || outputs.len() != self.outputs.len() {
            return Err(self.count_error(inputs.len(), outputs.len()));
        }
        let given = (self.inputs.iter().zip(inputs)).chain(self.outputs.iter().zip(outputs));
        for (i, (layout, &addr)) in given.enumerate() {
            check_address(
                addr,
                layout.dtype,
                layout.span,
                &layout.shape,
                &layout.strides,
            )
            .map_err(|e| self.argument_error(e, i))?;
        }
        if !self.allow_overlap {
            self.check_overlap(inputs, outputs)?;
        }
        let name = &self.kernel.spec().name;
        let function =
            super::capture::function_for(&self.variant, self.stream.device(), &self.stream, name)?;
        let mem = &self.memory;
        let (mut ins, mut outs) = (SmallVec::new(), SmallVec::new());
        args(&mut ins, &self.inputs, inputs, mem);
        args(&mut outs, &self.outputs, outputs, mem);
        self.launch(&function, &ins, &outs)
    }

    /// `error`, said of argument `i` (the inputs, then the outputs).
    #[cold]
    #[inline(never)]
    fn argument_error(&self, error: crate::Error, i: usize) -> crate::Error {
        let spec = self.kernel.spec();
        let (role, names, j) = match i.checked_sub(self.inputs.len()) {
            None => ("input", spec.input_names(), i),
            Some(j) => ("output", spec.output_names(), j),
        };
        let name = names.get(j).map_or("?", String::as_str);
        ArrayError::of_argument(error, &spec.name, &format_args!("{role} `{name}`"))
    }

    /// The error of a run given the wrong number of inputs or outputs.
    #[cold]
    #[inline(never)]
    fn count_error(&self, inputs: usize, outputs: usize) -> crate::Error {
        let spec = self.kernel.spec();
        let list = crate::codegen::spec::KernelSpec::list;
        if inputs != self.inputs.len() {
            return CallError::InputCount {
                kernel: spec.name.clone(),
                expected: self.inputs.len(),
                got: inputs,
                names: list(&spec.input_names),
            }
            .into();
        }
        CallError::OutputCount {
            kernel: spec.name.clone(),
            expected: self.outputs.len(),
            got: outputs,
            names: list(&spec.output_names),
        }
        .into()
    }

    fn launch(
        &self,
        function: &crate::backend::Function,
        inputs: &[ArgRef<'_>],
        outputs: &[ArgRef<'_>],
    ) -> Result<()> {
        let spec = self.kernel.spec();
        let desc = |bounds: u64| LaunchDesc {
            spec,
            function,
            inputs,
            outputs,
            grid: self.grid,
            threadgroup: self.threadgroup,
            shared_mem_bytes: self.shared_mem_bytes,
            stream: self.stream.handle(),
            iters: 1,
            bounds,
        };
        let device = self.stream.device();
        if spec.check_bounds {
            if self.stream.capturing()? {
                return Err(crate::error::CallError::Capturing {
                    kernel: spec.name.clone(),
                    what: "it checks bounds, and a checked launch is waited for on the host".into(),
                    advice: "run the kernel with bounds checks outside the capture, or capture \
                             it built without them",
                }
                .into());
            }
            // The caller's arrays: views checked, no guard regions.
            return crate::device::bounds::run(&self.stream, spec, inputs, outputs, &[], |b| {
                device.launch(&desc(b))
            });
        }
        device.launch(&desc(0))
    }

    /// Refuses outputs that share memory with an input or an earlier
    /// output, in the words of a call's check.
    fn check_overlap(&self, inputs: &[u64], outputs: &[u64]) -> Result<()> {
        let spec = self.kernel.spec();
        let ins = || self.inputs.iter().zip(inputs).map(|(l, &a)| l.bytes(a));
        let outs = || self.outputs.iter().zip(outputs).map(|(l, &a)| l.bytes(a));
        for (k, mine) in outs().enumerate() {
            let own = self.donated.iter().find(|(o, _)| *o == k).map(|(_, j)| *j);
            let reason = if let Some(j) = ins()
                .enumerate()
                .position(|(j, s)| Some(j) != own && bytes_overlap(s, mine))
            {
                shares_with_input(spec, j)
            } else if let Some(j) = outs().take(k).position(|s| bytes_overlap(s, mine)) {
                shares_with_output(spec, j)
            } else {
                continue;
            };
            return Err(CallError::OutputTarget {
                kernel: spec.name.clone(),
                output: spec.output_names.get(k).cloned().unwrap_or_default(),
                reason,
            }
            .into());
        }
        Ok(())
    }
}
