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
//! - The cache is bounded (`max_loaded_modules`): past the bound, a clock
//!   hand (an approximation of least recently used: a used module is
//!   spared once) picks a module that is neither pinned nor used since the
//!   hand last passed, takes it out of the map and retires it (see
//!   `cache::loaded`). The module is freed when its last holder lets go;
//!   the backend then unloads it once the work queued on it is done (CUDA:
//!   events recorded after its launches, see `backend::cuda::unload`), so
//!   no launch ever runs unloaded code. Asked for again, it is built again (a
//!   load from a tier, or a compile) and counted as a reload.

use rustc_hash::{FxHashMap, FxHashSet};

use crate::backend::Module;
use crate::cache::key::ModuleKey;
use crate::cache::loaded::Loaded;
use crate::error::CompileError;
use crate::stats::Counter;
use crate::sync::{lock, Arc, Condvar, Mutex, RwLock};

const SHARDS: usize = 16;

/// A loaded module as the cache shares it.
pub(crate) type Shared = std::sync::Arc<Loaded>;

/// Keys unloaded and not asked for again that the cache remembers (to
/// count reloads): a bounded set, cleared when full, so a program that
/// never asks again for what it unloaded does not grow it.
const REMEMBERED_UNLOADS: usize = 1 << 16;

enum State {
    Pending,
    Ready(Shared),
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

    fn ready(&self) -> Option<Shared> {
        match &*lock(&self.state) {
            State::Ready(m) => Some(m.clone()),
            _ => None,
        }
    }

    fn wait(&self) -> Result<Shared, CompileError> {
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

/// The clock: every ready module, and the hand. A new module goes in just
/// behind the hand, so the hand reaches it last: it has a whole turn to be
/// used before the hand asks.
#[derive(Default)]
struct Clock {
    ring: Vec<Shared>,
    hand: usize,
}

impl Clock {
    /// Takes out the module the hand stops at: the first one neither
    /// pinned nor used since the hand last passed (clearing the marks of
    /// the used ones it passes). `None` when every module is pinned.
    fn victim(&mut self, newest: &Shared) -> Option<Shared> {
        // Two turns: the first may only clear marks.
        for _ in 0..2 * self.ring.len() + 1 {
            if self.ring.is_empty() {
                return None;
            }
            if self.hand >= self.ring.len() {
                self.hand = 0;
            }
            let m = &self.ring[self.hand];
            if std::sync::Arc::ptr_eq(m, newest) || m.pinned() || m.take_reference() {
                self.hand += 1;
                continue;
            }
            // `remove` keeps the order: the hand now points at the next.
            return Some(self.ring.remove(self.hand));
        }
        None
    }

    /// Adds a new module just behind the hand.
    fn insert(&mut self, loaded: Shared) {
        let at = self.hand.min(self.ring.len());
        self.ring.insert(at, loaded);
        self.hand = at + 1;
    }
}

/// See the module documentation.
pub(crate) struct KernelCache {
    shards: Vec<RwLock<FxHashMap<ModuleKey, Arc<Slot>>>>,
    /// Most ready modules kept.
    max_loaded: usize,
    clock: Mutex<Clock>,
    /// Keys unloaded since (see [`REMEMBERED_UNLOADS`]).
    unloaded_keys: Mutex<FxHashSet<ModuleKey>>,
    /// Modules built (loaded from a tier or compiled), reloads included.
    pub(crate) loads: Counter,
    /// Modules unloaded by the bound.
    pub(crate) unloads: Counter,
    /// Loads of a key unloaded before.
    pub(crate) reloads: Counter,
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
        KernelCache::new(crate::config::DEFAULT_MAX_LOADED_MODULES)
    }
}

impl KernelCache {
    /// An empty cache that keeps at most `max_loaded` modules (at least 1).
    pub(crate) fn new(max_loaded: usize) -> Self {
        KernelCache {
            shards: (0..SHARDS)
                .map(|_| RwLock::new(FxHashMap::default()))
                .collect(),
            max_loaded: max_loaded.max(1),
            clock: Mutex::new(Clock::default()),
            unloaded_keys: Mutex::new(FxHashSet::default()),
            loads: Counter::default(),
            unloads: Counter::default(),
            reloads: Counter::default(),
            hits: Counter::default(),
            misses: Counter::default(),
            compiles: Counter::default(),
            failures: Counter::default(),
            compile_ns: Counter::default(),
        }
    }

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
    ) -> (Result<Shared, CompileError>, Outcome) {
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
    ) -> Result<Shared, CompileError> {
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
        match result {
            Ok(m) => {
                let loaded = std::sync::Arc::new(Loaded::new(m, *key));
                slot.finish(State::Ready(loaded.clone()));
                self.admit(&loaded);
                Ok(loaded)
            }
            Err(e) => {
                self.fail(key, slot, e.clone());
                Err(e)
            }
        }
    }

    /// Counts a new module, and unloads modules while more than the bound
    /// are loaded (see the module documentation).
    fn admit(&self, loaded: &Shared) {
        self.loads.incr();
        {
            let mut keys = lock(&self.unloaded_keys);
            if keys.remove(&loaded.key) {
                self.reloads.incr();
            }
        }
        let mut victims = Vec::new();
        {
            let mut clock = lock(&self.clock);
            clock.insert(loaded.clone());
            while clock.ring.len() > self.max_loaded {
                match clock.victim(loaded) {
                    Some(v) => victims.push(v),
                    None => break,
                }
            }
        }
        for victim in victims {
            self.unload(victim);
        }
    }

    /// Retires `victim` and takes it out of the map (if the map still
    /// holds it); puts it back in the clock if it was pinned meanwhile.
    fn unload(&self, victim: Shared) {
        if !victim.retire() {
            lock(&self.clock).insert(victim);
            return;
        }
        {
            let mut map = self
                .shard(&victim.key)
                .write()
                .unwrap_or_else(|p| p.into_inner());
            let holds = map
                .get(&victim.key)
                .and_then(|s| s.ready())
                .is_some_and(|m| std::sync::Arc::ptr_eq(&m, &victim));
            if holds {
                map.remove(&victim.key);
            }
        }
        self.unloads.incr();
        let mut keys = lock(&self.unloaded_keys);
        if keys.len() >= REMEMBERED_UNLOADS {
            keys.clear();
        }
        keys.insert(victim.key);
    }

    /// Modules kept loaded now (ready ones; not those being built).
    pub(crate) fn loaded(&self) -> usize {
        lock(&self.clock).ring.len()
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
    #[cfg(all(test, loom))]
    pub(crate) fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.read().unwrap_or_else(|p| p.into_inner()).len())
            .sum()
    }
}

/// A cache that goes (its device went) retires every module it kept: the
/// slots bound to them are cleared, so no variant keeps a module (nor, on
/// CUDA, its context) of a device that is gone.
impl Drop for KernelCache {
    fn drop(&mut self) {
        let ring = std::mem::take(&mut lock(&self.clock).ring);
        for loaded in ring {
            loaded.retire_for_good();
        }
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
                        .module
                        .clone()
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

    /// Past its bound the cache unloads modules not used since the hand
    /// passed, never a pinned one; a key asked for again is rebuilt and
    /// counted as a reload; the module goes once its last holder does.
    #[test]
    fn bounded_by_a_clock_that_spares_pinned_and_used_modules() {
        let cache = KernelCache::new(4);
        let get = |n: usize| {
            cache
                .module(&key(&n.to_string()), || Ok(module(n)))
                .0
                .unwrap()
        };
        let pinned = get(0);
        assert!(pinned.pin());
        let held = get(1);
        let weak = std::sync::Arc::downgrade(&held.module);
        for n in 2..20 {
            get(n);
            assert!(cache.loaded() <= 4, "{} loaded", cache.loaded());
        }
        assert_eq!(cache.loads.get(), 20);
        assert_eq!(cache.unloads.get(), 16);
        assert!(cache.is_ready(&key("0")), "the pinned module stays");
        assert!(!pinned.retired());
        assert!(held.retired(), "module 1 was unloaded");
        assert!(!held.pin(), "an unloaded module is not pinned");
        assert!(weak.upgrade().is_some(), "but lives while held");
        drop(held);
        assert!(weak.upgrade().is_none(), "and goes with its last holder");
        assert_eq!(cache.reloads.get(), 0);
        get(1);
        assert_eq!(cache.reloads.get(), 1);
        assert_eq!(cache.loads.get(), 21);
        // A pinned module beyond the bound: the bound yields to pins.
        let all: Vec<_> = (100..106)
            .map(|n| {
                let m = get(n);
                assert!(m.pin(), "the newest module is never the one unloaded");
                m
            })
            .collect();
        get(200);
        assert!(cache.loaded() >= 7, "pinned modules are never unloaded");
        assert!(all.iter().all(|m| !m.retired()));
    }

    /// A module used since the hand passed is spared once: a hot module
    /// survives a stream of cold ones.
    #[test]
    fn a_hot_module_outlives_cold_ones() {
        let cache = KernelCache::new(8);
        let hot = cache.module(&key("hot"), || Ok(module(0))).0.unwrap();
        for n in 0..200 {
            hot.touch();
            cache
                .module(&key(&n.to_string()), || Ok(module(n)))
                .0
                .unwrap();
        }
        assert!(!hot.retired());
        assert!(cache.is_ready(&key("hot")));
        assert_eq!(cache.loaded(), 8);
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

    fn value(m: &Shared) -> usize {
        *m.module.downcast_ref::<usize>().unwrap()
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
