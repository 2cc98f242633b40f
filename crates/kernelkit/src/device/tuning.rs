//! A device's tuning records (`kernel::tune`): kept in memory, and in
//! the device's tiers as entries of kind `TuningRecord`.

use std::sync::Arc;

use super::Device;
use crate::cache::entry::{Contents, Dependencies, EntryKind};
use crate::cache::key::{IdentityDigest, ModuleKey};
use crate::cache::tier::Claim;
use crate::cache::tuning::{RecordKey, Records, TuningRecord};

impl Device {
    /// This device's tuning records and counters (`kernel::tune`).
    pub(crate) fn records(&self) -> &Records {
        &self.0.records
    }

    /// What tuning records used here must have been measured on: the GPU
    /// model, architecture and driver, or the CPU's compiler identity.
    pub fn tuning_target(&self) -> &str {
        &self.0.tuning_target
    }

    /// The payload of the tuning record stored under `key` in this device's
    /// tiers (disk store, then fleet Redis; a fleet hit is written to the
    /// disk), with the target it names (device model and driver); `None`
    /// when no tier holds one. The key and the payload's encoding are the
    /// tuner's own (see [`crate::cache::entry::EntryKind::TuningRecord`]).
    pub fn tuning_record(&self, key: &ModuleKey) -> Option<(String, Vec<u8>)> {
        self.0
            .modules
            .stored_entry(key, EntryKind::TuningRecord)
            .map(|found| (found.target, found.payload))
    }

    /// Keeps a tuning record under `key` in every tier of this device:
    /// `kernel` and `function` name the tuned kernel (identifiers, for
    /// listings), `target` the device model and driver it was measured on.
    pub fn put_tuning_record(
        &self,
        key: &ModuleKey,
        kernel: &str,
        function: &str,
        target: &str,
        payload: &[u8],
    ) {
        let backend = self.backend();
        let none = Dependencies::default();
        self.0.modules.put_entry(
            key,
            &Contents {
                kind: EntryKind::TuningRecord,
                kernel,
                backend: backend.name(),
                function,
                target,
                identity: IdentityDigest::of(backend.name(), backend.identity()),
                dependencies: &none,
                payload,
            },
        );
    }

    /// The tuning record `key` in memory, or in a tier (then kept in
    /// memory), if it was measured on this device's tuning target.
    pub(crate) fn find_tuning_record(&self, key: &RecordKey) -> Option<Arc<TuningRecord>> {
        if let Some(found) = self.0.records.in_memory(key) {
            return Some(found);
        }
        let (target, payload) = self.tuning_record(&ModuleKey::from_bytes(key.0))?;
        self.adopt_record(key, &target, &payload)
    }

    /// A record read from a tier, kept in memory if it is good and of this
    /// device's target.
    fn adopt_record(
        &self,
        key: &RecordKey,
        target: &str,
        payload: &[u8],
    ) -> Option<Arc<TuningRecord>> {
        let record = TuningRecord::decode(payload)?;
        (target == self.tuning_target() && record.target == target)
            .then(|| self.0.records.keep(key, record))
    }

    /// Keeps `record` in memory and in every tier of this device (the disk
    /// store, the fleet tier), as an entry of kind `TuningRecord` naming
    /// `kernel`.
    pub(crate) fn keep_tuning_record(
        &self,
        key: &RecordKey,
        kernel: &str,
        record: TuningRecord,
    ) -> Arc<TuningRecord> {
        self.put_tuning_record(
            &ModuleKey::from_bytes(key.0),
            kernel,
            &format!("tuned_{kernel}"),
            &record.target,
            &record.encode(),
        );
        self.0.records.keep(key, record)
    }

    /// Claims the tuning of `key` in this device's tiers (the disk store's
    /// lock, the fleet's lease), waiting while another process tunes it:
    /// the claims (held until dropped), the record another process
    /// published meanwhile, and whether a shared tier gave no claim (its
    /// wait ran out).
    pub(crate) fn claim_tuning(
        &self,
        key: &RecordKey,
    ) -> (Vec<Claim>, Option<Arc<TuningRecord>>, bool) {
        let (claims, found, timed_out) = self
            .0
            .modules
            .claim_entry(&ModuleKey::from_bytes(key.0), EntryKind::TuningRecord);
        let found = found.and_then(|f| self.adopt_record(key, &f.target, &f.payload));
        (claims, found, timed_out)
    }
}
