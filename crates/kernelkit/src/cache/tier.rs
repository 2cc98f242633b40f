//! Artifact tiers: places that keep compiled artifacts beyond one
//! process's memory, asked in order before a compile (the disk store
//! first, then the fleet's Redis, `cache::remote`).
//!
//! A tier never fails a call: whatever goes wrong inside it (a missing
//! file, a corrupt or untrusted entry, a server away) is a miss, counted in
//! the tier's own counters ([`ArtifactTier::add_stats`]), and the module is
//! compiled instead.

use crate::cache::entry::{Contents, Dependencies, EntryKind};
use crate::cache::key::{IdentityDigest, ModuleKey};
use crate::error::CompileError;
use crate::stats::CacheStats;

/// What the resolver writes into a tier after a compile: an entry's
/// contents (see [`crate::cache::entry`]).
pub(crate) type Artifact<'a> = Contents<'a>;

/// What a tier found: the artifact and what another tier needs to keep it
/// too (a hit in a later tier is written into the earlier ones).
pub(crate) struct Found {
    /// What the payload is (code, PTX, a tuning record).
    pub(crate) kind: EntryKind,
    /// What it is for (`sm_90a`, `compute_90`, `x86-64-v2`, a device model).
    pub(crate) target: String,
    /// The kernel's name.
    pub(crate) kernel: String,
    /// `cpu` or `cuda`.
    pub(crate) backend: String,
    /// The generated function's name.
    pub(crate) function: String,
    /// The compiler configuration that built the payload.
    pub(crate) identity: IdentityDigest,
    /// The files the compile read (checked already, on this machine).
    pub(crate) dependencies: Dependencies,
    /// The artifact.
    pub(crate) payload: Vec<u8>,
}

impl Found {
    /// What a tier parsed, owned.
    pub(crate) fn from_entry(entry: crate::cache::entry::Entry<'_>) -> Found {
        let h = entry.header;
        Found {
            kind: h.kind,
            target: h.target,
            kernel: h.kernel,
            backend: h.backend,
            function: h.function,
            identity: h.identity,
            dependencies: entry.dependencies,
            payload: entry.payload.to_vec(),
        }
    }

    /// The same artifact, to [`ArtifactTier::put`] into another tier.
    pub(crate) fn artifact(&self) -> Artifact<'_> {
        Artifact {
            kind: self.kind,
            target: &self.target,
            kernel: &self.kernel,
            backend: &self.backend,
            function: &self.function,
            identity: self.identity,
            dependencies: &self.dependencies,
            payload: &self.payload,
        }
    }
}

/// What a tier holds for a key.
pub(crate) enum Lookup {
    /// A good artifact (boxed: a miss is the common small answer).
    Hit(Box<Found>),
    /// Nothing (or nothing that could be read).
    Missing,
    /// Something that is not used here (rejected, out of date on this
    /// machine, of another format); `seen` tells the tier's
    /// [`claim`](ArtifactTier::claim) what was there, so that it waits for
    /// a new artifact rather than taking this one for it.
    Unusable {
        /// The tier's own marker of what it saw.
        seen: Vec<u8>,
    },
}

/// A held claim on a key: while it lives, other processes that miss the
/// same key wait for this one's artifact instead of compiling it too.
/// Dropping it releases the claim.
pub(crate) type Claim = Box<dyn Send>;

/// What asking a tier for a claim gave.
pub(crate) enum Claimed {
    /// This process holds the key: it compiles (after one more look).
    Held(Claim),
    /// Another process published the artifact while this one waited: look
    /// again.
    Published,
    /// No claim (the tier offers none, is away, or the wait ran out).
    Unclaimed,
}

/// One artifact tier. See the module documentation.
pub(crate) trait ArtifactTier: Send + Sync + 'static {
    /// The artifact stored under `key`, if the tier holds a good one whose
    /// dependencies are unchanged; anything else is a miss (any fault is
    /// counted by the tier and left as it was unless proven corrupt).
    fn get(&self, key: &ModuleKey) -> Lookup;
    /// The artifact [`get`](ArtifactTier::get) returned was loaded.
    fn record_hit(&self);
    /// The resolver found no artifact in this tier and will compile.
    fn record_miss(&self);
    /// The artifact [`get`](ArtifactTier::get) returned did not load.
    fn record_bad_load(&self, key: &ModuleKey, error: &CompileError);
    /// Claims `key` for a compile, waiting (bounded) while another process
    /// holds it (see [`Claimed`]); `seen` is what [`Lookup::Unusable`]
    /// said, if that was the answer (a new artifact is one that differs).
    fn claim(&self, key: &ModuleKey, seen: Option<&[u8]>) -> Claimed;
    /// Keeps a compiled artifact (a failed write is counted, never fatal).
    fn put(&self, key: &ModuleKey, artifact: &Artifact<'_>);
    /// Whether the tier holds a good artifact for `key` whose dependencies
    /// are unchanged, without loading it and without counting a hit or a
    /// miss (for "is this kernel compiled?").
    fn holds(&self, key: &ModuleKey) -> bool;
    /// Whether other machines share this tier (the fleet's Redis), rather
    /// than it being this machine's own (the disk store): what
    /// [`CacheState`](crate::cache::CacheState) tells apart.
    fn shared(&self) -> bool;
    /// Adds this tier's counters to a device's statistics.
    fn add_stats(&self, stats: &mut CacheStats);
}
