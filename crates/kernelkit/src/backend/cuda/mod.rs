//! The CUDA backend: NVRTC compiles each variant to a cubin for the device's
//! own architecture, the driver API (through cudarc's raw bindings, loaded
//! at run time) loads and launches it.
//!
//! The jobs every backend has, in the files the CPU backend has for them:
//! - `compile`: NVRTC, its options and the architecture, where compiles
//!   run (this process or a compile worker), the precompiled prelude and
//!   kernelkit's own `#include` search; its `mod.rs` states the policy.
//! - `load`: modules and functions (resolved once, kept by the variant).
//! - `memory`: allocations, uploads, downloads, fills.
//! - `launch`: arguments marshalled on the stack, one `cuLaunchKernel`.
//!
//! And the CUDA backend's own:
//! - `driver`: every driver API call, each a small safe function with a
//!   typed result (as `compile::nvrtc` is for NVRTC). Together with the
//!   kernel parameters of `launch`, the backend's only `unsafe` code.
//! - `probe`: the libraries and symbols are checked before any call, so a
//!   machine without CUDA gets a typed error, never a panic; `linked`: the
//!   same lookups when the CUDA libraries are linked into the program
//!   (`--cfg kernelkit_candle_cuda`); `nvrtc_path`: which NVRTC library
//!   file is loaded (the setting, NVIDIA's wheels, a toolkit, the loader).
//! - `unload`: retired modules wait for events recorded after their
//!   launches, then are unloaded, without waiting for the context.
//! - `allocator`: where device blocks come from (a stream-ordered pool of
//!   the device's own, else plain allocations);
//!   `cuda_stream`: [`CudaStream`], a stream and its cache of freed blocks
//!   (off in the debugging mode of [`CudaConfig::block_cache`]);
//!   `graph`: graph allocations (memory allocated while a stream is
//!   captured into a CUDA graph, never cached);
//!   `gather`: launches kernelkit's strided → contiguous copy kernel
//!   (`backend::copy`), whose module the floors above resolve.
//!
//! Every driver call is made with the device's primary context current on
//! the calling thread ([`Context::bind`], a thread-local check).

mod allocator;
pub(crate) mod compile;
mod cuda_stream;
mod driver;
mod gather;
mod graph;
mod launch;
#[cfg(kernelkit_candle_cuda)]
mod linked;
mod load;
mod memory;
mod nvrtc_path;
pub(crate) mod offline;
mod probe;
mod replay;
mod unload;

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use driver::{DeviceAttribute as A, RawContext, RawDevice};

use crate::backend::copy::{BuiltinKernel, STRIDED_COPY};
use crate::backend::{
    ArgRef, Backend, CompileJob, Compiled, ForeignStream, Function, LaunchDesc, Limits, Memory,
    Module, Replay, StreamHandle,
};
use crate::codegen::Dialect;
use crate::config::CudaConfig;
use crate::dtype::DType;
use std::time::{Duration, Instant};

use crate::error::{CompileError, DeviceError, Result};

pub(crate) use cuda_stream::{order_after, CudaStream, DeviceMem, StreamOrigin};
pub(crate) use graph::GraphMem;
pub(crate) use load::{CudaFunction, CudaModule};
pub(crate) use replay::CudaReplay;

thread_local! {
    /// The context kernelkit last made current on this thread.
    static CURRENT: Binding = const { Binding(Cell::new(0)) };
}

/// A thread's record of the context kernelkit made current on it, by the
/// [`Context`] object's instance number. Not by the handle's address: once
/// a context is released (on any thread) the driver may destroy it and hand
/// the same address to the next one, and a thread that compared addresses
/// would skip making the new context current and run its calls in the
/// destroyed one. Instance numbers are never reused, so a stale record
/// matches no live context.
struct Binding(Cell<u64>);

impl Binding {
    /// Makes context `instance` current with `set`, unless this thread's
    /// record says it already is.
    #[inline]
    fn make_current(
        &self,
        instance: u64,
        set: impl FnOnce() -> Result<(), DeviceError>,
    ) -> Result<(), DeviceError> {
        if self.0.get() == instance {
            return Ok(());
        }
        set()?;
        self.0.set(instance);
        Ok(())
    }
}

/// The next [`Context`] instance number (0 is "none").
fn next_context_instance() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// A device's primary context, retained for the backend's life.
pub(super) struct Context {
    raw: RawContext,
    device: RawDevice,
    /// Unique to this object in the process (see [`Binding`]).
    instance: u64,
    /// `cuda:N`.
    pub(super) label: String,
    /// Retired modules waiting for the work that may run them, and the
    /// streams whose fences they wait for (see `unload`).
    unloads: unload::Unloads,
}

impl Context {
    /// Makes this context current on the calling thread, unless kernelkit
    /// already did (a thread-local comparison on the hot path). Code that
    /// changes the current context behind kernelkit's back on a thread it
    /// also uses must restore it.
    #[inline]
    pub(super) fn bind(&self) -> Result<(), DeviceError> {
        CURRENT.with(|current| {
            current.make_current(self.instance, || {
                driver::ctx_set_current(self.raw, &self.label)
            })
        })
    }
}

impl Context {
    /// The driver's handle.
    pub(in crate::backend::cuda) fn raw(&self) -> RawContext {
        self.raw
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // Modules still waiting to be unloaded: the device goes, so after
        // one synchronize.
        if self.unloads.pending() > 0 && self.bind().is_ok() {
            self.unloads.drain(&self.label);
        }
        // Releases the retain taken in `open`. Threads that made this
        // context current keep its instance number in their record, which
        // no later context has.
        driver::primary_ctx_release(self.device);
    }
}

/// See the module documentation.
pub(crate) struct CudaBackend {
    ctx: Arc<Context>,
    nvrtc: compile::Nvrtc,
    allocator: Arc<allocator::Allocator>,
    limits: Limits,
    description: String,
    warp: u32,
    /// The first fault (an illegal address, a trap) seen on this device.
    /// A fault ruins the CUDA context for good: every later operation
    /// reports it at once instead of reaching the driver.
    fault: OnceLock<String>,
    /// The GPU's ordinal (foreign memory is checked to be on it).
    ordinal: u32,
    /// The GPU model, compute capability and driver: what a tuning record
    /// was measured on (a record of another is not used).
    tuning_target: String,
}

impl CudaBackend {
    /// Runs a device operation unless the device has faulted; latches the
    /// fault if this operation reports one.
    fn guarded<T>(&self, op: impl FnOnce() -> Result<T>) -> Result<T> {
        if let Some(reason) = self.fault.get() {
            return Err(DeviceError::Faulted {
                device: self.ctx.label.clone(),
                reason: format!("an earlier operation failed: {reason}"),
            }
            .into());
        }
        let out = op();
        if let Err(crate::Error::Device(DeviceError::Faulted { reason, .. })) = &out {
            let _ = self.fault.set(reason.clone());
        }
        out
    }
}

impl CudaBackend {
    /// How many GPUs the driver sees (an error when the CUDA libraries or
    /// the driver cannot be used).
    pub(crate) fn count(config: &CudaConfig) -> Result<u32> {
        let label = "cuda";
        let unavailable = |reason: String| DeviceError::Unavailable {
            device: label.to_string(),
            reason,
        };
        probe::libraries(config).map_err(unavailable)?;
        match std::panic::catch_unwind(|| {
            driver::init(label)?;
            driver::device_count(label)
        }) {
            Ok(r) => Ok(r?.max(0) as u32),
            Err(_) => Err(unavailable("the CUDA driver failed while counting GPUs".into()).into()),
        }
    }

    /// Opens GPU `ordinal` configured by `config`: checks the libraries,
    /// initializes the driver, retains the primary context, reads the
    /// limits, prepares NVRTC.
    pub(crate) fn open(ordinal: u32, config: &CudaConfig) -> Result<Box<dyn Backend>> {
        let label = format!("cuda:{ordinal}");
        let unavailable = |reason: String| DeviceError::Unavailable {
            device: label.clone(),
            reason,
        };
        let libs = probe::libraries(config).map_err(unavailable)?;
        // A second guard: the probe should leave nothing that panics.
        match std::panic::catch_unwind(|| CudaBackend::open_checked(ordinal, config, libs)) {
            Ok(r) => r.map(|b| Box::new(b) as Box<dyn Backend>),
            Err(_) => {
                Err(unavailable("the CUDA libraries failed while opening the device".into()).into())
            }
        }
    }

    fn open_checked(
        ordinal: u32,
        config: &CudaConfig,
        libs: &probe::Libraries,
    ) -> Result<CudaBackend> {
        let label = format!("cuda:{ordinal}");
        let unavailable = |reason: String| DeviceError::Unavailable {
            device: label.clone(),
            reason,
        };
        driver::init(&label)?;
        let count = driver::device_count(&label)?;
        if ordinal as i64 >= count as i64 {
            return Err(unavailable(format!("the driver sees {count} GPU(s)")).into());
        }
        let device = driver::device_get(ordinal, &label)?;
        let get = |a| driver::device_attribute(device, a, &label);
        let cc = (
            get(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
            get(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
        );
        // NVRTC before the context: a device whose compiler cannot be used
        // fails its open before a context is retained.
        let nvrtc = compile::Nvrtc::new(cc, config).map_err(unavailable)?;
        // Released by `Context::drop`.
        let raw = driver::primary_ctx_retain(device, &label)?;
        let ctx = Arc::new(Context {
            raw,
            device,
            instance: next_context_instance(),
            label: label.clone(),
            unloads: unload::Unloads::default(),
        });
        ctx.bind()?;

        let limits = Limits {
            max_threads_per_group: get(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)? as u64,
            max_group_dims: [
                get(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)? as u64,
                get(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y)? as u64,
                get(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)? as u64,
            ],
            max_groups: [
                get(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)? as u64,
                get(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)? as u64,
                get(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)? as u64,
            ],
            max_shared_bytes: get(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)? as u64,
        };
        let warp = get(A::CU_DEVICE_ATTRIBUTE_WARP_SIZE)? as u32;
        let sms = get(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?;
        let pools = libs.has_pools && get(A::CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED)? != 0;

        let name = driver::device_name(device, &label)?;
        let total = driver::device_total_mem(device, &label)?;
        let version = driver::driver_version(&label)?;

        let allocator = Arc::new(allocator::Allocator::new(
            ctx.clone(),
            ordinal,
            pools,
            config.block_cache,
        )?);
        let description = format!(
            "{name} (sm_{}{}, {sms} SMs, {:.0} GiB), driver {}.{}, {}, allocator: {}, {}",
            cc.0,
            cc.1,
            total as f64 / (1u64 << 30) as f64,
            version / 1000,
            (version % 1000) / 10,
            nvrtc.describe(),
            allocator.describe(),
            nvrtc.describe_workers(),
        );
        Ok(CudaBackend {
            ctx,
            nvrtc,
            allocator,
            limits,
            description,
            warp,
            fault: OnceLock::new(),
            ordinal,
            tuning_target: format!(
                "{name} sm_{}{} driver {}.{}",
                cc.0,
                cc.1,
                version / 1000,
                (version % 1000) / 10
            ),
        })
    }

    fn stream<'a>(&self, handle: &'a StreamHandle) -> &'a Arc<CudaStream> {
        handle.cuda().expect("CUDA calls get CUDA streams")
    }
}

impl Backend for CudaBackend {
    fn name(&self) -> &'static str {
        "cuda"
    }
    fn dialect(&self) -> Dialect {
        Dialect::Cuda
    }
    fn label(&self) -> &str {
        &self.ctx.label
    }
    fn description(&self) -> String {
        self.description.clone()
    }
    fn supports(&self, _dtype: DType) -> bool {
        true
    }
    fn limits(&self) -> &Limits {
        &self.limits
    }
    fn identity(&self) -> &str {
        self.nvrtc.identity()
    }
    fn target(&self) -> &str {
        self.nvrtc.target()
    }
    fn fallback_identities(&self) -> &[(String, String)] {
        self.nvrtc.ptx_fallback()
    }
    fn simd_width(&self) -> u32 {
        self.warp
    }
    fn compile(&self, job: &CompileJob<'_>) -> Result<Compiled, CompileError> {
        self.nvrtc.compile(job)
    }
    fn load(&self, job: &CompileJob<'_>, artifact: &[u8]) -> Result<Module, CompileError> {
        load::load(&self.ctx, job.kernel, job.function, artifact)
    }
    fn function(
        &self,
        kernel: &str,
        module: &Module,
        name: &str,
    ) -> Result<Function, CompileError> {
        load::function(&self.ctx, kernel, module, name)
    }
    fn new_stream(&self) -> Result<StreamHandle> {
        self.guarded(|| Ok(StreamHandle::Cuda(CudaStream::new(self.allocator.clone())?)))
    }
    fn synchronize(&self, stream: &StreamHandle) -> Result<()> {
        self.guarded(|| self.stream(stream).synchronize())?;
        // A host wait: a good moment to unload what finished waiting.
        self.ctx.unloads.reap(&self.ctx.label);
        Ok(())
    }
    fn synchronize_timeout(&self, stream: &StreamHandle, timeout: Duration) -> Result<()> {
        self.guarded(|| {
            let stream = self.stream(stream);
            let deadline = Instant::now() + timeout;
            while !stream.finished()? {
                if Instant::now() >= deadline {
                    // A kernel cannot be stopped: nothing on this context is
                    // safe to use after it (as after a fault).
                    let _ = self.fault.set(format!(
                        "work on a stream did not finish within {timeout:?}"
                    ));
                    return Err(DeviceError::TimedOut {
                        device: self.ctx.label.clone(),
                        after: timeout,
                    }
                    .into());
                }
                std::thread::sleep(Duration::from_micros(200));
            }
            Ok(())
        })
    }
    fn time_on(
        &self,
        stream: &StreamHandle,
        before: &mut dyn FnMut() -> Result<()>,
        run: &mut dyn FnMut() -> Result<()>,
    ) -> Result<Duration> {
        let stream = self.stream(stream).clone();
        self.guarded(|| stream.time(before, run))
    }
    fn capture_on(
        &self,
        stream: &StreamHandle,
        run: &mut dyn FnMut() -> Result<()>,
    ) -> Result<Option<Replay>> {
        let stream = self.stream(stream).clone();
        self.guarded(|| Ok(CudaReplay::capture(&stream, run)?.map(Replay::Cuda)))
    }
    fn replay_on(&self, replay: &Replay, stream: &StreamHandle) -> Result<()> {
        let Replay::Cuda(replay) = replay;
        let stream = self.stream(stream);
        self.guarded(|| replay.launch_on(stream))
    }
    fn tuning_target(&self) -> String {
        self.tuning_target.clone()
    }
    fn alloc(&self, len: usize, home: &StreamHandle) -> Result<Memory> {
        self.guarded(|| memory::alloc(len, home))
    }
    fn alloc_fresh(&self, len: usize, home: &StreamHandle) -> Result<Memory> {
        self.guarded(|| memory::alloc_fresh(len, home))
    }
    fn graph_alloc_refusal(&self) -> Option<&'static str> {
        self.allocator.pool().is_none().then_some(graph::NO_POOL)
    }
    fn alloc_in_graph(&self, len: usize, home: &StreamHandle) -> Result<Memory> {
        self.guarded(|| graph::alloc_in_graph(self.stream(home), len))
    }
    fn upload(&self, bytes: &[u8], home: &StreamHandle) -> Result<Memory> {
        self.guarded(|| memory::upload(bytes, home, false))
    }
    fn upload_fresh(&self, bytes: &[u8], home: &StreamHandle) -> Result<Memory> {
        self.guarded(|| memory::upload(bytes, home, true))
    }
    fn download(
        &self,
        mem: &Memory,
        offset: usize,
        len: usize,
        stream: &StreamHandle,
    ) -> Result<Vec<u8>> {
        self.guarded(|| memory::download(self.stream(stream), mem, offset, len))
    }
    fn fill(&self, mem: &Memory, pattern: &[u8], stream: &StreamHandle) -> Result<()> {
        self.guarded(|| memory::fill(self.stream(stream), mem, pattern))
    }
    fn copy_kernel(&self) -> Option<&'static BuiltinKernel> {
        Some(&STRIDED_COPY)
    }
    fn gather(
        &self,
        src: &ArgRef<'_>,
        dst: &Memory,
        stream: &StreamHandle,
        function: Option<&Function>,
    ) -> Result<()> {
        let Some(function) = function.and_then(Function::cuda) else {
            return Err(DeviceError::Driver {
                device: self.ctx.label.clone(),
                operation: "strided copy",
                reason: "no CUDA function of kernelkit's copy kernel was given".into(),
            }
            .into());
        };
        self.guarded(|| gather::run(self.stream(stream), function, src, dst))
    }
    fn launch(&self, launch: &LaunchDesc<'_>) -> Result<()> {
        self.guarded(|| {
            launch::launch(
                &self.ctx,
                launch,
                self.stream(launch.stream),
                self.limits.max_shared_bytes,
            )
        })
    }
    fn wrap_stream(&self, stream: ForeignStream) -> Result<StreamHandle> {
        let (raw, origin) = match stream {
            ForeignStream::Raw(raw) => (raw.cast(), StreamOrigin::Raw),
            ForeignStream::Cudarc(s) => (s.cu_stream(), StreamOrigin::Cudarc(s)),
        };
        self.guarded(|| {
            Ok(StreamHandle::Cuda(CudaStream::wrap(
                self.allocator.clone(),
                raw,
                origin,
            )?))
        })
    }
    fn check_foreign(&self, addr: u64, len: usize) -> Result<()> {
        let _ = len;
        self.ctx.bind()?;
        let ordinal = self.ordinal;
        match driver::pointer_device(addr, &self.ctx.label)? {
            Some(o) if o == ordinal as i32 => Ok(()),
            found => Err(DeviceError::Unavailable {
                device: self.ctx.label.clone(),
                reason: match found {
                    Some(o) => format!("the foreign memory at {addr:#x} belongs to cuda:{o}"),
                    None => format!(
                        "the foreign memory at {addr:#x} is not device memory the driver knows"
                    ),
                },
            }
            .into()),
        }
    }
    fn pending_unloads(&self) -> u64 {
        self.ctx.unloads.pending() as u64
    }
    fn note_use(&self, mem: &Memory, stream: &StreamHandle) {
        if let Some(stream) = stream.cuda() {
            mem.used_on(stream);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{next_context_instance, Binding};
    use crate::error::DeviceError;
    use std::cell::Cell;

    /// Binds `instance` through `binding`, counting the driver calls.
    fn bind(binding: &Binding, instance: u64, calls: &Cell<u32>) {
        binding
            .make_current(instance, || {
                calls.set(calls.get() + 1);
                Ok::<(), DeviceError>(())
            })
            .unwrap();
    }

    /// A thread binds context 1; another thread drops it (nothing reaches
    /// this thread's record), and context 2 is created, perhaps at the
    /// address that context 1 had. Binding context 2 on the first thread
    /// must call the driver: the record names context 1's instance, which
    /// context 2 does not have, whatever its address.
    #[test]
    fn a_new_context_is_made_current_even_at_a_reused_address() {
        let binding = Binding(Cell::new(0));
        let calls = Cell::new(0);
        let first = next_context_instance();
        bind(&binding, first, &calls);
        bind(&binding, first, &calls);
        assert_eq!(calls.get(), 1, "a second bind of the same context is free");
        // Context 1 is released elsewhere; context 2 is opened.
        let second = std::thread::spawn(next_context_instance).join().unwrap();
        assert_ne!(second, first);
        bind(&binding, second, &calls);
        assert_eq!(calls.get(), 2, "the new context is made current");
        bind(&binding, second, &calls);
        assert_eq!(calls.get(), 2);
    }

    #[test]
    fn a_failed_bind_leaves_the_record_alone() {
        let binding = Binding(Cell::new(0));
        let instance = next_context_instance();
        let failed = binding.make_current(instance, || {
            Err(DeviceError::Driver {
                device: "cuda:0".into(),
                operation: "cuCtxSetCurrent",
                reason: "test".into(),
            })
        });
        assert!(failed.is_err());
        let calls = Cell::new(0);
        bind(&binding, instance, &calls);
        assert_eq!(calls.get(), 1, "retried after the failure");
    }
}
