//! The device kernel cache: module key → loaded module, with single flight.
//!
//! - A hit reads one shard's map under that shard's read lock (16 shards, so
//!   no lock is global); the hot path avoids even that, since a variant keeps
//!   its function after the first lookup (see `Variant::function`).
//! - A miss inserts a pending [`Slot`] and the thread that inserted it
//!   compiles, outside every lock; threads asking for the same key wait on
//!   the slot, threads asking for other keys compile in parallel.
//! - A failure is delivered to every waiter and the slot is removed, so the
//!   next call compiles again: failures are never cached as successes.
//! - Modules are never evicted while the device lives: work queued on a
//!   stream may still run code from any of them.

use rustc_hash::FxHashMap;

use crate::backend::Module;
use crate::cache::key::ModuleKey;
use crate::error::CompileError;
use crate::stats::Counter;
use crate::sync::{lock, Arc, Condvar, Mutex, RwLock};

const SHARDS: usize = 16;

enum State {
    Pending,
    Ready(Module),
    Failed(CompileError),
}

/// One module key's entry: pending while its compile runs, then ready or
/// failed.
pub(crate) struct Slot {
    state: Mutex<State>,
    done: Condvar,
}

impl Slot {
    fn pending() -> Slot {
        Slot {
            state: Mutex::new(State::Pending),
            done: Condvar::new(),
        }
    }

    fn ready(&self) -> Option<Module> {
        match &*lock(&self.state) {
            State::Ready(m) => Some(m.clone()),
            _ => None,
        }
    }

    fn wait(&self) -> Result<Module, CompileError> {
        let mut state = lock(&self.state);
        loop {
            match &*state {
                State::Ready(m) => return Ok(m.clone()),
                State::Failed(e) => return Err(e.clone()),
                State::Pending => {
                    state = match self.done.wait(state) {
                        Ok(g) => g,
                        Err(p) => p.into_inner(),
                    }
                }
            }
        }
    }

    fn finish(&self, outcome: State) {
        *lock(&self.state) = outcome;
        self.done.notify_all();
    }
}

/// How a lookup was answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The module was loaded already.
    Hit,
    /// This thread compiled (or loaded from disk) the module.
    Built,
    /// Another thread was building it; this one waited.
    Waited,
}

/// See the module documentation.
pub(crate) struct KernelCache {
    shards: Vec<RwLock<FxHashMap<ModuleKey, Arc<Slot>>>>,
    pub(crate) hits: Counter,
    pub(crate) misses: Counter,
    pub(crate) compiles: Counter,
    pub(crate) failures: Counter,
    /// Wall time of compiler runs only (the builder adds it): loading
    /// from the artifact store or waiting for another process is not
    /// compiling.
    pub(crate) compile_ns: Counter,
}

impl Default for KernelCache {
    fn default() -> Self {
        KernelCache {
            shards: (0..SHARDS)
                .map(|_| RwLock::new(FxHashMap::default()))
                .collect(),
            hits: Counter::default(),
            misses: Counter::default(),
            compiles: Counter::default(),
            failures: Counter::default(),
            compile_ns: Counter::default(),
        }
    }
}

impl KernelCache {
    fn shard(&self, key: &ModuleKey) -> &RwLock<FxHashMap<ModuleKey, Arc<Slot>>> {
        // The key is a uniform hash already: its low bits pick the shard.
        &self.shards[key.as_bytes()[0] as usize % SHARDS]
    }

    /// The module for `key`, building it with `build` if no thread has. At
    /// most one `build` runs per key at a time; see the module docs.
    pub(crate) fn module(
        &self,
        key: &ModuleKey,
        build: impl FnOnce() -> Result<Module, CompileError>,
    ) -> (Result<Module, CompileError>, Outcome) {
        let shard = self.shard(key);
        let existing = shard
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(key)
            .cloned();
        let slot = match existing {
            Some(slot) => {
                if let Some(m) = slot.ready() {
                    return (Ok(m), Outcome::Hit);
                }
                slot
            }
            None => {
                let mut map = shard.write().unwrap_or_else(|p| p.into_inner());
                match map.get(key) {
                    Some(slot) => slot.clone(),
                    None => {
                        let slot = Arc::new(Slot::pending());
                        map.insert(*key, slot.clone());
                        drop(map);
                        return (self.build(key, &slot, build), Outcome::Built);
                    }
                }
            }
        };
        (slot.wait(), Outcome::Waited)
    }

    /// Runs the build for a slot this thread owns and publishes its outcome.
    fn build(
        &self,
        key: &ModuleKey,
        slot: &Arc<Slot>,
        build: impl FnOnce() -> Result<Module, CompileError>,
    ) -> Result<Module, CompileError> {
        /// Publishes a failure if the build panics, so waiters never hang.
        struct Abandon<'a> {
            cache: &'a KernelCache,
            key: &'a ModuleKey,
            slot: &'a Arc<Slot>,
            armed: bool,
        }
        impl Drop for Abandon<'_> {
            fn drop(&mut self) {
                if self.armed {
                    self.cache.fail(
                        self.key,
                        self.slot,
                        CompileError::Compiler {
                            kernel: self.key.to_string(),
                            compiler: "kernelkit".into(),
                            reason: "the compile panicked".into(),
                        },
                    );
                }
            }
        }
        let mut guard = Abandon {
            cache: self,
            key,
            slot,
            armed: true,
        };
        let result = build();
        guard.armed = false;
        match &result {
            Ok(m) => slot.finish(State::Ready(m.clone())),
            Err(e) => self.fail(key, slot, e.clone()),
        }
        result
    }

    fn fail(&self, key: &ModuleKey, slot: &Arc<Slot>, error: CompileError) {
        self.failures.incr();
        {
            let mut map = self.shard(key).write().unwrap_or_else(|p| p.into_inner());
            if map.get(key).is_some_and(|s| Arc::ptr_eq(s, slot)) {
                map.remove(key);
            }
        }
        slot.finish(State::Failed(error));
    }

    /// Whether the module for `key` is loaded (not merely being built),
    /// without building it or counting anything.
    pub(crate) fn is_ready(&self, key: &ModuleKey) -> bool {
        let slot = self
            .shard(key)
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(key)
            .cloned();
        slot.is_some_and(|s| s.ready().is_some())
    }

    /// Number of modules loaded or being built.
    pub(crate) fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.read().unwrap_or_else(|p| p.into_inner()).len())
            .sum()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Barrier;

    /// A key named by `text`, for tests.
    fn key(text: &str) -> ModuleKey {
        ModuleKey::derive("test", "", text, "")
    }

    fn module(n: usize) -> Module {
        Arc::new(n)
    }

    #[test]
    fn single_flight_and_failure_delivery() {
        let cache = Arc::new(KernelCache::default());
        let builds = Arc::new(AtomicUsize::new(0));
        let barrier = Arc::new(Barrier::new(16));
        let handles: Vec<_> = (0..16)
            .map(|_| {
                let (cache, builds, barrier) = (cache.clone(), builds.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    cache
                        .module(&key("k"), || {
                            builds.fetch_add(1, Ordering::SeqCst);
                            std::thread::sleep(std::time::Duration::from_millis(20));
                            Ok(module(7))
                        })
                        .0
                        .unwrap()
                        .downcast::<usize>()
                        .unwrap()
                })
            })
            .collect();
        for h in handles {
            assert_eq!(*h.join().unwrap(), 7);
        }
        assert_eq!(builds.load(Ordering::SeqCst), 1);

        let err = CompileError::Compiler {
            kernel: "f".into(),
            compiler: "c".into(),
            reason: "no".into(),
        };
        let (r, _) = cache.module(&key("f"), || Err(err.clone()));
        assert!(r.is_err());
        let (r, outcome) = cache.module(&key("f"), || Ok(module(1)));
        assert!(r.is_ok());
        assert_eq!(outcome, Outcome::Built, "a failure is not cached");
    }

    #[test]
    fn a_panicking_build_releases_waiters() {
        let cache = KernelCache::default();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            cache.module(&key("p"), || panic!("boom"))
        }));
        assert!(r.is_err());
        let (r, outcome) = cache.module(&key("p"), || Ok(module(2)));
        assert!(r.is_ok());
        assert_eq!(outcome, Outcome::Built);
    }
}

/// Model-checked with `loom` (`RUSTFLAGS="--cfg loom" cargo test --lib loom_`).
#[cfg(all(test, loom))]
mod loom_models {
    use super::*;
    use crate::sync::model;
    use loom::sync::atomic::{AtomicUsize, Ordering};
    use loom::thread;

    /// A key named by `text`, for tests.
    fn key(text: &str) -> ModuleKey {
        ModuleKey::derive("test", "", text, "")
    }

    fn module(n: usize) -> Module {
        std::sync::Arc::new(n)
    }

    fn value(m: &Module) -> usize {
        *m.downcast_ref::<usize>().unwrap()
    }

    fn failure() -> CompileError {
        CompileError::Compiler {
            kernel: "k".into(),
            compiler: "cc".into(),
            reason: "rejected".into(),
        }
    }

    /// Three threads ask for one new key: one build, one module for all.
    /// (Three threads: at most 5 forced switches per schedule, ~3 s; the
    /// unbounded space runs for many minutes.)
    #[test]
    fn loom_single_flight() {
        model(Some(5), || {
            let cache = Arc::new(KernelCache::default());
            let builds = Arc::new(AtomicUsize::new(0));
            let ask = |cache: &KernelCache, builds: &AtomicUsize| {
                cache
                    .module(&key("k"), || {
                        builds.fetch_add(1, Ordering::SeqCst);
                        Ok(module(7))
                    })
                    .0
                    .unwrap()
            };
            let threads: Vec<_> = (0..2)
                .map(|_| {
                    let (cache, builds) = (cache.clone(), builds.clone());
                    thread::spawn(move || ask(&cache, &builds))
                })
                .collect();
            let mine = ask(&cache, &builds);
            for t in threads {
                let theirs = t.join().unwrap();
                assert!(std::sync::Arc::ptr_eq(&mine, &theirs));
            }
            assert_eq!(value(&mine), 7);
            assert_eq!(builds.load(Ordering::SeqCst), 1);
            assert_eq!(cache.len(), 1);
        });
    }

    /// Two threads ask for a key whose build fails: both get the error, the
    /// slot is gone afterwards, and the next call builds again.
    #[test]
    fn loom_failure_reaches_every_waiter_and_is_not_cached() {
        model(None, || {
            let cache = Arc::new(KernelCache::default());
            let builds = Arc::new(AtomicUsize::new(0));
            let ask = |cache: &KernelCache, builds: &AtomicUsize| {
                cache
                    .module(&key("k"), || {
                        builds.fetch_add(1, Ordering::SeqCst);
                        Err(failure())
                    })
                    .0
            };
            let t = {
                let (cache, builds) = (cache.clone(), builds.clone());
                thread::spawn(move || ask(&cache, &builds))
            };
            let mine = ask(&cache, &builds);
            let theirs = t.join().unwrap();
            assert!(matches!(mine, Err(CompileError::Compiler { .. })));
            assert!(matches!(theirs, Err(CompileError::Compiler { .. })));
            // One build shared, or a second build by a thread that came
            // after the first failure was delivered: never zero, never more.
            let n = builds.load(Ordering::SeqCst);
            assert!(n == 1 || n == 2, "{n} builds");
            assert_eq!(cache.failures.get(), n as u64);
            assert_eq!(cache.len(), 0, "a failed slot is removed");

            let (again, outcome) = cache.module(&key("k"), || Ok(module(1)));
            assert_eq!(value(&again.unwrap()), 1);
            assert_eq!(outcome, Outcome::Built);
        });
    }

    /// A key that is ready is a hit even while another key of the same shard
    /// is being built: the build holds no lock that the hit needs. (If it
    /// did, the build below, which waits for the hit, would deadlock, and
    /// loom reports a deadlock as a failure.)
    #[test]
    fn loom_a_hit_never_waits_for_another_keys_build() {
        model(None, || {
            let cache = Arc::new(KernelCache::default());
            let building = key("building");
            let ready = (0..)
                .map(|i| key(&format!("ready{i}")))
                .find(|k| std::ptr::eq(cache.shard(k), cache.shard(&building)))
                .unwrap();
            let _ = cache.module(&ready, || Ok(module(2)));

            let gate = Arc::new((Mutex::new(false), Condvar::new()));
            let t = {
                let (cache, gate) = (cache.clone(), gate.clone());
                thread::spawn(move || {
                    cache
                        .module(&building, || {
                            let mut open = lock(&gate.0);
                            while !*open {
                                open = gate.1.wait(open).unwrap();
                            }
                            Ok(module(1))
                        })
                        .0
                        .unwrap()
                })
            };
            let (hit, outcome) = cache.module(&ready, || unreachable!("ready is built"));
            assert_eq!(outcome, Outcome::Hit);
            assert_eq!(value(&hit.unwrap()), 2);
            *lock(&gate.0) = true;
            gate.1.notify_all();
            assert_eq!(value(&t.join().unwrap()), 1);
        });
    }
}
