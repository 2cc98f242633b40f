//! The seam between the generic core and a device: compile, load, memory,
//! launch. Every backend folder has the same files for the same jobs
//! (`compile.rs`, `load.rs`, `memory.rs`, `launch.rs`).

pub(crate) mod cpu;
#[cfg(feature = "cuda")]
pub(crate) mod cuda;

use std::any::Any;
use std::sync::Arc;

use crate::array::{Array, Place};
use crate::codegen::Dialect;
use crate::dtype::DType;
use crate::error::{CompileError, Result};
use crate::kernel::spec::KernelSpec;
use crate::kernel::variant::{Function, Variant};

/// A loaded module (a shared library, a CUDA module). Kept alive by the
/// device's kernel cache for the device's lifetime and by every function
/// resolved from it, so work already queued never runs unloaded code.
pub(crate) type Module = Arc<dyn Any + Send + Sync>;

/// A backend's own stream state.
pub(crate) type StreamHandle = Arc<dyn Any + Send + Sync>;

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
/// Arrays share it through an `Arc<Buffer>` (the owner unsized to
/// `dyn Memory`), so a kernel's output costs one heap allocation and one
/// shared count (its stream's, in `place`), and views of it none.
///
/// The memory was allocated in the order of `place`'s stream
/// ([`Place::stream`]); an owner that recycles memory per stream finds
/// that stream there when it is released.
pub(crate) struct Buffer<O: ?Sized + Memory = dyn Memory> {
    /// Host pointer (CPU) or `CUdeviceptr` (CUDA), as an integer.
    pub(crate) addr: u64,
    /// Size in bytes.
    pub(crate) len: usize,
    /// The device, and the stream whose queued work writes the memory.
    pub(crate) place: Place,
    /// Gives the memory back when the buffer dies.
    pub(crate) owner: O,
}

/// A backend's owner of one allocation.
pub(crate) trait Memory: Any + Send + Sync {
    /// Called once, when the buffer dies, before the owner is dropped.
    fn release(&mut self, _addr: u64, _place: &Place) {}
    /// For backends that look at their own owners (`Any` upcast).
    fn as_any(&self) -> &dyn Any;
}

impl<O: ?Sized + Memory> Drop for Buffer<O> {
    fn drop(&mut self) {
        self.owner.release(self.addr, &self.place);
    }
}

/// What a backend needs to launch one prepared call.
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
    /// Allocates `len` bytes, contents unspecified, for use in the order of
    /// `place`'s stream (a GPU backend may hand out memory whose last user
    /// was earlier work on that stream).
    fn alloc(&self, len: usize, place: Place) -> Result<Arc<Buffer>>;
    /// Allocates and fills from host bytes, in the order of `place`'s
    /// stream; the copy has finished when this returns.
    fn upload(&self, bytes: &[u8], place: Place) -> Result<Arc<Buffer>>;
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
    /// Launches (on a GPU: enqueues) a prepared call.
    fn launch(&self, job: &LaunchJob<'_>, stream: &StreamHandle) -> Result<()>;
    /// Launches the same job `iters` times with its arguments marshalled
    /// once: the backend's own floor, which benchmarks compare dispatch to.
    fn launch_raw(&self, job: &LaunchJob<'_>, stream: &StreamHandle, iters: u32) -> Result<()>;
}
