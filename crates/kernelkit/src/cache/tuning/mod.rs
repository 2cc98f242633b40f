//! Tuning records in the cache tiers: where the launch configuration that
//! autotuning chose for a key is kept, so that a process, a machine and a
//! fleet time each key once (the engine that times is `kernel::tune`).
//!
//! A device holds one [`Records`]: the records in memory first, then the
//! tiers behind the [`RecordTier`] seam, and the counters `tunes`,
//! `tune_hits` and `tune_launches` that `cache_stats` reports. A record
//! is named by a [`RecordKey`] of its tuning key and the device's tuning
//! target (model and driver), so a record measured on another GPU model
//! or driver is never found, let alone used.

mod memory;
pub mod record;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

pub use memory::MemoryRecords;
pub use record::{ConfigResult, RecordKey, TuningRecord, RECORD_FORMAT_VERSION};

use crate::stats::{CacheStats, Counter};

/// A place that keeps tuning records: memory, the disk store, the fleet
/// tier. A tier that fails answers a miss (and drops a write): tuning
/// again is always correct.
pub trait RecordTier: Send + Sync {
    /// The record named `key`, if this tier has a good one.
    fn get(&self, key: &RecordKey) -> Option<TuningRecord>;
    /// Keeps `record` under `key` (replacing an older one).
    fn put(&self, key: &RecordKey, record: &TuningRecord);
}

/// The record tiers below memory that a device opened with `cache` keeps
/// its records in. Empty until the artifact entry format carries tuning
/// records (the disk store, the fleet tier and bundles then hold them).
pub(crate) fn tiers_for_devices(cache: &crate::config::CacheConfig) -> Vec<Box<dyn RecordTier>> {
    let _ = cache;
    Vec::new()
}

/// A device's tuning records: memory, then its other tiers, with the
/// counters of what autotuning did on the device.
#[derive(Default)]
pub struct Records {
    memory: MemoryRecords,
    tiers: Vec<Box<dyn RecordTier>>,
    /// Per key, the lock that one thread of this process holds while it
    /// tunes that key (the others wait, then find its record).
    tuning: Mutex<HashMap<RecordKey, Arc<Mutex<()>>>>,
    tunes: Counter,
    hits: Counter,
    launches: Counter,
}

impl std::fmt::Debug for Records {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Records")
            .field("tiers", &self.tiers.len())
            .finish_non_exhaustive()
    }
}

impl Records {
    /// Records kept in memory, then in `tiers` (asked in order).
    pub fn new(tiers: Vec<Box<dyn RecordTier>>) -> Records {
        Records {
            tiers,
            ..Records::default()
        }
    }

    /// The record in memory only: the warm path of a tuned call.
    #[inline]
    pub fn in_memory(&self, key: &RecordKey) -> Option<Arc<TuningRecord>> {
        self.memory.get_arc(key)
    }

    /// The record of `key` in memory or in a tier (then kept in memory
    /// too). Counts nothing: the engine counts a hit once it uses one.
    pub fn find(&self, key: &RecordKey) -> Option<Arc<TuningRecord>> {
        if let Some(found) = self.memory.get_arc(key) {
            return Some(found);
        }
        for tier in &self.tiers {
            if let Some(found) = tier.get(key) {
                return Some(self.memory.put_arc(*key, found));
            }
        }
        None
    }

    /// Keeps `record` in memory and in every tier.
    pub fn put(&self, key: &RecordKey, record: TuningRecord) -> Arc<TuningRecord> {
        for tier in &self.tiers {
            tier.put(key, &record);
        }
        self.memory.put_arc(*key, record)
    }

    /// The in-process lock of `key`: held by the one thread that tunes it.
    pub fn tuning_lock(&self, key: &RecordKey) -> Arc<Mutex<()>> {
        let mut map = self.tuning.lock().unwrap_or_else(|p| p.into_inner());
        map.entry(*key).or_default().clone()
    }

    /// Counts one tuning run made here.
    pub fn count_tune(&self) {
        self.tunes.incr();
    }

    /// Counts one choice found in a tier (or left by another thread).
    pub fn count_hit(&self) {
        self.hits.incr();
    }

    /// Counts `n` launches made to time configurations.
    pub fn count_launches(&self, n: u64) {
        self.launches.add(n);
    }

    /// Adds the tuning counters to `stats`.
    pub fn add_stats(&self, stats: &mut CacheStats) {
        stats.tunes = self.tunes.get();
        stats.tune_hits = self.hits.get();
        stats.tune_launches = self.launches.get();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Shelf(Mutex<HashMap<RecordKey, TuningRecord>>);
    impl RecordTier for Arc<Shelf> {
        fn get(&self, key: &RecordKey) -> Option<TuningRecord> {
            self.0.lock().unwrap().get(key).cloned()
        }
        fn put(&self, key: &RecordKey, record: &TuningRecord) {
            self.0.lock().unwrap().insert(*key, record.clone());
        }
    }

    fn record(choice: &str) -> TuningRecord {
        TuningRecord {
            format: RECORD_FORMAT_VERSION,
            key: "k".into(),
            target: "t".into(),
            version: "v".into(),
            choice: choice.into(),
            configs: vec![ConfigResult {
                config: choice.into(),
                time_ns: Some(1),
                error: None,
                round: 0,
            }],
        }
    }

    #[test]
    fn a_record_put_reaches_every_tier_and_a_tier_hit_is_kept_in_memory() {
        let shelf = Arc::new(Shelf(Mutex::new(HashMap::new())));
        let records = Records::new(vec![Box::new(shelf.clone())]);
        let key = RecordKey::of("k", "t");
        assert!(records.find(&key).is_none());
        records.put(&key, record("a"));
        assert_eq!(shelf.get(&key).unwrap().choice, "a");

        let other = Records::new(vec![Box::new(shelf.clone())]);
        assert!(other.in_memory(&key).is_none());
        assert_eq!(other.find(&key).unwrap().choice, "a");
        assert_eq!(other.in_memory(&key).unwrap().choice, "a");
    }
}
