//! Compiled artifacts shared by the devices of one process: compile once
//! per architecture, load once per device.
//!
//! Two GPUs of one model have the same backend identity (compiler, flags,
//! architecture), so a variant's module key is the same on both. The
//! process-wide devices (`Device::cuda(n)`) share one pool: the first
//! device to need a key builds it (its tiers, else a compile) while the
//! others wait on the key's cell, then each of them loads the same bytes
//! from memory — a module load, no NVRTC, no disk. Devices opened on their
//! own (`Device::new_cuda`, a builder) keep their own caches and use no
//! pool, as their documentation promises.
//!
//! The pool keeps artifacts up to a byte bound and a count bound, oldest
//! first out; a key whose artifact went is simply built again by the next
//! device that needs it. The count is twice the modules one device keeps
//! loaded (`max_loaded_modules`): enough for the other devices to load what
//! one built, and for a device to reload from memory the modules its bound
//! unloaded last. Without it a program that generates kernels without end
//! would grow by every cubin up to the byte bound while each device holds
//! only its bound of modules: the pool must not hold what no device can
//! still load from it.

use std::collections::VecDeque;
use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::backend::Module;
use crate::cache::key::ModuleKey;
use crate::config::CacheConfig;
use crate::error::CompileError;
use crate::stats::Counter;
use crate::sync::{lock, Mutex};

/// Bytes of artifacts a pool keeps by default: 256 MiB (a cubin of a
/// small kernel is a few KiB).
pub(crate) const DEFAULT_POOL_BYTES: usize = 256 << 20;

/// One key's artifact, once built; its lock is held while it is built.
type Cell = Arc<Mutex<Option<Arc<[u8]>>>>;

/// See the module documentation.
pub(crate) struct ArtifactPool {
    inner: Mutex<Inner>,
    max_bytes: usize,
    max_entries: usize,
    /// Modules a device loaded from another device's artifact.
    pub(crate) shared_loads: Counter,
}

#[derive(Default)]
struct Inner {
    cells: FxHashMap<ModuleKey, Cell>,
    /// Keys whose artifact is kept, oldest first, with their sizes.
    order: VecDeque<(ModuleKey, usize)>,
    bytes: usize,
}

impl ArtifactPool {
    /// An empty pool that keeps at most `max_bytes` of artifacts and at
    /// most `max_entries` of them (at least one).
    pub(crate) fn new(max_bytes: usize, max_entries: usize) -> ArtifactPool {
        ArtifactPool {
            inner: Mutex::new(Inner::default()),
            max_bytes,
            max_entries: max_entries.max(1),
            shared_loads: Counter::default(),
        }
    }

    /// The process-wide pool of the CUDA devices, bounded by the process's
    /// configuration (`config`: the process-wide devices all open with it).
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub(crate) fn cuda(config: &CacheConfig) -> Arc<ArtifactPool> {
        static POOL: std::sync::OnceLock<Arc<ArtifactPool>> = std::sync::OnceLock::new();
        POOL.get_or_init(|| {
            let entries = config.max_loaded_modules.saturating_mul(2);
            Arc::new(ArtifactPool::new(DEFAULT_POOL_BYTES, entries))
        })
        .clone()
    }

    /// The module of `key`: loaded with `load` from an artifact another
    /// device built, else built by `build`, which returns the module and
    /// its artifact (kept for the other devices). One build per key at a
    /// time across the devices; a load that fails falls back to a build.
    pub(crate) fn module(
        &self,
        key: &ModuleKey,
        load: impl FnOnce(&[u8]) -> Result<Module, CompileError>,
        build: impl FnOnce() -> Result<(Module, Vec<u8>), CompileError>,
    ) -> Result<Module, CompileError> {
        let cell = lock(&self.inner).cells.entry(*key).or_default().clone();
        let mut artifact = lock(&cell);
        if let Some(bytes) = artifact.clone() {
            drop(artifact);
            match load(&bytes) {
                Ok(module) => {
                    self.shared_loads.incr();
                    return Ok(module);
                }
                Err(e) => {
                    tracing::debug!("kernelkit: a shared artifact did not load, building: {e}");
                    artifact = lock(&cell);
                }
            }
        }
        let (module, bytes) = match build() {
            Ok(built) => built,
            Err(e) => {
                drop(artifact);
                let mut inner = lock(&self.inner);
                if inner.cells.get(key).is_some_and(|c| Arc::ptr_eq(c, &cell)) {
                    inner.cells.remove(key);
                }
                return Err(e);
            }
        };
        let len = bytes.len();
        *artifact = Some(bytes.into());
        drop(artifact);
        self.keep(key, len);
        Ok(module)
    }

    /// Accounts for `key`'s new artifact and drops the oldest past the
    /// bounds (the newest always stays).
    fn keep(&self, key: &ModuleKey, len: usize) {
        let mut inner = lock(&self.inner);
        if inner.order.iter().any(|(k, _)| k == key) {
            return; // Rebuilt after a failed load: accounted already.
        }
        inner.order.push_back((*key, len));
        inner.bytes += len;
        while (inner.bytes > self.max_bytes || inner.order.len() > self.max_entries)
            && inner.order.len() > 1
        {
            let Some((old, n)) = inner.order.pop_front() else {
                break;
            };
            inner.bytes -= n;
            inner.cells.remove(&old);
        }
    }

    /// Artifacts kept (tests).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        lock(&self.inner).order.len()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Barrier;

    fn key(text: &str) -> ModuleKey {
        ModuleKey::derive("test", "", text, "")
    }

    /// Eight "devices" ask for one key at once: one build; the other seven
    /// load its bytes.
    #[test]
    fn one_build_per_key_across_devices() {
        let pool = Arc::new(ArtifactPool::new(1 << 20, 64));
        let (builds, loads) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let barrier = Arc::new(Barrier::new(8));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let (pool, builds, loads, barrier) =
                    (pool.clone(), builds.clone(), loads.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    let m = pool
                        .module(
                            &key("k"),
                            |bytes| {
                                loads.fetch_add(1, Ordering::SeqCst);
                                Ok(Arc::new(bytes.to_vec()) as Module)
                            },
                            || {
                                builds.fetch_add(1, Ordering::SeqCst);
                                std::thread::sleep(std::time::Duration::from_millis(10));
                                Ok((Arc::new(vec![7u8]) as Module, vec![7u8]))
                            },
                        )
                        .unwrap();
                    m.downcast_ref::<Vec<u8>>().unwrap().clone()
                })
            })
            .collect();
        for t in threads {
            assert_eq!(t.join().unwrap(), vec![7u8]);
        }
        assert_eq!(builds.load(Ordering::SeqCst), 1);
        assert_eq!(loads.load(Ordering::SeqCst), 7);
        assert_eq!(pool.shared_loads.get(), 7);
    }

    /// Past its byte bound the pool forgets the oldest artifacts; a failed
    /// build is not kept; a load that fails builds.
    #[test]
    fn bounded_and_failures_not_kept() {
        let pool = ArtifactPool::new(10, 64);
        let build = |n: u8| move || Ok((Arc::new(n) as Module, vec![n; 4]));
        let never = |_: &[u8]| -> Result<Module, CompileError> { unreachable!("nothing kept") };
        for n in 0..5u8 {
            pool.module(&key(&n.to_string()), never, build(n)).unwrap();
        }
        assert_eq!(pool.len(), 2, "two artifacts of 4 bytes fit in 10");
        let err = CompileError::Compiler {
            kernel: "k".into(),
            compiler: "c".into(),
            reason: "no".into(),
        };
        assert!(pool
            .module(&key("bad"), never, || Err(err.clone()))
            .is_err());
        let rebuilt = pool
            .module(
                &key("4"),
                |_| Err(err.clone()),
                || Ok((Arc::new(40u8) as Module, vec![4; 4])),
            )
            .unwrap();
        assert_eq!(*rebuilt.downcast_ref::<u8>().unwrap(), 40);
    }

    /// Small artifacts far under the byte bound are still bounded by count:
    /// the oldest go first and the newest are loaded, not built again.
    #[test]
    fn bounded_by_count_too() {
        let pool = ArtifactPool::new(1 << 30, 3);
        let built = AtomicUsize::new(0);
        let build = |n: u8| {
            let built = &built;
            move || {
                built.fetch_add(1, Ordering::SeqCst);
                Ok((Arc::new(n) as Module, vec![n; 4]))
            }
        };
        let load = |bytes: &[u8]| Ok(Arc::new(bytes[0]) as Module);
        for n in 0..10u8 {
            pool.module(&key(&n.to_string()), load, build(n)).unwrap();
        }
        assert_eq!(pool.len(), 3);
        assert_eq!(built.load(Ordering::SeqCst), 10);
        for n in 7..10u8 {
            let m = pool.module(&key(&n.to_string()), load, build(n)).unwrap();
            assert_eq!(*m.downcast_ref::<u8>().unwrap(), n);
        }
        assert_eq!(
            built.load(Ordering::SeqCst),
            10,
            "the newest three were loaded"
        );
        pool.module(&key("0"), load, build(0)).unwrap();
        assert_eq!(
            built.load(Ordering::SeqCst),
            11,
            "the oldest was built again"
        );
    }
}
