//! Devices and streams, and one call's device work (`dispatch`).
//!
//! A [`Device`] owns one backend and that backend's module resolver (loaded
//! modules, artifact tiers): modules are compiled and loaded once per
//! device, whatever kernel object or thread asks. `Device::cpu()` and
//! `Device::cuda(n)` return process-wide devices, so every part of a program
//! shares their caches. [`Device::new_null`] is a device that runs nothing
//! and records launches, for tests. Every device is opened with a
//! [`Config`]: the constructors read [`Config::from_env`] when they create
//! one, a [`DeviceBuilder`] takes one from the program.
//!
//! The files: `builder` ([`DeviceBuilder`]), `stream` ([`Stream`]: ordered
//! queues of work, the default stream among them, and other libraries'
//! streams wrapped as ours), `null` (the null device's constructors),
//! `dispatch` (one call's device work: waits, copies, outputs, the
//! launch), `copy` (kernelkit's strided-copy kernel, resolved like a
//! variant's module), `jit` (the JIT policy applied to a module about to
//! be resolved) and `record_sink` (the manifest recording appends to).
//!
//! **What this floor may import:** `cache`, `backend`, `codegen` and the
//! base, and `array` (on the same floor: arrays live on devices, devices
//! make arrays); nothing from `kernel`.

pub(crate) mod bounds;
mod builder;
mod copy;
pub(crate) mod dispatch;
pub(crate) mod jit;
mod null;
pub(crate) mod record_sink;
mod stream;
mod tuning;

use std::fmt;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use crate::array::Array;
use crate::backend::{Backend, LaunchDesc, Limits, StreamHandle};
use crate::cache::artifact_pool::ArtifactPool;
use crate::cache::key::IdentityDigest;
use crate::cache::loaded::{Bound, FunctionRef, FunctionSlots};
use crate::cache::remote::RemoteTier;
use crate::cache::resolver::ModuleRequest;
use crate::cache::resolver::ModuleResolver;
use crate::cache::store::ArtifactStore;
use crate::cache::tier::ArtifactTier;
use crate::cache::tuning::Records;
use crate::cache::CacheState;
use crate::codegen::Dialect;
use crate::config::{CacheConfig, Config, CudaCompileOptions};
use crate::dtype::{DType, Element};
use crate::error::{CompileError, DeviceError, Result};
use crate::stats::CacheStats;

pub use builder::DeviceBuilder;
use stream::next_stream_id;
pub use stream::Stream;

/// The kind of a device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DeviceKind {
    /// The host CPU, through the system C++ compiler.
    Cpu,
    /// An NVIDIA GPU, through NVRTC and the CUDA driver.
    Cuda,
    /// No device: kernels are generated and "compiled" but never run; each
    /// launch is recorded ([`Device::new_null`]).
    Null,
}

/// Identifies one device object: its kind, its ordinal and, since a program
/// may open several independent CPU devices (each with its own cache), an
/// instance number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DeviceId {
    /// The kind.
    pub kind: DeviceKind,
    /// The ordinal (0 for the CPU).
    pub ordinal: u32,
    /// Distinguishes device objects of the same kind and ordinal.
    pub instance: u32,
}

impl DeviceId {
    /// True when arrays of one can be used by the other (same memory).
    pub fn same_memory(&self, other: &DeviceId) -> bool {
        self.kind == other.kind && self.ordinal == other.ordinal
    }
}

/// A device's state. It begins as a stream's state does (`stream::StreamShared`:
/// the stream's backend state, then a `Device`), so that reaching the
/// handle or the device of a [`Stream`] is the same load for the default
/// stream as for any other, and the compiler merges the two cases.
#[repr(C)]
pub(crate) struct DeviceShared {
    /// The default stream's backend state, created with the device.
    default_handle: StreamHandle,
    /// An *uncounted* alias of this device (written once in
    /// [`Device::from_parts`], never dropped): what the default stream's
    /// `device()` lends. A counted one would be a cycle (the device holding
    /// itself), and no device would ever be freed. It is only reached
    /// through a borrow of a counted [`Device`], so it never outlives the
    /// device; a clone of it is a counted `Device` like any other.
    this: MaybeUninit<Device>,
    id: DeviceId,
    /// The backend's dialect, copied next to the id (no virtual call).
    dialect: Dialect,
    backend: Box<dyn Backend>,
    /// The backend's limits, copied: every call checks against them.
    limits: Limits,
    /// Memory → artifact tiers → compile.
    modules: ModuleResolver,
    /// The entry points of kernelkit's strided-copy kernel this device
    /// resolved, one slot set per element size (see `copy`).
    copy_slots: copy::CopySlots,
    /// Autotuning's records (memory → tiers) and counters.
    records: Records,
    /// What a tuning record must have been measured on to be used here
    /// (`Backend::tuning_target`, asked once).
    tuning_target: String,
    /// The default stream's number (see [`Stream`]'s `Debug`).
    default_id: u64,
    /// The default stream as a [`Stream`] to lend: `Link::Default` of
    /// another uncounted alias, as `this`.
    default_stream: MaybeUninit<Stream>,
}

/// A device: one backend, its kernel cache and its streams. Cheap to clone.
#[derive(Clone)]
pub struct Device(pub(crate) Arc<DeviceShared>);

/// A reference to a device that does not keep it alive: for a program (or
/// a test) that must know whether a device has been freed, or that keeps
/// something per device without holding the device open.
#[derive(Clone, Debug)]
pub struct WeakDevice(Weak<DeviceShared>);

impl WeakDevice {
    /// The device, if anything still holds it.
    pub fn upgrade(&self) -> Option<Device> {
        self.0.upgrade().map(Device)
    }
}

impl fmt::Debug for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Device({})", self.label())
    }
}

impl PartialEq for Device {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}
impl Eq for Device {}

static NEXT_INSTANCE: AtomicU32 = AtomicU32::new(1);

impl Device {
    /// A device over `backend`, whose default stream's state is
    /// `default_handle` (created by the caller, so that a failure to create
    /// it is the caller's typed error, never a panic later), with the
    /// artifact tiers `cache` asks for.
    pub(crate) fn from_parts(
        kind: DeviceKind,
        ordinal: u32,
        backend: Box<dyn Backend>,
        default_handle: StreamHandle,
        cache: &CacheConfig,
        pool: Option<Arc<ArtifactPool>>,
    ) -> Device {
        let instance = NEXT_INSTANCE.fetch_add(1, Ordering::Relaxed);
        let mut tiers: Vec<Box<dyn ArtifactTier>> = Vec::new();
        if let Some(store) = ArtifactStore::for_devices(cache) {
            tiers.push(Box::new(store));
        }
        if let Some(remote) = RemoteTier::for_devices(&cache.remote) {
            tiers.push(Box::new(remote));
        }
        let mut shared = Arc::new(DeviceShared {
            default_handle,
            this: MaybeUninit::uninit(),
            id: DeviceId {
                kind,
                ordinal,
                instance,
            },
            dialect: backend.dialect(),
            limits: *backend.limits(),
            tuning_target: backend.tuning_target(),
            backend,
            modules: ModuleResolver::new(tiers, pool, cache.max_loaded_modules),
            copy_slots: Default::default(),
            records: Records::default(),
            default_id: next_stream_id(),
            default_stream: MaybeUninit::uninit(),
        });
        let alias = || {
            let raw = Arc::into_raw(Arc::clone(&shared));
            // SAFETY: `raw` comes from `Arc::into_raw` just above. The
            // `Arc` rebuilt from it is an uncounted alias: its count is
            // given back on the next line, and the alias is never dropped
            // (a `MaybeUninit` drops nothing).
            let alias = Device(unsafe { Arc::from_raw(raw) });
            // SAFETY: `raw` comes from `Arc::into_raw`, and `shared` still
            // holds a count, so this one is not the last.
            unsafe { Arc::decrement_strong_count(raw) };
            alias
        };
        let (this, default) = (alias(), alias());
        match Arc::get_mut(&mut shared) {
            Some(device) => {
                device.this.write(this);
                device.default_stream.write(Stream::default_of(default));
            }
            // `shared` is the only counted reference and no `Weak` exists
            // yet: `get_mut` cannot fail.
            None => unreachable!("a device being built is not shared"),
        }
        Device(shared)
    }

    /// Opens a device on `backend`, creating its default stream first: a
    /// failure to create it is this call's typed error.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))] // CUDA devices open through it.
    pub(crate) fn open(
        kind: DeviceKind,
        ordinal: u32,
        backend: Box<dyn Backend>,
        cache: &CacheConfig,
        pool: Option<Arc<ArtifactPool>>,
    ) -> Result<Device> {
        let default_handle = backend.new_stream()?;
        Ok(Device::from_parts(
            kind,
            ordinal,
            backend,
            default_handle,
            cache,
            pool,
        ))
    }

    /// A builder for a device with settings given by the program rather
    /// than read from the environment: it starts from
    /// [`Config::from_env`], and each setting given replaces that one.
    ///
    /// ```no_run
    /// use kernelkit::{CacheMode, Device};
    /// # fn main() -> kernelkit::Result<()> {
    /// // A CPU device that keeps nothing on disk, whatever KERNELKIT_CACHE says.
    /// let device = Device::builder().cache_mode(CacheMode::Memory).cpu()?;
    /// # Ok(()) }
    /// ```
    pub fn builder() -> DeviceBuilder {
        DeviceBuilder::new()
    }

    /// A reference to this device that does not keep it alive.
    pub fn downgrade(&self) -> WeakDevice {
        WeakDevice(Arc::downgrade(&self.0))
    }

    /// The process-wide CPU device.
    pub fn cpu() -> Device {
        static CPU: OnceLock<Device> = OnceLock::new();
        CPU.get_or_init(Device::new_cpu).clone()
    }

    /// A new, independent CPU device with its own (empty) kernel cache,
    /// configured by the environment ([`Config::from_env`]). Useful to
    /// measure compiles, or to isolate tests; it still shares the artifact
    /// store on disk, so to measure compiles turn that off
    /// (`Device::builder().cache_mode(CacheMode::Memory).cpu()`, or
    /// `KERNELKIT_CACHE=memory`).
    pub fn new_cpu() -> Device {
        Device::open_cpu(&Config::from_env())
    }

    /// A new CPU device whose kernels are compiled by `program` (a C++20
    /// compiler command) instead of `$CXX` or the first one on the `PATH`.
    pub fn new_cpu_with_compiler(program: impl Into<String>) -> Device {
        Device::open_cpu(&Config::from_env().compiler(program))
    }

    /// A new CPU device with `config`.
    pub(crate) fn open_cpu(config: &Config) -> Device {
        crate::nvtx::configure(&config.nvtx);
        // CPU launches run to completion: a CPU stream has no state.
        Device::from_parts(
            DeviceKind::Cpu,
            0,
            Box::new(crate::backend::cpu::CpuBackend::new(&config.cpu)),
            StreamHandle::Host,
            &config.cache,
            None,
        )
    }

    /// A new CPU device compiling for the portable level `target` (see
    /// [`DeviceBuilder::cpu_target`]).
    pub(crate) fn open_cpu_target(config: &Config, target: &str) -> Result<Device> {
        let backend =
            crate::backend::cpu::CpuBackend::for_target(&config.cpu, target).ok_or_else(|| {
                DeviceError::Unavailable {
                    device: format!("cpu ({target})"),
                    reason: format!(
                        "`{target}` is not a CPU target kernelkit knows (native, {})",
                        crate::backend::cpu::portable::TARGETS.join(", ")
                    ),
                }
            })?;
        Ok(Device::from_parts(
            DeviceKind::Cpu,
            0,
            Box::new(backend),
            StreamHandle::Host,
            &config.cache,
            None,
        ))
    }

    /// A compile-only CUDA device for the architecture `target` (`sm_90a`:
    /// code, `compute_90`: PTX): NVRTC, no GPU; it compiles as a GPU of
    /// that architecture would and runs nothing (for precompiling, see
    /// `kernelkit::manifest`). Also returns NVRTC's version (`nvrtc 12.8`).
    pub(crate) fn open_cuda_compile_only(
        config: &Config,
        target: &str,
    ) -> Result<(Device, String)> {
        #[cfg(feature = "cuda")]
        {
            let (backend, version) =
                crate::backend::cuda::offline::CompileOnly::open(target, &config.cuda).map_err(
                    |reason| DeviceError::Unavailable {
                        device: format!("cuda ({target}, compile only)"),
                        reason,
                    },
                )?;
            let device = Device::from_parts(
                DeviceKind::Cuda,
                0,
                Box::new(backend),
                StreamHandle::Host,
                &config.cache,
                None,
            );
            Ok((device, version))
        }
        #[cfg(not(feature = "cuda"))]
        {
            let _ = config;
            Err(DeviceError::NotBuilt {
                device: format!("cuda ({target}, compile only)"),
                feature: "cuda",
            }
            .into())
        }
    }

    /// The process-wide device for CUDA GPU `ordinal`: every GPU the
    /// driver sees has one ([`Device::cuda_count`]).
    ///
    /// The process-wide CUDA devices share compiled artifacts (see
    /// `cache::artifact_pool`): a variant is compiled once per architecture, and a
    /// second GPU of the same model loads the first one's cubin from
    /// memory. Each device loads and keeps its own modules.
    ///
    /// Returns an error, never panics, when kernelkit was built without the
    /// `cuda` feature, or when the driver, NVRTC or the GPU is missing.
    pub fn cuda(ordinal: u32) -> Result<Device> {
        static DEVICES: Mutex<Vec<(u32, Device)>> = Mutex::new(Vec::new());
        let mut devices = DEVICES.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, d)) = devices.iter().find(|(o, _)| *o == ordinal) {
            return Ok(d.clone());
        }
        let device = Device::open_cuda_in(ordinal, &Config::from_env(), true)?;
        devices.push((ordinal, device.clone()));
        Ok(device)
    }

    /// A new CUDA device object with its own kernel cache (the process-wide
    /// one is [`Device::cuda`]), configured by the environment
    /// ([`Config::from_env`]).
    pub fn new_cuda(ordinal: u32) -> Result<Device> {
        Device::open_cuda(ordinal, &Config::from_env())
    }

    /// A new CUDA device object whose compiles add `options` (before
    /// `KERNELKIT_NVRTC_FLAGS`, which every CUDA device uses). It has its
    /// own kernel cache; the options are part of every module key.
    pub fn new_cuda_with(ordinal: u32, options: &CudaCompileOptions) -> Result<Device> {
        Device::open_cuda(ordinal, &Config::from_env().cuda_options(options.clone()))
    }

    /// How many CUDA GPUs the driver sees: `Device::cuda(n)` opens each
    /// `n` below it. An error (never a panic) without the `cuda` feature or
    /// without a usable driver.
    pub fn cuda_count() -> Result<u32> {
        #[cfg(feature = "cuda")]
        {
            crate::backend::cuda::CudaBackend::count(&Config::from_env().cuda)
        }
        #[cfg(not(feature = "cuda"))]
        {
            Err(DeviceError::NotBuilt {
                device: "cuda".into(),
                feature: "cuda",
            }
            .into())
        }
    }

    /// A new CUDA device object with `config`, with its own caches.
    pub(crate) fn open_cuda(ordinal: u32, config: &Config) -> Result<Device> {
        Device::open_cuda_in(ordinal, config, false)
    }

    /// A new CUDA device object with `config`; `shared` when it uses the
    /// process-wide artifact pool of the CUDA devices.
    fn open_cuda_in(ordinal: u32, config: &Config, shared: bool) -> Result<Device> {
        #[cfg(feature = "cuda")]
        {
            crate::nvtx::configure(&config.nvtx);
            let backend = crate::backend::cuda::CudaBackend::open(ordinal, &config.cuda)?;
            let pool = shared.then(|| ArtifactPool::cuda(&config.cache));
            Device::open(DeviceKind::Cuda, ordinal, backend, &config.cache, pool)
        }
        #[cfg(not(feature = "cuda"))]
        {
            let _ = (config, shared);
            Err(DeviceError::NotBuilt {
                device: format!("cuda:{ordinal}"),
                feature: "cuda",
            }
            .into())
        }
    }

    /// CUDA GPU 0 if one can be used, else the CPU.
    pub fn default_device() -> Result<Device> {
        match Device::cuda(0) {
            Ok(d) => Ok(d),
            Err(e) => {
                tracing::debug!("no CUDA device, using the CPU: {e}");
                Ok(Device::cpu())
            }
        }
    }

    /// Parses `cpu`, `cuda` or `cuda:N` and opens that device.
    pub fn from_name(name: &str) -> Result<Device> {
        match name {
            "cpu" => Ok(Device::cpu()),
            "cuda" => Device::cuda(0),
            _ => match name.strip_prefix("cuda:").and_then(|n| n.parse().ok()) {
                Some(n) => Device::cuda(n),
                None => Err(DeviceError::Unavailable {
                    device: name.to_string(),
                    reason: "expected `cpu`, `cuda` or `cuda:N`".into(),
                }
                .into()),
            },
        }
    }

    /// The device's identity.
    pub fn id(&self) -> DeviceId {
        self.0.id
    }
    /// The device's kind.
    pub fn kind(&self) -> DeviceKind {
        self.0.id.kind
    }
    /// `cpu` or `cuda:N`.
    pub fn label(&self) -> &str {
        self.0.backend.label()
    }
    /// A description for people: model, cores, compiler.
    pub fn description(&self) -> String {
        self.0.backend.description()
    }
    /// Launch limits.
    pub fn limits(&self) -> Limits {
        self.0.limits
    }
    /// The limits, borrowed (a call reads a few of them).
    pub(crate) fn limits_ref(&self) -> &Limits {
        &self.0.limits
    }
    /// The dialect its kernels are generated in.
    pub fn dialect(&self) -> Dialect {
        self.0.dialect
    }
    /// Whether the backend supports a dtype.
    pub fn supports(&self, dtype: DType) -> bool {
        self.0.backend.supports(dtype)
    }

    pub(crate) fn backend(&self) -> &dyn Backend {
        &*self.0.backend
    }

    /// Hands `desc` to the backend: every launch of a kernel goes through
    /// here, inside an NVTX range when they are on (one relaxed load when
    /// they are off).
    #[inline(always)]
    pub(crate) fn launch(&self, desc: &LaunchDesc<'_>) -> Result<()> {
        if crate::nvtx::on() {
            return self.launch_in_range(desc);
        }
        self.0.backend.launch(desc)
    }

    #[cold]
    #[inline(never)]
    fn launch_in_range(&self, desc: &LaunchDesc<'_>) -> Result<()> {
        let _range = crate::nvtx::range(
            crate::nvtx::What::Launch,
            &desc.spec.name,
            desc.function.name(),
        );
        self.0.backend.launch(desc)
    }

    pub(crate) fn check_dtype(&self, dtype: DType) -> Result<()> {
        if self.supports(dtype) {
            Ok(())
        } else {
            Err(DeviceError::Unavailable {
                device: self.label().to_string(),
                reason: format!(
                    "the {} backend has no {dtype} arrays",
                    self.0.backend.name()
                ),
            }
            .into())
        }
    }

    /// A new stream on this device.
    pub fn new_stream(&self) -> Result<Stream> {
        Ok(Stream::own(self, self.0.backend.new_stream()?))
    }

    /// The stream calls use when they name none. It was created with the
    /// device, so this cannot fail (a device whose default stream could not
    /// be created did not open).
    #[inline]
    pub fn default_stream(&self) -> &Stream {
        // SAFETY: written in `from_parts`, before the device was returned.
        // The borrow is tied to `self`, a counted reference, so the
        // uncounted alias inside outlives it.
        unsafe { self.0.default_stream.assume_init_ref() }
    }

    /// Shorthand for [`Array::from_slice`] on this device.
    pub fn array_from_slice<T: Element>(
        &self,
        data: &[T],
        shape: impl IntoIterator<Item = usize>,
    ) -> Result<Array> {
        Array::from_slice(self, data, shape)
    }

    /// What the kernel cache and artifact store have done so far.
    pub fn cache_stats(&self) -> CacheStats {
        let mut stats = self.0.modules.stats();
        stats.pending_unloads = self.backend().pending_unloads();
        self.0.records.add_stats(&mut stats);
        stats
    }

    /// The digest of this device's compiler configuration: what an
    /// artifact built here carries, and what a bundle's entries must carry
    /// to be imported for this device (see [`crate::cache::bundle`]).
    pub fn artifact_identity(&self) -> IdentityDigest {
        let backend = self.backend();
        IdentityDigest::of(backend.name(), backend.identity())
    }

    /// Every compiler configuration whose artifacts this device loads: its
    /// own ([`Device::artifact_identity`]) first, then those it falls back
    /// to (PTX for an older virtual architecture; the portable CPU levels
    /// its CPU runs, best first). What a bundle import takes for it.
    pub fn artifact_identities(&self) -> Vec<IdentityDigest> {
        let backend = self.backend();
        std::iter::once(self.artifact_identity())
            .chain(
                backend
                    .fallback_identities()
                    .iter()
                    .map(|(_, identity)| IdentityDigest::of(backend.name(), identity)),
            )
            .collect()
    }

    /// What this device's compiles are for: `sm_90a`, `compute_90`,
    /// `native`, `x86-64-v2`.
    pub fn target(&self) -> &str {
        self.backend().target()
    }

    /// Where the module of `function` (its source hashed to `source_hash`)
    /// is compiled already (see
    /// [`CacheState`]); compiles, loads and counts nothing.
    pub(crate) fn cache_state(&self, function: &str, source_hash: u128) -> CacheState {
        self.0
            .modules
            .cache_state(self.backend(), function, source_hash)
    }

    /// Number of modules this device keeps loaded now (at most its
    /// `max_loaded_modules`, unless more are pinned).
    pub fn loaded_modules(&self) -> usize {
        self.0.modules.loaded()
    }

    /// The function of the module `request` names, held for one call:
    /// from the caller's slot for this device when this device resolved
    /// it before and has not unloaded it since (no lock, no cache lookup:
    /// each device ordinal has its own slot, so every device is as fast as
    /// the first), else from the module resolver, compiling or loading the
    /// module once however many threads ask, and kept in the slot.
    ///
    /// The result keeps the module loaded while it lives (see
    /// `cache::loaded`): hold it across the launch, and no longer.
    #[inline]
    pub(crate) fn function<'r>(
        &self,
        request: impl FnOnce() -> ModuleRequest<'r>,
        slots: &Arc<FunctionSlots>,
    ) -> Result<FunctionRef, CompileError> {
        if let Some(f) = self.kept_function(slots) {
            return Ok(f);
        }
        let request = request();
        self.resolve_entry(&request, request.function, slots)
    }

    /// The function `slots` kept for this device, if it did (counted as a
    /// hit): [`Device::function`]'s warm path alone, for callers that must
    /// not compile or load (a call on a stream being captured).
    #[inline]
    pub(crate) fn kept_function(&self, slots: &FunctionSlots) -> Option<FunctionRef> {
        let id = &self.0.id;
        // Instance numbers are unique to a device object.
        let f = slots.get(FunctionSlots::index(id.ordinal), id.instance)?;
        self.0.modules.record_fast_hit();
        Some(f)
    }

    /// Resolves function `entry` of `request`'s module (a variant's module
    /// has one, named as the module is; the copy kernel's has one per
    /// element size) through the module resolver and binds it into this
    /// device's slot of `slots`.
    #[inline(never)]
    fn resolve_entry(
        &self,
        request: &ModuleRequest<'_>,
        entry: &str,
        slots: &Arc<FunctionSlots>,
    ) -> Result<FunctionRef, CompileError> {
        let index = FunctionSlots::index(self.0.id.ordinal);
        let backend = &*self.0.backend;
        let loaded = self.0.modules.module(backend, request)?;
        // Used now (a hit of the map, or a new module): the clock spares it.
        loaded.touch();
        let function = backend.function(request.kernel, &loaded.module, entry)?;
        let bound = Arc::new(Bound {
            instance: self.0.id.instance,
            loaded: loaded.clone(),
            function,
        });
        loaded.bind(slots, index, bound.clone());
        Ok(FunctionRef::Owned(bound))
    }
}

/// The plain virtual architecture PTX is made for in bundles, for a real
/// one: `sm_90a` -> `compute_90`, `sm_80` -> `compute_80`; `None` for a
/// name that is not `sm_XX` or `sm_XXa`.
pub(crate) fn ptx_target_of(target: &str) -> Option<String> {
    let n = target.strip_prefix("sm_")?.trim_end_matches('a');
    (!n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())).then(|| format!("compute_{n}"))
}

#[cfg(all(test, not(loom)))]
mod tests;
