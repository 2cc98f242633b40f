//! The memory tier of tuning records: a map read on every tuned call.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use super::{RecordKey, RecordTier, TuningRecord};

/// Records of this process, shared by every thread. Reads take a shared
/// lock for a map lookup; writes happen once per tuning key.
#[derive(Default)]
pub struct MemoryRecords {
    map: RwLock<HashMap<RecordKey, Arc<TuningRecord>>>,
}

impl MemoryRecords {
    /// The record of `key`, shared.
    #[inline]
    pub fn get_arc(&self, key: &RecordKey) -> Option<Arc<TuningRecord>> {
        self.map
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(key)
            .cloned()
    }

    /// Keeps `record` under `key`; returns it shared.
    pub fn put_arc(&self, key: RecordKey, record: TuningRecord) -> Arc<TuningRecord> {
        let record = Arc::new(record);
        self.map
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key, record.clone());
        record
    }
}

impl RecordTier for MemoryRecords {
    fn get(&self, key: &RecordKey) -> Option<TuningRecord> {
        self.get_arc(key).map(|r| (*r).clone())
    }
    fn put(&self, key: &RecordKey, record: &TuningRecord) {
        self.put_arc(*key, record.clone());
    }
}
