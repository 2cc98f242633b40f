//! Counters that many threads bump on the hot path.
//!
//! A single `AtomicU64` that 16 threads increment on every call turns one
//! cache line into the bottleneck of the whole cache. [`Counter`] spreads the
//! increments over cache-padded shards, one per thread slot, and sums them
//! only when read, which is rare.

#[cfg(not(loom))]
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

#[cfg(not(loom))]
use crossbeam_utils::CachePadded;

#[cfg(not(loom))]
const SHARDS: usize = 32;

/// A monotonically increasing counter, cheap to bump from many threads.
#[cfg(not(loom))]
pub(crate) struct Counter {
    shards: Box<[CachePadded<AtomicU64>]>,
}

/// Under `loom`, one model-checked atomic: a thread slot in a `thread_local`
/// means nothing to loom's threads, and 32 shards would only multiply the
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
            shards: (0..SHARDS)
                .map(|_| CachePadded::new(AtomicU64::new(0)))
                .collect(),
        }
    }
}

#[cfg(not(loom))]
fn thread_slot() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static SLOT: usize = NEXT.fetch_add(1, Ordering::Relaxed) % SHARDS;
    }
    SLOT.with(|s| *s)
}

#[cfg(not(loom))]
impl Counter {
    /// Adds `n`.
    #[inline]
    pub(crate) fn add(&self, n: u64) {
        self.shards[thread_slot()].fetch_add(n, Ordering::Relaxed);
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
}

impl CacheStats {
    /// `hits=H misses=M compiles=C failures=F ...`, the format of the
    /// `cache:` line that `kernelkit demo` prints.
    pub fn summary(&self) -> String {
        format!(
            "hits={} misses={} compiles={} failures={} compile_ms={:.1} disk_hits={} disk_misses={} disk_writes={} disk_errors={}",
            self.hits,
            self.misses,
            self.compiles,
            self.failures,
            self.compile_ns as f64 / 1e6,
            self.disk_hits,
            self.disk_misses,
            self.disk_writes,
            self.disk_errors
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
}
