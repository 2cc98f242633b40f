//! Artifact tiers: places that keep compiled artifacts beyond one
//! process's memory, asked in order before a compile (the disk store
//! first; a fleet-wide tier would come after it).
//!
//! A tier never fails a call: whatever goes wrong inside it (a missing
//! file, a corrupt or untrusted entry, a server away) is a miss, counted in
//! the tier's own counters ([`ArtifactTier::add_stats`]), and the module is
//! compiled instead.

use crate::cache::entry::Contents;
use crate::cache::key::ModuleKey;
use crate::error::CompileError;
use crate::stats::CacheStats;

/// What the resolver writes into a tier after a compile: an entry's
/// contents (see [`crate::cache::entry`]).
pub(crate) type Artifact<'a> = Contents<'a>;

/// A held claim on a key: while it lives, other processes that miss the
/// same key wait for this one's artifact instead of compiling it too.
/// Dropping it releases the claim.
pub(crate) type Claim = Box<dyn Send>;

/// One artifact tier. See the module documentation.
pub(crate) trait ArtifactTier: Send + Sync + 'static {
    /// The artifact stored under `key`, if the tier holds a good one whose
    /// dependencies are unchanged; `None` is a miss (any fault is counted
    /// by the tier and left as it was unless proven corrupt).
    fn get(&self, key: &ModuleKey) -> Option<Vec<u8>>;
    /// The artifact [`get`](ArtifactTier::get) returned was loaded.
    fn record_hit(&self);
    /// The resolver found no artifact in this tier and will compile.
    fn record_miss(&self);
    /// The artifact [`get`](ArtifactTier::get) returned did not load.
    fn record_bad_load(&self, key: &ModuleKey, error: &CompileError);
    /// Claims `key` for a compile, waiting (bounded) while another process
    /// holds it; `None` when the tier offers no claims or the wait ran out.
    fn claim(&self, key: &ModuleKey) -> Option<Claim>;
    /// Keeps a compiled artifact (a failed write is counted, never fatal).
    fn put(&self, key: &ModuleKey, artifact: &Artifact<'_>);
    /// Whether the tier holds a good artifact for `key` whose dependencies
    /// are unchanged, without loading it and without counting a hit or a
    /// miss (for "is this kernel compiled?").
    fn holds(&self, key: &ModuleKey) -> bool;
    /// Adds this tier's counters to a device's statistics.
    fn add_stats(&self, stats: &mut CacheStats);
}
