//! The seam between the generic core and a device: compile, load, memory,
//! launch. Every backend folder has the same files for the same jobs
//! (`compile.rs`, `load.rs`, `memory.rs`, `launch.rs`).

pub(crate) mod cpu;
#[cfg(feature = "cuda")]
pub(crate) mod cuda;

use std::any::Any;
use std::mem::ManuallyDrop;
use std::sync::Arc;

use smallvec::SmallVec;

use crate::array::{shape_from_extents, Array, Place};
use crate::codegen::Dialect;
use crate::device::Stream;
use crate::dtype::DType;
use crate::error::{CallError, CompileError, Result};
use crate::kernel::call::{init_pattern, OutputSpec};
use crate::kernel::outputs::Outputs;
use crate::kernel::spec::KernelSpec;
use crate::kernel::variant::Variant;

/// A loaded module (a shared library, a CUDA module). Kept alive by the
/// device's kernel cache for the device's lifetime and by every function
/// resolved from it, so work already queued never runs unloaded code.
pub(crate) type Module = Arc<dyn Any + Send + Sync>;

/// A backend's own stream state. An enum, not a trait object: the hot
/// path reaches a CUDA stream with one match instead of a virtual
/// `type_id` call and a second pointer.
pub(crate) enum StreamHandle {
    /// CPU launches run to completion before they return: nothing to hold.
    Host,
    /// A CUDA stream and its block cache.
    #[cfg(feature = "cuda")]
    Cuda(Arc<cuda::CudaStream>),
}

/// A function resolved from a loaded module (it keeps its module alive).
/// Variants keep the one for their first device, so launches never look
/// functions up; an enum for the same reason as [`StreamHandle`].
#[derive(Clone)]
pub(crate) enum Function {
    /// An entry point of a loaded shared library.
    Cpu(Arc<cpu::CpuFunction>),
    /// A `CUfunction`.
    #[cfg(feature = "cuda")]
    Cuda(Arc<cuda::CudaFunction>),
}

impl Function {
    /// The CPU entry point, if this is one.
    #[allow(unreachable_patterns)] // Without CUDA there is one variant.
    pub(crate) fn cpu(&self) -> Option<&cpu::CpuFunction> {
        match self {
            Function::Cpu(f) => Some(f),
            _ => None,
        }
    }

    /// The CUDA function, if this is one.
    #[cfg(feature = "cuda")]
    pub(crate) fn cuda(&self) -> Option<&cuda::CudaFunction> {
        match self {
            Function::Cuda(f) => Some(f),
            _ => None,
        }
    }
}

#[cfg(feature = "cuda")]
impl StreamHandle {
    /// The CUDA stream, if this is one.
    pub(crate) fn cuda(&self) -> Option<&Arc<cuda::CudaStream>> {
        match self {
            StreamHandle::Cuda(s) => Some(s),
            StreamHandle::Host => None,
        }
    }
}

/// The limits a call is checked against before it reaches the backend.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Most threads in one threadgroup (product of the three extents).
    pub max_threads_per_group: u64,
    /// Most threads per group along x, y, z.
    pub max_group_dims: [u64; 3],
    /// Most threadgroups along x, y, z.
    pub max_groups: [u64; 3],
    /// Dynamic shared memory per group, in bytes (0: none).
    pub max_shared_bytes: u64,
}

/// Device memory: an address in the backend's address space, its size,
/// where it lives, and the owner that gives it back, in one allocation.
/// Arrays share it through a [`SharedBuffer`], so a kernel's output costs one
/// heap allocation and one shared count (its stream's, in `place`), and
/// views of it none.
///
/// The memory was allocated in the order of `place`'s stream
/// ([`Place::stream`]); an owner that recycles memory per stream finds
/// that stream there when it is released.
pub(crate) struct Buffer {
    /// Host pointer (CPU) or `CUdeviceptr` (CUDA), as an integer.
    pub(crate) addr: u64,
    /// Size in bytes.
    pub(crate) len: usize,
    /// The device, and the stream whose queued work writes the memory.
    pub(crate) place: Place,
    /// Gives the memory back when the buffer dies.
    pub(crate) owner: Owner,
}

/// A buffer shared by arrays.
///
/// `triomphe`'s `Arc` keeps no weak count, so the last owner frees a
/// buffer with one atomic operation instead of two. And when the last owner
/// of a CUDA output goes, the CUDA backend may keep the whole buffer (heap
/// block, device block, stream) as its thread's spare, for the thread's
/// next output of that stream and size, instead of freeing it and
/// allocating it again a moment later (see `cuda::memory::recycle`).
pub(crate) struct SharedBuffer(ManuallyDrop<triomphe::Arc<Buffer>>);

impl SharedBuffer {
    pub(crate) fn new(buffer: Buffer) -> SharedBuffer {
        SharedBuffer::from_arc(triomphe::Arc::new(buffer))
    }

    #[inline]
    pub(crate) fn from_arc(arc: triomphe::Arc<Buffer>) -> SharedBuffer {
        SharedBuffer(ManuallyDrop::new(arc))
    }
}

impl Clone for SharedBuffer {
    fn clone(&self) -> SharedBuffer {
        SharedBuffer::from_arc(triomphe::Arc::clone(&self.0))
    }
}

impl std::ops::Deref for SharedBuffer {
    type Target = Buffer;
    #[inline]
    fn deref(&self) -> &Buffer {
        &self.0
    }
}

impl Drop for SharedBuffer {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: the `Arc` is taken once, here, and the field is not used
        // after: this is the value's drop.
        let arc = unsafe { ManuallyDrop::take(&mut self.0) };
        #[cfg(feature = "cuda")]
        if let Owner::Device(_) = arc.owner {
            return cuda::recycle(arc);
        }
        drop(arc)
    }
}

/// A backend's owner of one allocation: an enum, so that releasing it and
/// looking at it on the launch path are plain matches.
pub(crate) enum Owner {
    /// Host memory, freed when dropped.
    #[allow(dead_code)] // Held for its `Drop`, which frees the memory.
    Host(cpu::HostMem),
    /// A device block, given back to its stream's cache.
    #[cfg(feature = "cuda")]
    Device(cuda::DeviceMem),
}

#[cfg(feature = "cuda")]
impl Buffer {
    /// The device block behind this buffer, if it is one.
    pub(crate) fn device_mem(&self) -> Option<&cuda::DeviceMem> {
        match &self.owner {
            Owner::Device(mem) => Some(mem),
            Owner::Host(_) => None,
        }
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        match &mut self.owner {
            Owner::Host(_) => {}
            #[cfg(feature = "cuda")]
            Owner::Device(mem) => mem.release(self.addr, &self.place),
        }
    }
}

/// What a backend needs to launch one prepared call whose outputs exist.
#[allow(dead_code)] // `variant` and `shared_mem_bytes` are read by the CUDA backend.
pub(crate) struct LaunchJob<'a> {
    pub(crate) spec: &'a KernelSpec,
    pub(crate) variant: &'a Variant,
    pub(crate) function: &'a Function,
    /// Inputs as the kernel will see them (already made contiguous where the
    /// spec asks for it).
    pub(crate) inputs: &'a [&'a Array],
    /// Freshly allocated (and, with `init_value`, filled) outputs.
    pub(crate) outputs: &'a [Array],
    pub(crate) grid: [u32; 3],
    pub(crate) threadgroup: [u32; 3],
    pub(crate) shared_mem_bytes: u32,
}

/// One call's device work: allocate its outputs (filled with `init_value`
/// when given) in the order of a stream, then launch. A backend does all of
/// it in one call ([`Backend::dispatch`]), so a warm call crosses the
/// `dyn Backend` seam once and finds its stream once.
pub(crate) struct Dispatch<'a> {
    pub(crate) spec: &'a KernelSpec,
    pub(crate) variant: &'a Variant,
    pub(crate) function: &'a Function,
    /// As in [`LaunchJob::inputs`].
    pub(crate) inputs: &'a [&'a Array],
    /// Shape and dtype of each output, checked.
    pub(crate) outputs: &'a [OutputSpec],
    /// Checked to fit every output's dtype.
    pub(crate) init_value: Option<f64>,
    pub(crate) grid: [u32; 3],
    pub(crate) threadgroup: [u32; 3],
    pub(crate) shared_mem_bytes: u32,
}

impl<'a> Dispatch<'a> {
    /// The launch of this call, once its outputs exist.
    pub(crate) fn job<'b>(&'b self, outputs: &'b [Array]) -> LaunchJob<'b> {
        LaunchJob {
            spec: self.spec,
            variant: self.variant,
            function: self.function,
            inputs: self.inputs,
            outputs,
            grid: self.grid,
            threadgroup: self.threadgroup,
            shared_mem_bytes: self.shared_mem_bytes,
        }
    }

    /// Allocates (in the order of `stream`) and fills the outputs, into
    /// `outputs`, with a backend's own functions; generic over them, so each
    /// backend's copy calls its own directly. An allocation that fails is
    /// reported for its output.
    #[inline]
    pub(crate) fn new_outputs(
        &self,
        stream: &Stream,
        outputs: &mut Outputs,
        mut alloc: impl FnMut(usize, &Stream) -> Result<SharedBuffer>,
        mut fill: impl FnMut(&Buffer, &[u8]) -> Result<()>,
    ) -> Result<()> {
        for (i, (extents, dtype)) in self.outputs.iter().enumerate() {
            let shape = shape_from_extents(extents);
            let bytes = shape.iter().product::<usize>() * dtype.size();
            let buffer = match alloc(bytes, stream) {
                Ok(buffer) => buffer,
                Err(e) => return Err(self.output_alloc_error(i, bytes, stream, e)),
            };
            if let Some(v) = self.init_value {
                let pattern: SmallVec<[u8; 8]> =
                    init_pattern(v, *dtype).expect("checked when the call was planned");
                fill(&buffer, &pattern)?;
            }
            outputs.push(Array::contiguous(buffer, shape, *dtype));
        }
        Ok(())
    }

    #[cold]
    #[inline(never)]
    fn output_alloc_error(
        &self,
        output: usize,
        bytes: usize,
        stream: &Stream,
        e: crate::Error,
    ) -> crate::Error {
        CallError::OutputAlloc {
            kernel: self.spec.name.clone(),
            output: self.spec.output_names[output].clone(),
            bytes,
            device: stream.device().label().to_string(),
            reason: e.to_string(),
        }
        .into()
    }
}

/// One device's implementation. Object safe: a `Device` holds a
/// `Box<dyn Backend>`.
pub(crate) trait Backend: Send + Sync + 'static {
    /// `cpu` or `cuda`.
    fn name(&self) -> &'static str;
    /// The dialect its sources are generated in.
    fn dialect(&self) -> Dialect;
    /// The device's label in messages (`cpu`, `cuda:0`).
    fn label(&self) -> &str;
    /// A description for people (model, cores).
    fn description(&self) -> String;
    /// Whether arrays and kernels of this dtype are supported.
    fn supports(&self, dtype: DType) -> bool;
    /// Launch limits.
    fn limits(&self) -> &Limits;
    /// The compile options part of the module key: compiler identity and
    /// version, flags, target architecture or CPU features.
    fn options(&self) -> &str;
    /// Everything besides the source that changes the artifact, in full
    /// (no short hashes): the artifact store hashes it into its keys, which
    /// must not collide across compilers, flags or targets for as long as
    /// entries live on disk. Found once per process. Defaults to
    /// [`Backend::options`], which is enough only when that already holds
    /// the full compiler version and target.
    fn artifact_identity(&self) -> &str {
        self.options()
    }
    /// SIMD (warp) width reported to bodies.
    fn simd_width(&self) -> u32;
    /// Compiles a variant's source into an artifact (shared library bytes,
    /// cubin).
    fn compile(&self, kernel: &str, variant: &Variant) -> Result<Vec<u8>, CompileError>;
    /// Loads an artifact into a module.
    fn load(
        &self,
        kernel: &str,
        variant: &Variant,
        artifact: &[u8],
    ) -> Result<Module, CompileError>;
    /// Resolves a function of a loaded module.
    fn function(&self, kernel: &str, module: &Module, name: &str)
        -> Result<Function, CompileError>;

    /// A new stream.
    fn new_stream(&self) -> Result<StreamHandle>;
    /// Waits until the stream's work is done.
    fn synchronize(&self, stream: &StreamHandle) -> Result<()>;
    /// Waits at most `timeout` for the stream's work; a backend whose
    /// launches run to completion before they return has nothing to wait
    /// for. A backend that gives up marks itself unusable.
    fn synchronize_timeout(
        &self,
        stream: &StreamHandle,
        timeout: std::time::Duration,
    ) -> Result<()> {
        let _ = timeout;
        self.synchronize(stream)
    }
    /// Allocates `len` bytes, contents unspecified, for use in the order of
    /// `place`'s stream (a GPU backend may hand out memory whose last user
    /// was earlier work on that stream).
    fn alloc(&self, len: usize, place: Place) -> Result<SharedBuffer>;
    /// Allocates and fills from host bytes, in the order of `place`'s
    /// stream; the copy has finished when this returns.
    fn upload(&self, bytes: &[u8], place: Place) -> Result<SharedBuffer>;
    /// Copies `len` bytes at `offset` out to the host (waits for `stream`).
    fn download(
        &self,
        buf: &Buffer,
        offset: usize,
        len: usize,
        stream: &StreamHandle,
    ) -> Result<Vec<u8>>;
    /// Repeats `pattern` over the whole buffer, in stream order.
    fn fill(&self, buf: &Buffer, pattern: &[u8], stream: &StreamHandle) -> Result<()>;
    /// A row-contiguous copy of a strided array, in stream order.
    fn make_contiguous(&self, src: &Array, dst: &Buffer, stream: &StreamHandle) -> Result<()>;
    /// Allocates a call's outputs into `outputs` (empty) and launches it
    /// (on a GPU: enqueues it) on `stream`. The caller owns the outputs'
    /// slot: `Outputs` holds arrays inline, and returning it by value
    /// through every layer would copy it at each.
    fn dispatch(&self, call: &Dispatch<'_>, stream: &Stream, outputs: &mut Outputs) -> Result<()>;
    /// Launches the same job `iters` times with its arguments marshalled
    /// once: the backend's own floor, which benchmarks compare dispatch to.
    fn launch_raw(&self, job: &LaunchJob<'_>, stream: &StreamHandle, iters: u32) -> Result<()>;
}
