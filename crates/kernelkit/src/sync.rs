//! The synchronization primitives the caches use, in one place, so that the
//! `loom` model checker can replace them (`RUSTFLAGS="--cfg loom"`).
//!
//! Lock order, for every lock in the crate (take them top to bottom, never
//! upwards): `VariantMemo::writer` → `KernelCache` shard lock → `Slot::state`.
//! The kernel cache's clock and its set of unloaded keys are taken alone;
//! a loaded module's `binds` lock is a leaf (a bind stores into a
//! [`SwapSlot`] under it, which takes no lock outside `loom`). An
//! `ArtifactPool` cell (`cache::artifact_pool`) is held across the build of its key,
//! like the store's file lock below: taken with no in-process lock held,
//! and the pool's map lock is never held with it.
//! No lock is held while a compiler runs or while a kernel executes. The one
//! exception is not a lock of this process: the artifact store's per-key
//! file lock (`cache::lock`), which a thread that owns a pending kernel
//! cache slot holds across its compile so that other *processes* wait for
//! it. It is taken with no in-process lock held, one key at a time, and its
//! wait is bounded, so it cannot deadlock. Leaf locks, under which no
//! other lock is taken: a [`RaisedLimit`]'s (held across one
//! `cuFuncSetAttribute`, which does not wait for the GPU) and a CUDA
//! module's list of those limits.
//!
//! The loom models (`loom_*` tests in `kernel::variants::memo`,
//! `cache::kernel_cache`, `cache::loaded`, this module and
//! `backend::cuda::memory`, run by `scripts/test.sh` with the `cuda`
//! feature) check the variant memo, the kernel cache's single-flight
//! protocol, the binding of function slots against unloads and pins,
//! [`RaisedLimit`] and the order in which a dying CUDA buffer is checked
//! before it becomes a thread's spare. Under `loom` the stats counters
//! become one loom atomic each; immutable payloads (variants, modules,
//! bound functions) stay in `std` `Arc`s, and a [`SwapSlot`] becomes a
//! loom `RwLock` of one.

#[cfg(loom)]
pub(crate) use loom::sync::{Arc, Condvar, Mutex, MutexGuard, RwLock};

#[cfg(not(loom))]
pub(crate) use std::sync::{Arc, Condvar, Mutex, MutexGuard, RwLock};

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize};
use std::sync::atomic::Ordering;
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize};

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
    /// A snapshot of `value`, shared (many snapshots may start from one
    /// empty value without an allocation each).
    pub(crate) fn from_arc(value: Arc<T>) -> Self {
        Snapshot {
            #[cfg(not(loom))]
            cell: arc_swap::ArcSwap::new(value),
            #[cfg(loom)]
            cell: RwLock::new(value),
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

/// An optional shared value read without locks, replaced or cleared by
/// writers, whose reader keeps the value it read alive for as long as it
/// holds the read (a *guard*): a writer that clears the slot meanwhile
/// never frees it under the reader.
///
/// Outside `loom` this is `arc_swap::ArcSwapOption`: a load writes only
/// the reading thread's own debt slot, so threads reading one slot at once
/// share no written cache line. Under `loom` it is a `RwLock` with the same
/// contract (a read clones the `Arc`). The payload is a `std` `Arc` either
/// way, so that owners may keep `Weak`s of it.
pub(crate) struct SwapSlot<T> {
    #[cfg(not(loom))]
    cell: arc_swap::ArcSwapOption<T>,
    #[cfg(loom)]
    cell: RwLock<Option<std::sync::Arc<T>>>,
}

/// What [`SwapSlot::load`] gives: the value, kept alive until dropped.
#[cfg(not(loom))]
pub(crate) type SlotGuard<T> = arc_swap::Guard<Option<std::sync::Arc<T>>>;
/// What [`SwapSlot::load`] gives: the value, kept alive until dropped.
#[cfg(loom)]
pub(crate) type SlotGuard<T> = Option<std::sync::Arc<T>>;

impl<T> Default for SwapSlot<T> {
    fn default() -> Self {
        SwapSlot {
            #[cfg(not(loom))]
            cell: arc_swap::ArcSwapOption::empty(),
            #[cfg(loom)]
            cell: RwLock::new(None),
        }
    }
}

impl<T> SwapSlot<T> {
    /// The current value (or `None`), kept alive while the guard lives.
    #[inline]
    pub(crate) fn load(&self) -> SlotGuard<T> {
        #[cfg(not(loom))]
        {
            self.cell.load()
        }
        #[cfg(loom)]
        {
            self.cell.read().unwrap().clone()
        }
    }

    /// Replaces the value.
    pub(crate) fn store(&self, value: Option<std::sync::Arc<T>>) {
        #[cfg(not(loom))]
        {
            self.cell.store(value)
        }
        #[cfg(loom)]
        {
            *self.cell.write().unwrap() = value;
        }
    }

    /// Clears the slot if it holds a value for which `is` answers yes;
    /// returns the value taken out.
    pub(crate) fn clear_if(&self, is: impl Fn(&T) -> bool) -> Option<std::sync::Arc<T>> {
        #[cfg(not(loom))]
        {
            let mut taken = None;
            self.cell.rcu(|current| match current {
                Some(v) if is(v) => {
                    taken = Some(v.clone());
                    None
                }
                other => {
                    taken = None;
                    other.clone()
                }
            });
            taken
        }
        #[cfg(loom)]
        {
            let mut cell = self.cell.write().unwrap();
            match &*cell {
                Some(v) if is(v) => cell.take(),
                _ => None,
            }
        }
    }
}

/// A limit that lives outside this process's memory (a CUDA function's
/// dynamic shared memory attribute), raised on demand by any thread and
/// read without a lock.
///
/// The contract: [`RaisedLimit::allows`] never answers yes for more than
/// the outside setting holds. Raises are serialized by a lock (taken only
/// when a launch needs more than is allowed, so never on a warm call): the
/// setter runs first, with a value above every earlier one, and only after
/// it succeeded is the value published. So the outside setting only grows,
/// and equals the published value whenever no raise is running. (Setting
/// first and publishing with a `fetch_max` afterwards, without the lock,
/// lets a smaller raise overwrite a larger one outside while the published
/// value keeps the larger: every later launch that needs it then fails.)
#[cfg_attr(not(feature = "cuda"), allow(dead_code))] // The CUDA backend's.
pub(crate) struct RaisedLimit {
    allowed: AtomicU32,
    raising: Mutex<()>,
}

#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
impl RaisedLimit {
    /// A limit whose outside setting starts at `initial`.
    pub(crate) fn new(initial: u32) -> RaisedLimit {
        RaisedLimit {
            allowed: AtomicU32::new(initial),
            raising: Mutex::new(()),
        }
    }

    /// Whether `need` is within what the outside setting holds.
    #[inline]
    pub(crate) fn allows(&self, need: u32) -> bool {
        need <= self.allowed.load(Ordering::Acquire)
    }

    /// Makes the outside setting at least `need`: `set(need)` under the
    /// lock, unless a raise to `need` or more happened already, then
    /// publishes `need`. A failed `set` publishes nothing.
    #[cold]
    #[inline(never)]
    pub(crate) fn raise<E>(
        &self,
        need: u32,
        set: impl FnOnce(u32) -> Result<(), E>,
    ) -> Result<(), E> {
        let _raising = lock(&self.raising);
        if need <= self.allowed.load(Ordering::Acquire) {
            return Ok(());
        }
        set(need)?;
        self.allowed.store(need, Ordering::Release);
        Ok(())
    }

    /// The published value.
    #[cfg(test)]
    pub(crate) fn allowed(&self) -> u32 {
        self.allowed.load(Ordering::Acquire)
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

#[cfg(all(test, not(loom)))]
mod tests {
    use super::RaisedLimit;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::{Arc, Barrier};

    /// Many threads meet at a barrier and each raises the limit to its own
    /// need, the "outside setting" being an atomic that `set` overwrites
    /// (as `cuFuncSetAttribute` does). Afterwards the published value is
    /// the largest need and the setting holds it; no launch was told yes
    /// for more than the setting held when it asked.
    #[test]
    fn raises_from_many_threads_leave_the_setting_at_the_largest() {
        for round in 0..50u32 {
            let limit = Arc::new(RaisedLimit::new(48 << 10));
            let setting = Arc::new(AtomicU32::new(48 << 10));
            let threads = 8u32;
            let barrier = Arc::new(Barrier::new(threads as usize));
            let handles: Vec<_> = (0..threads)
                .map(|t| {
                    let (limit, setting, barrier) =
                        (limit.clone(), setting.clone(), barrier.clone());
                    std::thread::spawn(move || {
                        // Needs from 52 KB to 220 KB, in a different order each round.
                        let need = (52 + ((t * 7 + round) % threads) * 24) << 10;
                        barrier.wait();
                        if !limit.allows(need) {
                            limit
                                .raise(need, |v| {
                                    setting.store(v, Ordering::SeqCst);
                                    Ok::<(), ()>(())
                                })
                                .unwrap();
                        }
                        // What a launch checks: the setting holds its need.
                        assert!(setting.load(Ordering::SeqCst) >= need, "round {round}");
                    })
                })
                .collect();
            for h in handles {
                h.join().unwrap();
            }
            let largest = (52 + (threads - 1) * 24) << 10;
            assert_eq!(limit.allowed(), largest, "round {round}");
            assert_eq!(setting.load(Ordering::SeqCst), largest, "round {round}");
        }
    }

    #[test]
    fn a_failed_raise_publishes_nothing() {
        let limit = RaisedLimit::new(48 << 10);
        assert!(limit.raise(100 << 10, |_| Err("no")).is_err());
        assert!(!limit.allows(100 << 10));
        assert!(limit.allows(48 << 10));
        let mut set = Vec::new();
        limit
            .raise(100 << 10, |v| {
                set.push(v);
                Ok::<(), ()>(())
            })
            .unwrap();
        // A smaller need after a larger raise sets nothing.
        limit
            .raise(60 << 10, |v| {
                set.push(v);
                Ok::<(), ()>(())
            })
            .unwrap();
        assert_eq!(set, [100 << 10]);
        assert!(limit.allows(100 << 10));
    }
}

/// Model-checked with `loom` (`RUSTFLAGS="--cfg loom" cargo test --lib loom_`).
#[cfg(all(test, loom))]
mod loom_models {
    use super::*;
    use loom::sync::atomic::AtomicU32 as Setting;
    use loom::thread;

    /// Two launches need 100 KB and 60 KB of dynamic shared memory at once
    /// (each raising the function's attribute, `setting`, if the published
    /// limit does not allow it yet); then a third needs 100 KB. In every
    /// schedule the published limit never claims more than the attribute
    /// holds, and the third launch finds the attribute at 100 KB or more.
    #[test]
    fn loom_raised_limit_never_claims_more_than_is_set() {
        model(None, || {
            let limit = Arc::new(RaisedLimit::new(48));
            let setting = Arc::new(Setting::new(48));
            let launch = |limit: &RaisedLimit, setting: &Setting, need: u32| {
                if !limit.allows(need) {
                    limit
                        .raise(need, |v| {
                            setting.store(v, Ordering::SeqCst);
                            Ok::<(), ()>(())
                        })
                        .unwrap();
                }
                assert!(setting.load(Ordering::SeqCst) >= need, "launch of {need}");
            };
            let (l, s) = (limit.clone(), setting.clone());
            let t = thread::spawn(move || launch(&l, &s, 60));
            launch(&limit, &setting, 100);
            t.join().unwrap();
            assert!(setting.load(Ordering::SeqCst) >= limit.allowed());
            launch(&limit, &setting, 100);
        });
    }
}
