//! One tuning record: what timing a kernel's launch configurations for one
//! tuning key on one device found, and how it is written to a tier.
//!
//! A record is per configuration: each configuration tried has its time
//! (or the error that made it fail) and the *round* it was timed in. Times
//! of one round were measured side by side in one process; times of
//! different rounds are never compared with each other. The choice is the
//! fastest configuration of the latest round, which also timed the best of
//! the rounds before it (see `kernel::tune`).

use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::Xxh3;

/// Version of the record payload (the JSON below). A record of another
/// version is ignored (a miss), never misread.
pub const RECORD_FORMAT_VERSION: u32 = 1;

/// One configuration's result in a record.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConfigResult {
    /// The configuration, in its canonical text (`kernel::tune`'s
    /// `TuneConfig::id`).
    pub config: String,
    /// Median time of one launch, in nanoseconds; `None` if it failed.
    pub time_ns: Option<u64>,
    /// Why it failed to compile or launch, when it did.
    pub error: Option<String>,
    /// The timing round it was measured in (0 for the first).
    pub round: u32,
}

/// The result of tuning one key on one device.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TuningRecord {
    /// [`RECORD_FORMAT_VERSION`] when written.
    pub format: u32,
    /// The tuning key's text (kernel identity, call signature or the
    /// user's key).
    pub key: String,
    /// The device it was measured on (model, architecture, driver; see
    /// `Backend::tuning_target`).
    pub target: String,
    /// The kernelkit version that measured it.
    pub version: String,
    /// The chosen configuration (one of `configs`, timed and not failed).
    pub choice: String,
    /// Every configuration tried, in the order timed.
    pub configs: Vec<ConfigResult>,
}

impl TuningRecord {
    /// The result for `config`, if this record has one.
    pub fn result(&self, config: &str) -> Option<&ConfigResult> {
        self.configs.iter().find(|c| c.config == config)
    }

    /// The latest round in the record.
    pub fn last_round(&self) -> u32 {
        self.configs.iter().map(|c| c.round).max().unwrap_or(0)
    }

    /// The payload a tier stores: JSON.
    pub fn encode(&self) -> Vec<u8> {
        // A struct of strings and integers always serializes.
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// A record from a tier's payload: `None` if it is not one of this
    /// version (a miss for the caller).
    pub fn decode(bytes: &[u8]) -> Option<TuningRecord> {
        let record: TuningRecord = serde_json::from_slice(bytes).ok()?;
        let chosen_ok = record
            .result(&record.choice)
            .is_some_and(|c| c.time_ns.is_some());
        (record.format == RECORD_FORMAT_VERSION && chosen_ok).then_some(record)
    }
}

/// The 128-bit name of the record of `key` measured on `target`: what the
/// tiers index records by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RecordKey(pub [u8; 16]);

impl RecordKey {
    /// The name of `key`'s record on `target` (each field length-prefixed,
    /// so no two field lists hash the same bytes).
    pub fn of(key: &str, target: &str) -> RecordKey {
        let mut h = Xxh3::new();
        h.update(b"kernelkit tuning record\0");
        h.update(&RECORD_FORMAT_VERSION.to_le_bytes());
        for field in [key, target] {
            h.update(&(field.len() as u64).to_le_bytes());
            h.update(field.as_bytes());
        }
        RecordKey(h.digest128().to_le_bytes())
    }

    /// Lower-case hex, 32 digits.
    pub fn hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> TuningRecord {
        TuningRecord {
            format: RECORD_FORMAT_VERSION,
            key: "k".into(),
            target: "cpu x".into(),
            version: "0.1".into(),
            choice: "a".into(),
            configs: vec![
                ConfigResult {
                    config: "a".into(),
                    time_ns: Some(10),
                    error: None,
                    round: 0,
                },
                ConfigResult {
                    config: "b".into(),
                    time_ns: None,
                    error: Some("no".into()),
                    round: 0,
                },
            ],
        }
    }

    #[test]
    fn a_record_round_trips() {
        let r = record();
        assert_eq!(TuningRecord::decode(&r.encode()), Some(r));
    }

    #[test]
    fn a_record_whose_choice_has_no_time_is_refused() {
        let mut r = record();
        r.choice = "b".into();
        assert_eq!(TuningRecord::decode(&r.encode()), None);
        r.choice = "zzz".into();
        assert_eq!(TuningRecord::decode(&r.encode()), None);
        assert_eq!(TuningRecord::decode(b"not json"), None);
    }

    #[test]
    fn keys_differ_by_target() {
        assert_ne!(RecordKey::of("k", "a"), RecordKey::of("k", "b"));
        assert_ne!(RecordKey::of("ka", ""), RecordKey::of("k", "a"));
        assert_eq!(RecordKey::of("k", "a").hex().len(), 32);
    }
}
