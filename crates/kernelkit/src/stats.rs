//! Counters that many threads bump on the hot path.
//!
//! A single `AtomicU64` that 16 threads increment on every call turns one
//! cache line into the bottleneck of the whole cache. [`Counter`] spreads the
//! increments over cache-padded shards and sums them only when read, which
//! is rare.
//!
//! Each running thread *owns* one of the first [`OWNED`] shards (taken when
//! it first counts, given back when it exits): only that thread writes it,
//! so an increment is a plain load and store, not an atomic read-modify-
//! write (which costs as much as the rest of a cache hit). Threads beyond
//! [`OWNED`] at once share the last [`SHARED`] shards with atomic adds.

#[cfg(not(loom))]
use std::sync::atomic::{AtomicU64, Ordering};

#[cfg(not(loom))]
use crossbeam_utils::CachePadded;

/// Shards that one thread at a time owns.
#[cfg(not(loom))]
const OWNED: usize = 64;
/// Shards for threads beyond `OWNED`, updated with atomic adds.
#[cfg(not(loom))]
const SHARED: usize = 8;

/// A monotonically increasing counter, cheap to bump from many threads.
#[cfg(not(loom))]
pub(crate) struct Counter {
    shards: Box<[CachePadded<AtomicU64>]>,
}

/// Under `loom`, one model-checked atomic: a thread slot in a `thread_local`
/// means nothing to loom's threads, and many shards would only multiply the
/// states a model explores.
#[cfg(loom)]
#[derive(Default)]
pub(crate) struct Counter {
    value: loom::sync::atomic::AtomicU64,
}

#[cfg(loom)]
impl Counter {
    pub(crate) fn add(&self, n: u64) {
        self.value
            .fetch_add(n, loom::sync::atomic::Ordering::Relaxed);
    }
    pub(crate) fn incr(&self) {
        self.add(1)
    }
    pub(crate) fn get(&self) -> u64 {
        self.value.load(loom::sync::atomic::Ordering::Relaxed)
    }
}

#[cfg(not(loom))]
impl Default for Counter {
    fn default() -> Self {
        Counter {
            shards: (0..OWNED + SHARED)
                .map(|_| CachePadded::new(AtomicU64::new(0)))
                .collect(),
        }
    }
}

/// A thread's shard: owned (`index < OWNED`) or shared.
#[cfg(not(loom))]
struct Slot {
    index: usize,
}

#[cfg(not(loom))]
mod slots {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;

    use super::{Slot, OWNED, SHARED};

    /// Owned shard indices no running thread holds.
    static FREE: Mutex<Vec<usize>> = Mutex::new(Vec::new());
    /// How many owned indices were ever handed out (the rest are implicit
    /// in `FREE`: indices at or above this are free too).
    static ISSUED: AtomicUsize = AtomicUsize::new(0);
    static NEXT_SHARED: AtomicUsize = AtomicUsize::new(0);

    fn free() -> std::sync::MutexGuard<'static, Vec<usize>> {
        FREE.lock().unwrap_or_else(|p| p.into_inner())
    }

    impl Slot {
        pub(super) fn take() -> Slot {
            let mut free = free();
            let index = free.pop().or_else(|| {
                let n = ISSUED.load(Ordering::Relaxed);
                (n < OWNED).then(|| {
                    ISSUED.store(n + 1, Ordering::Relaxed);
                    n
                })
            });
            Slot {
                index: index.unwrap_or_else(|| {
                    OWNED + NEXT_SHARED.fetch_add(1, Ordering::Relaxed) % SHARED
                }),
            }
        }
    }

    impl Drop for Slot {
        fn drop(&mut self) {
            // The lock orders this thread's last plain stores before the
            // next owner's first load.
            if self.index < OWNED {
                free().push(self.index);
            }
        }
    }
}

#[cfg(not(loom))]
thread_local! {
    static SLOT: Slot = Slot::take();
}

#[cfg(not(loom))]
impl Counter {
    /// Adds `n`.
    #[inline]
    pub(crate) fn add(&self, n: u64) {
        // While the slot lives this thread owns `index < OWNED`: a plain
        // load and store cannot lose another thread's update. During thread
        // exit, after the slot is gone, count in a shared shard.
        let index = SLOT.try_with(|s| s.index).unwrap_or(OWNED);
        let shard = &self.shards[index];
        if index < OWNED {
            shard.store(shard.load(Ordering::Relaxed) + n, Ordering::Relaxed);
        } else {
            shard.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// Adds one.
    #[inline]
    pub(crate) fn incr(&self) {
        self.add(1)
    }

    /// The sum over all shards.
    pub(crate) fn get(&self) -> u64 {
        self.shards.iter().map(|s| s.load(Ordering::Relaxed)).sum()
    }
}

/// What a device's kernel cache (and the artifact store under it) has done
/// since the device was opened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Calls whose function was already loaded.
    pub hits: u64,
    /// Calls that had to find or wait for a module.
    pub misses: u64,
    /// Compiler runs (successful or not).
    pub compiles: u64,
    /// Compiler runs or loads that failed.
    pub failures: u64,
    /// Total wall time spent compiling, in nanoseconds.
    pub compile_ns: u64,
    /// Modules loaded from the artifact store instead of compiled.
    pub disk_hits: u64,
    /// Store lookups that found nothing usable.
    pub disk_misses: u64,
    /// Artifacts written to the store.
    pub disk_writes: u64,
    /// Store reads or writes that failed (each degraded to compiling).
    pub disk_errors: u64,
    /// Modules loaded from the fleet tier (Redis) instead of compiled.
    pub remote_hits: u64,
    /// Fleet tier lookups that found nothing usable before a compile.
    pub remote_misses: u64,
    /// Entries written to the fleet tier.
    pub remote_writes: u64,
    /// Fleet tier commands that failed (server away, stalled, full), each
    /// degraded to compiling here.
    pub remote_errors: u64,
    /// Fleet tier entries refused: unsigned, signed by an unknown key,
    /// badly signed, corrupt or under another key (never loaded).
    pub remote_rejected: u64,
    /// Wall time spent on the fleet tier (reads, writes, waiting for another
    /// node's compile), in nanoseconds.
    pub remote_wait_ns: u64,
    /// Modules this device loaded (from a tier, another device's artifact
    /// or a compile), reloads included.
    pub loaded: u64,
    /// Modules unloaded to keep the device within `max_loaded_modules`:
    /// let go by the cache (freed once no variant, prepared launch or
    /// running call holds them; on CUDA, once the work queued before has
    /// finished, see `pending_unloads`).
    pub unloaded: u64,
    /// Loads of a module this device had unloaded before.
    pub reloads: u64,
    /// Modules let go by every holder whose code stays loaded, now, until
    /// the work that may run them finishes (CUDA: the events recorded
    /// after their launches pass; checked without waiting on later cold
    /// paths). 0 on the CPU, whose launches finish before they return.
    pub pending_unloads: u64,
    /// Modules loaded from PTX (a bundle's `compute_XX` entry, when no
    /// tier held this GPU's own code): the driver compiled them at load.
    pub ptx_loads: u64,
    /// Autotuning runs made by this process on this device (each times
    /// the configurations of one tuning key).
    pub tunes: u64,
    /// Tuned calls whose choice was found in a tier (memory of another
    /// thread's run, the disk store, the fleet tier, a bundle) instead of
    /// timed here; counted once per key.
    pub tune_hits: u64,
    /// Launches made to time configurations (warm-ups included).
    pub tune_launches: u64,
}

impl CacheStats {
    /// `hits=H misses=M compiles=C failures=F ...`, the format of the
    /// `cache:` line that `kernelkit demo` prints.
    pub fn summary(&self) -> String {
        format!(
            "hits={} misses={} compiles={} failures={} compile_ms={:.1} disk_hits={} disk_misses={} disk_writes={} disk_errors={} remote_hits={} remote_misses={} remote_writes={} remote_errors={} remote_rejected={} remote_wait_ms={:.1} loaded={} unloaded={} reloads={} pending_unloads={} ptx_loads={} tunes={} tune_hits={} tune_launches={}",
            self.hits,
            self.misses,
            self.compiles,
            self.failures,
            self.compile_ns as f64 / 1e6,
            self.disk_hits,
            self.disk_misses,
            self.disk_writes,
            self.disk_errors,
            self.remote_hits,
            self.remote_misses,
            self.remote_writes,
            self.remote_errors,
            self.remote_rejected,
            self.remote_wait_ns as f64 / 1e6,
            self.loaded,
            self.unloaded,
            self.reloads,
            self.pending_unloads,
            self.ptx_loads,
            self.tunes,
            self.tune_hits,
            self.tune_launches
        )
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn counter_sums_across_threads() {
        let c = std::sync::Arc::new(Counter::default());
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let c = c.clone();
                std::thread::spawn(move || {
                    for _ in 0..1000 {
                        c.incr();
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(c.get(), 8000);
    }

    /// More threads at once than there are owned shards (some share with
    /// atomic adds), in waves, so that exited threads' shards are owned
    /// again by later ones: no increment is lost.
    #[test]
    fn counter_is_exact_beyond_the_owned_shards_and_across_reuse() {
        let c = std::sync::Arc::new(Counter::default());
        let threads = OWNED + 2 * SHARED + 3;
        for _wave in 0..3 {
            let barrier = std::sync::Arc::new(std::sync::Barrier::new(threads));
            let handles: Vec<_> = (0..threads)
                .map(|_| {
                    let (c, barrier) = (c.clone(), barrier.clone());
                    std::thread::spawn(move || {
                        c.incr();
                        barrier.wait();
                        for _ in 0..500 {
                            c.add(2);
                        }
                    })
                })
                .collect();
            for h in handles {
                h.join().unwrap();
            }
        }
        assert_eq!(c.get(), 3 * threads as u64 * 1001);
    }
}
