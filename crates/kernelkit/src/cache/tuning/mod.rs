//! Tuning records in the caches: where the launch configuration that
//! autotuning chose for a key is kept, so that a process, a machine and a
//! fleet time each key once (the engine that times is `kernel::tune`).
//!
//! A device holds one [`Records`]: this process's records in memory,
//! read on every cold tuned call, with the counters `tunes`, `tune_hits`
//! and `tune_launches` that `cache_stats` reports. Below memory, records
//! are entries of kind `TuningRecord` in the device's artifact tiers (the
//! disk store, the fleet tier; bundles carry them): see
//! `Device::find_tuning_record`. A record is named by a [`RecordKey`] of
//! its tuning key and the device's tuning target (model and driver), and
//! the target is checked again when read, so a record measured on another
//! GPU model or driver is never used.

pub mod record;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

pub use record::{ConfigResult, RecordKey, TuningRecord, RECORD_FORMAT_VERSION};

use crate::stats::{CacheStats, Counter};

/// A device's tuning records in memory, with the counters of what
/// autotuning did on the device.
#[derive(Default)]
pub struct Records {
    memory: RwLock<HashMap<RecordKey, Arc<TuningRecord>>>,
    /// Per key, the lock that one thread of this process holds while it
    /// tunes that key (the others wait, then find its record).
    tuning: Mutex<HashMap<RecordKey, Arc<Mutex<()>>>>,
    tunes: Counter,
    hits: Counter,
    launches: Counter,
}

impl std::fmt::Debug for Records {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Records").finish_non_exhaustive()
    }
}

impl Records {
    /// The record of `key` in memory.
    pub fn in_memory(&self, key: &RecordKey) -> Option<Arc<TuningRecord>> {
        self.memory
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(key)
            .cloned()
    }

    /// Keeps `record` in memory under `key` (replacing an older one).
    pub fn keep(&self, key: &RecordKey, record: TuningRecord) -> Arc<TuningRecord> {
        let record = Arc::new(record);
        self.memory
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(*key, record.clone());
        record
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

    #[test]
    fn records_kept_in_memory_come_back_by_key() {
        let records = Records::default();
        let key = RecordKey::of("k", "t");
        assert!(records.in_memory(&key).is_none());
        let record = TuningRecord {
            format: RECORD_FORMAT_VERSION,
            key: "k".into(),
            target: "t".into(),
            version: "v".into(),
            choice: "a".into(),
            configs: vec![],
        };
        records.keep(&key, record.clone());
        assert_eq!(*records.in_memory(&key).unwrap(), record);
        assert!(records.in_memory(&RecordKey::of("k", "u")).is_none());
    }
}
