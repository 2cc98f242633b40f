//! Devices and streams.
//!
//! A [`Device`] owns one backend and that backend's kernel cache: modules are
//! compiled and loaded once per device, whatever kernel object or thread asks.
//! `Device::cpu()` and `Device::cuda(n)` return process-wide devices, so
//! every part of a program shares their caches.

use std::fmt;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use crate::array::Array;
use crate::backend::{Backend, Limits, Module, StreamHandle};
use crate::cache::kernel_cache::{KernelCache, Outcome};
use crate::cache::key::StoreKey;
use crate::cache::store::{ArtifactStore, Lookup};
use crate::codegen::Dialect;
use crate::dtype::{DType, Element};
use crate::error::{CompileError, DeviceError, Result};
use crate::kernel::variant::{Function, Variant};
use crate::stats::CacheStats;

/// The kind of a device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DeviceKind {
    /// The host CPU, through the system C++ compiler.
    Cpu,
    /// An NVIDIA GPU, through NVRTC and the CUDA driver.
    Cuda,
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

pub(crate) struct DeviceShared {
    id: DeviceId,
    /// The backend's limits, copied next to the id: every call checks
    /// against them, and this line is one the call reads anyway.
    limits: Limits,
    /// The backend's dialect, copied for the same reason (no virtual call).
    dialect: Dialect,
    backend: Box<dyn Backend>,
    cache: KernelCache,
    store: Option<ArtifactStore>,
    default_stream: OnceLock<Stream>,
}

/// A device: one backend, its kernel cache and its streams. Cheap to clone.
#[derive(Clone)]
pub struct Device(pub(crate) Arc<DeviceShared>);

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
    pub(crate) fn from_backend(
        kind: DeviceKind,
        ordinal: u32,
        backend: Box<dyn Backend>,
    ) -> Device {
        let instance = NEXT_INSTANCE.fetch_add(1, Ordering::Relaxed);
        let store = ArtifactStore::from_env();
        Device(Arc::new(DeviceShared {
            id: DeviceId {
                kind,
                ordinal,
                instance,
            },
            limits: *backend.limits(),
            dialect: backend.dialect(),
            backend,
            cache: KernelCache::default(),
            store,
            default_stream: OnceLock::new(),
        }))
    }

    /// The process-wide CPU device.
    pub fn cpu() -> Device {
        static CPU: OnceLock<Device> = OnceLock::new();
        CPU.get_or_init(Device::new_cpu).clone()
    }

    /// A new, independent CPU device with its own (empty) kernel cache.
    /// Useful to measure compiles, or to isolate tests; it still shares the
    /// artifact store on disk, so to measure compiles set
    /// `KERNELKIT_CACHE=memory`.
    pub fn new_cpu() -> Device {
        Device::from_backend(
            DeviceKind::Cpu,
            0,
            Box::new(crate::backend::cpu::CpuBackend::new()),
        )
    }

    /// A new CPU device whose kernels are compiled by `program` (a C++20
    /// compiler command) instead of `$CXX` or the first one on the `PATH`.
    pub fn new_cpu_with_compiler(program: impl Into<String>) -> Device {
        Device::from_backend(
            DeviceKind::Cpu,
            0,
            Box::new(crate::backend::cpu::CpuBackend::with_compiler(
                program.into(),
            )),
        )
    }

    /// The process-wide device for CUDA GPU `ordinal`.
    ///
    /// Returns an error, never panics, when kernelkit was built without the
    /// `cuda` feature, or when the driver, NVRTC or the GPU is missing.
    pub fn cuda(ordinal: u32) -> Result<Device> {
        static DEVICES: Mutex<Vec<(u32, Device)>> = Mutex::new(Vec::new());
        let mut devices = DEVICES.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, d)) = devices.iter().find(|(o, _)| *o == ordinal) {
            return Ok(d.clone());
        }
        let device = Device::new_cuda(ordinal)?;
        devices.push((ordinal, device.clone()));
        Ok(device)
    }

    /// A new CUDA device object with its own kernel cache (the process-wide
    /// one is [`Device::cuda`]).
    pub fn new_cuda(ordinal: u32) -> Result<Device> {
        Device::new_cuda_with(ordinal, &crate::options::CudaCompileOptions::default())
    }

    /// A new CUDA device object whose compiles add `options` (after
    /// `KERNELKIT_NVRTC_FLAGS`, which every CUDA device uses). It has its
    /// own kernel cache; the options are part of every module key.
    pub fn new_cuda_with(
        ordinal: u32,
        options: &crate::options::CudaCompileOptions,
    ) -> Result<Device> {
        #[cfg(feature = "cuda")]
        {
            let backend = crate::backend::cuda::CudaBackend::open(ordinal, options)?;
            Ok(Device::from_backend(DeviceKind::Cuda, ordinal, backend))
        }
        #[cfg(not(feature = "cuda"))]
        {
            let _ = options;
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
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Ok(Stream(Arc::new(StreamShared {
            device: self.clone(),
            handle: self.0.backend.new_stream()?,
            id: NEXT.fetch_add(1, Ordering::Relaxed),
        })))
    }

    /// The stream calls use when they name none.
    pub fn default_stream(&self) -> &Stream {
        self.0.default_stream.get_or_init(|| {
            self.new_stream()
                .expect("the default stream of an opened device can be created")
        })
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
        let c = &self.0.cache;
        let mut stats = CacheStats {
            hits: c.hits.get(),
            misses: c.misses.get(),
            compiles: c.compiles.get(),
            failures: c.failures.get(),
            compile_ns: c.compile_ns.get(),
            ..CacheStats::default()
        };
        if let Some(store) = &self.0.store {
            store.add_stats(&mut stats);
        }
        stats
    }

    /// Number of modules this device has loaded (or is compiling).
    pub fn loaded_modules(&self) -> usize {
        self.0.cache.len()
    }

    /// The function of `variant` on this device: from the variant itself on
    /// a hit (no lock), else from the kernel cache, compiling or loading the
    /// module once however many threads ask.
    ///
    /// On that hit the function is borrowed from the variant: cloning the
    /// `Arc` would be two atomic updates, per call, on a count that every
    /// thread calling the kernel shares.
    pub(crate) fn function<'v>(
        &self,
        kernel: &str,
        variant: &'v Variant,
    ) -> Result<std::borrow::Cow<'v, Function>, CompileError> {
        if let Some((id, f)) = variant.function.get() {
            // Instance numbers are unique to a device object.
            if id.instance == self.0.id.instance {
                self.0.cache.hits.incr();
                return Ok(std::borrow::Cow::Borrowed(f));
            }
        }
        let backend = &*self.0.backend;
        let key = variant.module_key(backend.options());
        let (module, outcome) = self
            .0
            .cache
            .module(&key, || self.build_module(kernel, variant));
        match outcome {
            Outcome::Hit => self.0.cache.hits.incr(),
            Outcome::Built | Outcome::Waited => self.0.cache.misses.incr(),
        }
        let function = backend.function(kernel, &module?, &variant.name)?;
        let _ = variant.function.set((self.0.id, function.clone()));
        Ok(std::borrow::Cow::Owned(function))
    }

    /// Loads a module from the artifact store, or compiles (and stores) it.
    ///
    /// The kernel cache runs this once per module key in this process; the
    /// store's per-key lock makes other processes that miss the same key
    /// wait for this one's entry instead of compiling it again. Nothing the
    /// store does can fail the call: a bad entry is a miss.
    fn build_module(&self, kernel: &str, variant: &Variant) -> Result<Module, CompileError> {
        let backend = &*self.0.backend;
        let Some(store) = self.0.store.as_ref() else {
            let artifact = self.compile(kernel, variant)?;
            return backend.load(kernel, variant, &artifact);
        };
        let key = ArtifactStore::key_for(backend, variant);
        if let Some(module) = self.load_stored(store, &key, kernel, variant) {
            return Ok(module);
        }
        let lock = store.lock(&key);
        // Another process may have published it while this one waited.
        if lock.is_some() {
            if let Some(module) = self.load_stored(store, &key, kernel, variant) {
                return Ok(module);
            }
        }
        store.record_miss();
        let artifact = self.compile(kernel, variant)?;
        store.put(&key, kernel, backend.name(), variant.name(), &artifact);
        drop(lock);
        backend.load(kernel, variant, &artifact)
    }

    /// Runs the backend compiler, counting the run and its wall time.
    fn compile(&self, kernel: &str, variant: &Variant) -> Result<Vec<u8>, CompileError> {
        let cache = &self.0.cache;
        cache.compiles.incr();
        let started = Instant::now();
        let artifact = self.0.backend.compile(kernel, variant);
        cache.compile_ns.add(started.elapsed().as_nanos() as u64);
        artifact
    }

    /// The module from the store's entry for `key`, if there is a good one.
    fn load_stored(
        &self,
        store: &ArtifactStore,
        key: &StoreKey,
        kernel: &str,
        variant: &Variant,
    ) -> Option<Module> {
        let Lookup::Hit(bytes) = store.get(key) else {
            return None;
        };
        match self.0.backend.load(kernel, variant, &bytes) {
            Ok(module) => {
                store.record_hit();
                Some(module)
            }
            Err(e) => {
                store.record_bad_load(key, &e);
                None
            }
        }
    }
}

pub(crate) struct StreamShared {
    device: Device,
    handle: StreamHandle,
    id: u64,
}

/// An ordered queue of work on one device. Work submitted to one stream runs
/// in submission order; many threads may each own a stream and submit at
/// once. On the CPU, a launch runs to completion before it returns.
#[derive(Clone)]
pub struct Stream(Arc<StreamShared>);

impl fmt::Debug for Stream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Stream({} #{})", self.0.device.label(), self.0.id)
    }
}

impl PartialEq for Stream {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Stream {
    /// The stream's device.
    pub fn device(&self) -> &Device {
        &self.0.device
    }
    /// Waits until all work submitted so far has finished.
    pub fn synchronize(&self) -> Result<()> {
        self.0.device.backend().synchronize(&self.0.handle)
    }
    /// Waits until all work submitted so far has finished, for at most
    /// `timeout`. Work still running then (a kernel that never returns)
    /// cannot be stopped: the call fails with
    /// [`DeviceError::TimedOut`](crate::DeviceError::TimedOut) and the
    /// device is no longer usable. (CPU launches finish before they return,
    /// so on the CPU this never waits; bound a CPU launch from another
    /// thread, as `kernelkit run --timeout` does.)
    pub fn synchronize_timeout(&self, timeout: std::time::Duration) -> Result<()> {
        self.0
            .device
            .backend()
            .synchronize_timeout(&self.0.handle, timeout)
    }
    pub(crate) fn handle(&self) -> &StreamHandle {
        &self.0.handle
    }
}
