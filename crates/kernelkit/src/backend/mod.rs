//! The seam between the generic core and a device: compile, load, memory,
//! launch. Every backend folder has the same files for the same jobs
//! (`compile`, `load`, `memory`, `launch`): `cpu/` (the system C++
//! compiler), `cuda/` (NVRTC and the driver API, feature `cuda`) and
//! `null/`, which runs nothing and records launches: it makes the generic
//! core testable without a compiler. Beside them, what every backend
//! shares: `deps` (what a compile read besides its source, each file with
//! a hash), `foreign` (memory another library owns: what keeps it
//! alive, whether a scope may still use it) and `copy` (kernelkit's own
//! strided-copy kernel for GPUs, whose module the floors above resolve).
//!
//! **What this floor may import:** `dtype`, `error`, `config`, `sync`,
//! `stats` and `codegen` (the generated source's vocabulary: dialects,
//! the spec's layout flags). Nothing from `cache`, `device`, `array` or
//! `kernel`: a backend takes *borrowed descriptions* — a compile job
//! ([`CompileJob`]), memory ([`Memory`]) and the stream it is ordered on
//! ([`StreamHandle`]), one launch ([`LaunchDesc`]) — and never sees an
//! `Array`, a `Device` or a `Variant`. The floors above build those
//! descriptions; `tests/floors.rs` checks the rule.

pub(crate) mod copy;
pub(crate) mod cpu;
#[cfg(feature = "cuda")]
pub(crate) mod cuda;
pub(crate) mod deps;
pub(crate) mod foreign;
pub(crate) mod null;

use std::any::Any;
use std::sync::Arc;

use crate::codegen::spec::KernelSpec;
use crate::codegen::Dialect;
use crate::dtype::DType;
use crate::error::{CompileError, Result};

/// A loaded module (a shared library, a CUDA module). Kept alive by the
/// device's kernel cache until it unloads it (see `cache::kernel_cache`),
/// by the callers' function slots and the launches reading them (see
/// `cache::loaded`), and, on the CPU, by every function resolved from it;
/// a CUDA module's drop waits for queued work, so work already queued
/// never runs unloaded code.
pub(crate) type Module = Arc<dyn Any + Send + Sync>;

/// Tells `module`'s backend that the cache is letting it go; false when
/// the backend keeps it (a CUDA module a captured graph launches): then it
/// stays loaded. Decided once: after a true, no capture can pin it.
pub(crate) fn retire_module(module: &Module) -> bool {
    #[cfg(feature = "cuda")]
    if let Some(cuda) = module.downcast_ref::<cuda::CudaModule>() {
        return cuda.retire();
    }
    let _ = module;
    true
}

/// Work a backend captured from a stream once, to launch again as a
/// whole (a CUDA graph): launching it costs one call however many kernels
/// it holds, and its kernels run back to back. Autotuning times batches
/// of a configuration's launches this way. Uninhabited without a GPU
/// backend.
pub(crate) enum Replay {
    #[cfg(feature = "cuda")]
    Cuda(cuda::CudaReplay),
}

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

/// A function resolved from a loaded module. Variants keep one per device
/// (`cache::loaded::FunctionSlots`, beside the module that holds its
/// code), so launches never look functions up; a CPU function also keeps
/// its library, a CUDA or null function does not keep its module (see
/// `cuda::load`). An enum for the same reason as [`StreamHandle`].
#[derive(Clone)]
pub(crate) enum Function {
    /// An entry point of a loaded shared library.
    Cpu(Arc<cpu::CpuFunction>),
    /// A `CUfunction`.
    #[cfg(feature = "cuda")]
    Cuda(Arc<cuda::CudaFunction>),
    /// A function of a null module: its name, for the launch records.
    Null(Arc<null::NullFunction>),
}

impl Function {
    /// The generated function's name (the kernel's and the variant's), for
    /// profilers' ranges.
    pub(crate) fn name(&self) -> &str {
        match self {
            Function::Cpu(f) => &f.name,
            #[cfg(feature = "cuda")]
            Function::Cuda(f) => &f.name,
            Function::Null(f) => &f.name,
        }
    }

    /// The CPU entry point, if this is one.
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

/// Memory a backend handed out: an address in its address space, a size,
/// and the owner that gives it back. The floor above wraps it with the
/// stream whose work writes it (`array::Storage`) in one heap block, so a
/// kernel's output costs one allocation and one shared count.
pub(crate) struct Memory {
    /// Host pointer (CPU) or `CUdeviceptr` (CUDA), as an integer.
    pub(crate) addr: u64,
    /// Size in bytes.
    pub(crate) len: usize,
    /// Gives the memory back; see [`Memory::release`].
    pub(crate) owner: Owner,
}

/// A backend's owner of one allocation: an enum, so that releasing it and
/// looking at it on the launch path are plain matches.
pub(crate) enum Owner {
    /// Host memory, freed when dropped.
    #[allow(dead_code)] // Held for its `Drop`, which frees the memory.
    Host(cpu::HostMem),
    /// A device block, given back to its home stream's cache.
    #[cfg(feature = "cuda")]
    Device(cuda::DeviceMem),
    /// A graph allocation (made while its stream was being captured into a
    /// CUDA graph): freed with the driver, never cached (see
    /// `cuda::graph`).
    #[cfg(feature = "cuda")]
    Graph(cuda::GraphMem),
    /// Memory another library owns: never cached, never freed here (see
    /// [`foreign`]).
    Foreign(Box<foreign::ForeignMem>),
}

impl Memory {
    /// Gives the memory back, in the order of `home`, the stream it was
    /// allocated for (a device block returns to that stream's cache once
    /// every other stream's use of it is ordered before the stream's next
    /// work). Called once, when the last array of the memory goes.
    #[inline]
    pub(crate) fn release(&mut self, home: &StreamHandle) {
        match &mut self.owner {
            Owner::Host(_) => {
                let _ = home;
            }
            #[cfg(feature = "cuda")]
            Owner::Device(mem) => mem.release(self.addr, home),
            #[cfg(feature = "cuda")]
            Owner::Graph(mem) => mem.release(self.addr, home),
            Owner::Foreign(mem) => mem.release(home),
        }
    }

    /// The foreign memory behind this memory, if another library owns it.
    #[inline]
    pub(crate) fn foreign(&self) -> Option<&foreign::ForeignMem> {
        match &self.owner {
            Owner::Foreign(mem) => Some(mem),
            _ => None,
        }
    }

    /// Records that work on `stream` uses this memory (CUDA: a block or
    /// foreign memory used off its home stream is ordered before the home
    /// stream's next work when it goes).
    #[cfg(feature = "cuda")]
    #[inline]
    pub(crate) fn used_on(&self, stream: &Arc<cuda::CudaStream>) {
        match &self.owner {
            Owner::Device(mem) => mem.used_on(stream),
            Owner::Graph(mem) => mem.used_on(stream),
            Owner::Foreign(mem) => mem.used_on(stream),
            Owner::Host(_) => {}
        }
    }

    /// The size class this memory can be reused for whole by the thread
    /// that drops it (a *spare*: see `array::storage`), if the backend
    /// allows it: a small device block. Host memory and graph allocations
    /// are never kept.
    #[inline]
    pub(crate) fn spare_class(&self) -> Option<usize> {
        match &self.owner {
            #[cfg(feature = "cuda")]
            Owner::Device(mem) => mem.spare_class(),
            _ => None,
        }
    }

    /// Whether work on a stream other than the memory's home used it.
    /// Read after the caller found itself the memory's only owner (see
    /// `array::storage::alone_at_home` for why the order matters).
    #[inline]
    pub(crate) fn used_elsewhere(&self) -> bool {
        match &self.owner {
            #[cfg(feature = "cuda")]
            Owner::Device(mem) => mem.used_elsewhere(),
            _ => false,
        }
    }

    /// Makes the spare memory fit a new output of `len` bytes (its class
    /// was checked to match).
    #[inline]
    pub(crate) fn reuse(&mut self, len: usize) {
        self.len = len;
    }
}

impl StreamHandle {
    /// The spare size class of an output of `len` bytes on this stream:
    /// `None` when outputs of this stream are never kept as spares (host
    /// streams, streams that cache no blocks, large outputs).
    #[inline]
    pub(crate) fn spare_class(&self, len: usize) -> Option<usize> {
        match self {
            StreamHandle::Host => {
                let _ = len;
                None
            }
            #[cfg(feature = "cuda")]
            StreamHandle::Cuda(s) => s.spare_class(len),
        }
    }
}

/// A stream that another library made, for [`Backend::wrap_stream`].
pub(crate) enum ForeignStream {
    /// A raw `CUstream` the caller keeps alive (the public constructor is
    /// `unsafe` and says so).
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    Raw(*mut std::ffi::c_void),
    /// A cudarc stream, kept alive by the wrapper.
    #[cfg(feature = "cuda")]
    Cudarc(Arc<cudarc::driver::CudaStream>),
}

/// A source to compile: what a backend's compiler and loader need of a
/// variant, borrowed.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CompileJob<'a> {
    /// The kernel's name, for messages.
    pub(crate) kernel: &'a str,
    /// The generated function's name.
    pub(crate) function: &'a str,
    /// The complete generated source.
    pub(crate) source: &'a str,
    /// The source, shared, for errors that carry it.
    pub(crate) shared_source: &'a Arc<str>,
}

/// One argument of a launch as the backend reads it: where element 0 is,
/// the memory it lies in (a launch records its use on other streams), and
/// its layout in elements.
#[derive(Clone, Copy)]
pub(crate) struct ArgRef<'a> {
    /// The address of element 0 (the memory's address plus the offset).
    pub(crate) addr: u64,
    /// Read by the CUDA backend (uses on other streams).
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub(crate) mem: &'a Memory,
    pub(crate) dtype: DType,
    pub(crate) shape: &'a [usize],
    pub(crate) strides: &'a [isize],
}

impl ArgRef<'_> {
    /// The number of elements.
    #[inline]
    pub(crate) fn size(&self) -> usize {
        self.shape.iter().product()
    }
}

/// One launch, borrowed: the function, its arguments in the generator's
/// order (inputs as the kernel sees them — already made contiguous where
/// the spec asks — then outputs), the grid in threads and the threadgroup,
/// checked against the device's limits, and the stream.
pub(crate) struct LaunchDesc<'a> {
    /// Which inputs pass their layout, and the names for messages.
    pub(crate) spec: &'a KernelSpec,
    pub(crate) function: &'a Function,
    pub(crate) inputs: &'a [ArgRef<'a>],
    pub(crate) outputs: &'a [ArgRef<'a>],
    pub(crate) grid: [u32; 3],
    pub(crate) threadgroup: [u32; 3],
    /// Dynamic shared memory per threadgroup (CUDA; the CPU has none).
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub(crate) shared_mem_bytes: u32,
    /// Read by the CUDA backend (CPU and null launches order nothing).
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub(crate) stream: &'a StreamHandle,
    /// How many times to launch (arguments marshalled once): 1, or more
    /// for the benchmark of the backend's own floor.
    pub(crate) iters: u32,
    /// The address, on the device, of the bounds block of a kernel that
    /// checks bounds (`codegen::bounds`: the record, then one span per
    /// argument), passed as its last parameter; 0 for other kernels.
    pub(crate) bounds: u64,
}

/// What a compile made: the artifact, and what it read besides its source.
pub(crate) struct Compiled {
    /// Shared library bytes, cubin or PTX.
    pub(crate) artifact: Vec<u8>,
    /// The files the compile read (see [`deps`]), or why they cannot be
    /// known (a computed `#include`, a file changed during the compile, no
    /// dependency output): such an artifact is not stored, since no later
    /// process could check it.
    pub(crate) dependencies: Result<deps::Dependencies, String>,
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
    /// Everything besides the source that changes the artifact, in full
    /// (no short hashes): compiler identity and version, flags, target
    /// architecture or CPU features. The module key hashes it, and keys
    /// must not collide across compilers, flags or targets for as long as
    /// artifacts live on disk. Found once per process.
    fn identity(&self) -> &str;
    /// What its artifacts are for, as entries name it (part of
    /// [`Backend::identity`] already): `sm_90a` (code for that chip),
    /// `compute_90` (PTX, finished by the driver), `x86-64-v2`, `native`.
    fn target(&self) -> &str;
    /// Other (target, identity) pairs whose artifacts this backend loads,
    /// best first, asked when no tier holds the artifact of
    /// [`Backend::identity`]: PTX of an older virtual architecture on CUDA
    /// (`compute_90`), portable levels the CPU runs (`x86-64-v3`).
    fn fallback_identities(&self) -> &[(String, String)] {
        &[]
    }
    /// SIMD (warp) width reported to bodies.
    fn simd_width(&self) -> u32;
    /// Compiles a source into an artifact (shared library bytes, cubin),
    /// with the list of files the compile read.
    fn compile(&self, job: &CompileJob<'_>) -> Result<Compiled, CompileError>;
    /// Loads an artifact into a module.
    fn load(&self, job: &CompileJob<'_>, artifact: &[u8]) -> Result<Module, CompileError>;
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
    /// `home` (a GPU backend may hand out memory whose last user was
    /// earlier work on that stream).
    fn alloc(&self, len: usize, home: &StreamHandle) -> Result<Memory>;
    /// [`Backend::alloc`], never a block a cache of this process kept for
    /// reuse (autotuning's scratch arrays: a kernel's time into a reused
    /// block was seen to differ from its time into new memory, and the
    /// timing must not depend on which block came back).
    fn alloc_fresh(&self, len: usize, home: &StreamHandle) -> Result<Memory> {
        self.alloc(len, home)
    }
    /// Why this device cannot allocate memory on a stream that is being
    /// captured into a CUDA graph; `None` when it can
    /// ([`Backend::alloc_in_graph`]). Asked only of captured streams, which
    /// only GPU backends have.
    fn graph_alloc_refusal(&self) -> Option<&'static str> {
        Some("this device has no CUDA graphs")
    }
    /// Allocates `len` bytes on `home`, a stream that is being captured
    /// into a CUDA graph, as a *graph allocation*: an allocation node of
    /// the graph, at an address fixed for the graph's life, never taken
    /// from or given back to a cache of ordinary blocks. Freed (a free
    /// node while `home` still captures, a real free after) when released.
    fn alloc_in_graph(&self, len: usize, home: &StreamHandle) -> Result<Memory> {
        let _ = (len, home);
        Err(crate::error::DeviceError::Unavailable {
            device: self.label().to_string(),
            reason: "this device has no CUDA graphs".into(),
        }
        .into())
    }
    /// Allocates and fills from host bytes, in the order of `home`; the
    /// copy has finished when this returns.
    fn upload(&self, bytes: &[u8], home: &StreamHandle) -> Result<Memory>;
    /// [`Backend::upload`] into memory from [`Backend::alloc_fresh`].
    fn upload_fresh(&self, bytes: &[u8], home: &StreamHandle) -> Result<Memory> {
        self.upload(bytes, home)
    }
    /// Copies `len` bytes at `offset` out to the host (waits for `stream`).
    fn download(
        &self,
        mem: &Memory,
        offset: usize,
        len: usize,
        stream: &StreamHandle,
    ) -> Result<Vec<u8>>;
    /// Repeats `pattern` over the whole memory, in stream order.
    fn fill(&self, mem: &Memory, pattern: &[u8], stream: &StreamHandle) -> Result<()>;
    /// The kernel [`Backend::gather`] launches, when it launches one (a
    /// GPU's [`copy::STRIDED_COPY`]); `None` for backends that copy on the
    /// host. The floors above resolve its module like a variant's (the
    /// tiers, bundles, the JIT policy) and pass the entry point for the
    /// element size ([`copy::ENTRIES`]) to `gather`.
    fn copy_kernel(&self) -> Option<&'static copy::BuiltinKernel> {
        None
    }
    /// Copies a strided argument into `dst`, row-major, in stream order,
    /// with `function`: the entry point of [`Backend::copy_kernel`] for
    /// `src`'s element size, resolved by the floor above (`None` when the
    /// backend names no copy kernel; a backend that needs one and gets
    /// none refuses).
    fn gather(
        &self,
        src: &ArgRef<'_>,
        dst: &Memory,
        stream: &StreamHandle,
        function: Option<&Function>,
    ) -> Result<()>;
    /// Launches (on a GPU: enqueues) one call whose outputs exist.
    fn launch(&self, launch: &LaunchDesc<'_>) -> Result<()>;
    /// How long the work `run` queues on `stream` takes, after the work
    /// `before` queues (untimed): GPU backends time it on the stream itself
    /// (events recorded around it); the default, for backends whose
    /// launches finish before they return (the CPU), is the wall clock
    /// between two waits for the stream. Autotuning compares
    /// configurations with it.
    fn time_on(
        &self,
        stream: &StreamHandle,
        before: &mut dyn FnMut() -> Result<()>,
        run: &mut dyn FnMut() -> Result<()>,
    ) -> Result<std::time::Duration> {
        before()?;
        self.synchronize(stream)?;
        let started = std::time::Instant::now();
        run()?;
        self.synchronize(stream)?;
        Ok(started.elapsed())
    }
    /// The work `run` queues on `stream` captured, not run, to launch again
    /// with [`Backend::replay_on`]; `None` where the backend (or its
    /// driver) has no such thing, and then nothing was queued or run.
    /// `stream` must be a private stream of the caller's: nothing else may
    /// queue on it meanwhile. A capture made this way does not pin the
    /// modules of what it launches: its caller holds their functions for
    /// as long as it keeps the replay.
    fn capture_on(
        &self,
        stream: &StreamHandle,
        run: &mut dyn FnMut() -> Result<()>,
    ) -> Result<Option<Replay>> {
        let _ = (stream, run);
        Ok(None)
    }
    /// Queues `replay`'s work on `stream` (any stream of the device that
    /// captured it).
    fn replay_on(&self, replay: &Replay, stream: &StreamHandle) -> Result<()> {
        let _ = stream;
        match *replay {
            #[cfg(feature = "cuda")]
            Replay::Cuda(_) => Err(crate::error::DeviceError::Driver {
                device: self.name().to_string(),
                operation: "cuGraphLaunch",
                reason: "this backend did not capture it".into(),
            }
            .into()),
        }
    }
    /// What a tuning measured on this device depends on (the model, its
    /// compute capability and driver on a GPU; the compiler identity and
    /// CPU features on the CPU): a tuning record made where this differs
    /// is not used.
    fn tuning_target(&self) -> String {
        format!(
            "{} (compiler identity {:016x})",
            self.name(),
            xxhash_rust::xxh3::xxh3_64(self.identity().as_bytes())
        )
    }
    /// A stream of this device that another library made: never destroyed
    /// by kernelkit. Only GPU backends have such streams.
    fn wrap_stream(&self, stream: ForeignStream) -> Result<StreamHandle> {
        let _ = stream;
        Err(crate::error::DeviceError::Unavailable {
            device: self.label().to_string(),
            reason: "this device has no streams of other libraries to wrap".into(),
        }
        .into())
    }
    /// Checks that `len` bytes at `addr`, memory another library owns, can
    /// be this device's (CUDA: the driver says which device an address
    /// belongs to). Host backends take any address: their memory is the
    /// process's.
    fn check_foreign(&self, addr: u64, len: usize) -> Result<()> {
        let _ = (addr, len);
        Ok(())
    }
    /// Records that work on `stream` uses `mem` (an output written into an
    /// array the call did not allocate): see [`Memory::used_on`].
    fn note_use(&self, mem: &Memory, stream: &StreamHandle) {
        let _ = (mem, stream);
    }
    /// Modules that the device let go and that wait, still loaded, for the
    /// work that may run them (CUDA's unloads wait for fences, see
    /// `cuda::unload`; other backends unload at once).
    fn pending_unloads(&self) -> u64 {
        0
    }
    /// The launches this backend recorded instead of running them: the
    /// null backend's; `None` for backends that run kernels.
    fn launch_log(&self) -> Option<&null::LaunchLog> {
        None
    }
}
