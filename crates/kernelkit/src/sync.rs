//! The synchronization primitives the caches use, in one place, so that the
//! `loom` model checker can replace them (`RUSTFLAGS="--cfg loom"`).
//!
//! Lock order, for every lock in the crate (take them top to bottom, never
//! upwards): `VariantMemo::writer` → `KernelCache` shard lock → `Slot::state`.
//! No lock is held while a compiler runs or while a kernel executes. The one
//! exception is not a lock of this process: the artifact store's per-key
//! file lock (`cache::lock`), which a thread that owns a pending kernel
//! cache slot holds across its compile so that other *processes* wait for
//! it. It is taken with no in-process lock held, one key at a time, and its
//! wait is bounded, so it cannot deadlock.
//!
//! The loom models (`loom_*` tests in `kernel::memo` and
//! `cache::kernel_cache`, run by `scripts/test.sh`) check the variant memo
//! and the kernel cache's single-flight protocol with these primitives.
//! Under `loom` the stats counters become one loom atomic each; immutable
//! payloads (variants, modules) stay in `std` `Arc`s, and
//! `Variant::function` stays a `std` `OnceLock`: set once after a module is
//! loaded, it is not on the paths the models exercise.

#[cfg(loom)]
pub(crate) use loom::sync::{Arc, Condvar, Mutex, MutexGuard, RwLock};

#[cfg(not(loom))]
pub(crate) use std::sync::{Arc, Condvar, Mutex, MutexGuard, RwLock};

/// Locks a mutex, ignoring poisoning: every critical section in this crate
/// leaves its data consistent before anything that could panic.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

/// A value read without locks and replaced whole by writers.
///
/// Readers see either the old or the new value, never a torn one. Outside
/// `loom` this is `arc_swap::ArcSwap`, whose load takes no lock and touches
/// no cache line shared with other readers; under `loom` it is a `RwLock`
/// with the same contract, so the protocols built on it can be model-checked.
pub(crate) struct Snapshot<T> {
    #[cfg(not(loom))]
    cell: arc_swap::ArcSwap<T>,
    #[cfg(loom)]
    cell: RwLock<Arc<T>>,
}

impl<T> Snapshot<T> {
    pub(crate) fn new(value: T) -> Self {
        Snapshot {
            #[cfg(not(loom))]
            cell: arc_swap::ArcSwap::from_pointee(value),
            #[cfg(loom)]
            cell: RwLock::new(Arc::new(value)),
        }
    }

    /// Runs `f` on the current value without taking a lock.
    #[inline]
    pub(crate) fn with<R>(&self, f: impl FnOnce(&T) -> R) -> R {
        #[cfg(not(loom))]
        {
            f(&self.cell.load())
        }
        #[cfg(loom)]
        {
            let current = self.cell.read().unwrap().clone();
            f(&current)
        }
    }

    /// The current value, owned.
    pub(crate) fn load_full(&self) -> Arc<T> {
        #[cfg(not(loom))]
        {
            self.cell.load_full()
        }
        #[cfg(loom)]
        {
            self.cell.read().unwrap().clone()
        }
    }

    /// Replaces the value. Callers serialize writers themselves.
    pub(crate) fn store(&self, value: Arc<T>) {
        #[cfg(not(loom))]
        {
            self.cell.store(value)
        }
        #[cfg(loom)]
        {
            *self.cell.write().unwrap() = value;
        }
    }
}

/// Runs a loom model. Models of two threads explore every schedule
/// (`bound: None`); models of three threads bound the forced thread
/// switches per schedule (loom's advice), since their full space takes
/// far longer than CI can give. `LOOM_MAX_PREEMPTIONS` overrides both.
#[cfg(all(test, loom))]
pub(crate) fn model<F>(bound: Option<usize>, f: F)
where
    F: Fn() + Sync + Send + 'static,
{
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = bound;
    }
    builder.check(f);
}
