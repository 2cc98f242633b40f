//! The module resolver of one device: memory → artifact tiers → compile.
//!
//! - **Memory** ([`KernelCache`]): loaded modules by [`ModuleKey`], one
//!   build per key however many threads ask, different keys in parallel.
//! - **Tiers** ([`ArtifactTier`]; the disk store, then the fleet's Redis,
//!   when the configuration has them): asked in order; the first good
//!   artifact that loads wins, and is written into the tiers before the
//!   one it came from (a fleet hit lands on the disk). Before compiling,
//!   the resolver claims the key in each tier that offers claims (the
//!   store's per-key file lock, the fleet's lease), so other processes that
//!   miss it wait for this one's artifact, and looks once more after each
//!   claim (another process may have published it meanwhile).
//! - **Compile**: the backend's compiler; the artifact goes into every tier
//!   (when its dependency list is known), then the claims are released and
//!   the artifact is loaded.
//!
//! A tier's trouble is a miss and a counter in that tier, never a failed
//! call; a compile error is reported to every waiter and never cached.
//!
//! The key is derived once per resolution from the backend's identity, the
//! function name and the source's 128-bit hash ([`ModuleKey::derive_hashed`]):
//! the same 128 bits name the module in memory and the artifact in every
//! tier. A [`ModuleRequest`] carries the hash and builds the source text
//! only on a miss of the memory (to load an artifact or to compile), so a
//! variant whose module is loaded never has its whole text built.

use std::sync::Arc;
use std::time::Instant;

use crate::backend::{Backend, CompileJob, Compiled, Module};
use crate::cache::artifact_pool::ArtifactPool;
use crate::cache::entry::EntryKind;
use crate::cache::kernel_cache::{KernelCache, Outcome, Shared};
use crate::cache::key::{IdentityDigest, ModuleKey};
use crate::cache::tier::{Artifact, ArtifactTier, Claim, Claimed, Found, Lookup};
use crate::error::CompileError;
use crate::nvtx;
use crate::stats::{CacheStats, Counter};

/// Where a variant's module is already compiled (see `Call::cache_state`):
/// a call that finds it in memory costs no compile and no load; one that
/// finds it on disk costs a load (well under a millisecond on the CPU);
/// one that finds it in the fleet tier costs a fetch and a load (and
/// writes it to the disk); one that finds none of them compiles.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheState {
    /// Loaded by this device, in this process.
    pub memory: bool,
    /// In the device's artifact store, good and up to date.
    pub disk: bool,
    /// In the fleet tier (Redis, [`crate::cache::remote`]), signed by a
    /// key this node holds, good and up to date here.
    pub remote: bool,
}

impl CacheState {
    /// Whether a call would find it without compiling.
    pub fn compiled(&self) -> bool {
        self.memory || self.disk || self.remote
    }
}

/// A module to resolve: the names, the source's xxh3-128 hash, and the
/// source text on demand.
pub(crate) struct ModuleRequest<'a> {
    /// The kernel's name, for messages.
    pub(crate) kernel: &'a str,
    /// The generated function's name.
    pub(crate) function: &'a str,
    /// xxh3-128 of the whole source.
    pub(crate) source_hash: u128,
    /// Builds the whole source (called on a miss of the memory only).
    pub(crate) source: &'a dyn Fn() -> Arc<str>,
}

/// See the module documentation.
pub(crate) struct ModuleResolver {
    memory: KernelCache,
    tiers: Vec<Box<dyn ArtifactTier>>,
    /// Artifacts shared with the other devices of this process (see
    /// `cache::artifact_pool`), asked before the tiers.
    pool: Option<Arc<ArtifactPool>>,
    /// Modules loaded from PTX entries (see [`CacheStats::ptx_loads`]).
    ptx_loads: Counter,
}

/// What one tier gave for a key.
enum Stored {
    /// A good artifact, loaded (and what it was loaded from).
    Loaded(Module, Box<Found>),
    /// No artifact.
    Missing,
    /// An artifact the tier does not use here (with the tier's marker).
    Unusable(Vec<u8>),
    /// A good artifact that did not load (already counted).
    NotLoaded,
}

impl ModuleResolver {
    /// A resolver with an empty memory that keeps at most `max_loaded`
    /// modules loaded, over `pool` (if any) and then `tiers`, asked in
    /// order.
    pub(crate) fn new(
        tiers: Vec<Box<dyn ArtifactTier>>,
        pool: Option<Arc<ArtifactPool>>,
        max_loaded: usize,
    ) -> ModuleResolver {
        ModuleResolver {
            memory: KernelCache::new(max_loaded),
            tiers,
            pool,
            ptx_loads: Counter::default(),
        }
    }

    /// The loaded module of `job` on `backend`, from memory, a tier, or a
    /// compile (see the module documentation).
    pub(crate) fn module(
        &self,
        backend: &dyn Backend,
        request: &ModuleRequest<'_>,
    ) -> Result<Shared, CompileError> {
        let key = ModuleKey::derive_hashed(
            backend.name(),
            backend.identity(),
            request.function,
            request.source_hash,
        );
        let (module, outcome) = self.memory.module(&key, || {
            tracing::debug!("kernel `{}`: not in memory, building", request.kernel);
            let source = (request.source)();
            let job = CompileJob {
                kernel: request.kernel,
                function: request.function,
                source: &source,
                shared_source: &source,
            };
            match &self.pool {
                None => self
                    .build(backend, &job, &key, request.source_hash, false)
                    .map(|(m, _)| m),
                Some(pool) => pool.module(
                    &key,
                    |bytes| traced_load(backend, &job, bytes),
                    || {
                        let (module, bytes) =
                            self.build(backend, &job, &key, request.source_hash, true)?;
                        Ok((module, bytes.unwrap_or_default()))
                    },
                ),
            }
        });
        match outcome {
            Outcome::Hit => self.memory.hits.incr(),
            Outcome::Built | Outcome::Waited => self.memory.misses.incr(),
        }
        module
    }

    /// Where the module of `function`, whose source hashes to
    /// `source_hash` (xxh3-128), is already compiled: loaded in memory,
    /// kept (good and up to date) in a tier. Nothing is compiled, loaded
    /// or counted, and the source text is not built.
    pub(crate) fn cache_state(
        &self,
        backend: &dyn Backend,
        function: &str,
        source_hash: u128,
    ) -> CacheState {
        let key =
            ModuleKey::derive_hashed(backend.name(), backend.identity(), function, source_hash);
        // This backend's own artifact, else one it falls back to (PTX, a
        // portable CPU level).
        let keys: Vec<ModuleKey> = std::iter::once(key)
            .chain(backend.fallback_identities().iter().map(|(_, identity)| {
                ModuleKey::derive_hashed(backend.name(), identity, function, source_hash)
            }))
            .collect();
        let held = |shared: bool| {
            self.tiers
                .iter()
                .any(|t| t.shared() == shared && keys.iter().any(|k| t.holds(k)))
        };
        CacheState {
            memory: self.memory.is_ready(&key),
            disk: held(false),
            remote: held(true),
        }
    }

    /// The entry of kind `kind` stored under `key` in the first tier that
    /// holds one (the disk store, then the fleet's Redis), kept in the
    /// tiers before it as a module would be; `None` when no tier holds
    /// one. Nothing is loaded or counted: this is how non-module entries
    /// (tuning records) are read through the same tiers.
    pub(crate) fn stored_entry(&self, key: &ModuleKey, kind: EntryKind) -> Option<Box<Found>> {
        for (i, tier) in self.tiers.iter().enumerate() {
            if let Lookup::Hit(found) = tier.get(key) {
                if found.kind == kind {
                    self.backfill(i, key, &found);
                    return Some(found);
                }
            }
        }
        None
    }

    /// Writes `artifact` under `key` into every tier (a failed write is
    /// counted by its tier, never fatal): how non-module entries (tuning
    /// records) are kept.
    pub(crate) fn put_entry(&self, key: &ModuleKey, artifact: &Artifact<'_>) {
        for tier in &self.tiers {
            tier.put(key, artifact);
        }
    }

    /// Claims `key` in every tier, in order (the disk store's file lock,
    /// the fleet's lease), waiting while another process holds it: the
    /// claims held (dropped to release), an entry of `kind` another
    /// process published meanwhile, and whether a tier that others share
    /// gave no claim (its wait ran out, or it is away). How one node of a
    /// fleet tunes a key while the others wait for its record.
    pub(crate) fn claim_entry(
        &self,
        key: &ModuleKey,
        kind: EntryKind,
    ) -> (Vec<Claim>, Option<Box<Found>>, bool) {
        let mut claims = Vec::new();
        let mut unclaimed_shared = false;
        for (i, tier) in self.tiers.iter().enumerate() {
            let look_again = match tier.claim(key, None) {
                Claimed::Held(claim) => {
                    claims.push(claim);
                    true
                }
                Claimed::Published => true,
                Claimed::Unclaimed => {
                    unclaimed_shared |= tier.shared();
                    false
                }
            };
            if look_again {
                if let Lookup::Hit(found) = tier.get(key) {
                    if found.kind == kind {
                        self.backfill(i, key, &found);
                        return (claims, Some(found), false);
                    }
                }
            }
        }
        (claims, None, unclaimed_shared)
    }

    /// Counts a hit answered without asking the resolver (a variant that
    /// kept its function: see `kernel::variant`).
    #[inline]
    pub(crate) fn record_fast_hit(&self) {
        self.memory.hits.incr();
    }

    /// Loads the module from a tier, or compiles it (and keeps it in every
    /// tier). The memory runs this once per key in this process. With
    /// `keep_artifact`, the artifact's bytes come back too (for the pool).
    fn build(
        &self,
        backend: &dyn Backend,
        job: &CompileJob<'_>,
        key: &ModuleKey,
        source_hash: u128,
        keep_artifact: bool,
    ) -> Result<(Module, Option<Vec<u8>>), CompileError> {
        let keep = |bytes: &[u8]| keep_artifact.then(|| bytes.to_vec());
        let mut status = Vec::with_capacity(self.tiers.len());
        for (i, tier) in self.tiers.iter().enumerate() {
            match load_stored(backend, &**tier, key, job) {
                Stored::Loaded(module, found) => {
                    self.backfill(i, key, &found);
                    return Ok((module, keep(&found.payload)));
                }
                stored => status.push(stored),
            }
        }
        // No tier holds this backend's own artifact: one it also loads
        // (PTX for an older virtual architecture, a portable CPU level its
        // CPU runs), best first, before anything compiles.
        for (target, identity) in backend.fallback_identities() {
            let other =
                ModuleKey::derive_hashed(backend.name(), identity, job.function, source_hash);
            for (i, tier) in self.tiers.iter().enumerate() {
                if let Stored::Loaded(module, found) = load_stored(backend, &**tier, &other, job) {
                    tracing::debug!(
                        "kernel `{}`: loaded the {} artifact for {target}",
                        job.kernel,
                        found.kind
                    );
                    if found.kind == EntryKind::Ptx {
                        self.ptx_loads.incr();
                    }
                    self.backfill(i, &other, &found);
                    return Ok((module, keep(&found.payload)));
                }
            }
        }
        // Claims in tier order (the disk store's lock serializes the
        // processes of one machine, the fleet's lease those of every
        // machine). Another process may have published the artifact while
        // this one waited: after a claim, look again in that tier, when it
        // said a new one is there, or when it had nothing before (an
        // artifact that did not load is not tried twice; one that was
        // unusable is tried again only once the tier saw it replaced).
        let mut claims = Vec::new();
        for (i, tier) in self.tiers.iter().enumerate() {
            let seen = match &status[i] {
                Stored::Unusable(seen) => Some(seen.as_slice()),
                _ => None,
            };
            let look_again = match tier.claim(key, seen) {
                Claimed::Held(claim) => {
                    claims.push(claim);
                    matches!(status[i], Stored::Missing)
                }
                Claimed::Published => !matches!(status[i], Stored::NotLoaded),
                Claimed::Unclaimed => false,
            };
            if look_again {
                if let Stored::Loaded(module, found) = load_stored(backend, &**tier, key, job) {
                    self.backfill(i, key, &found);
                    return Ok((module, keep(&found.payload)));
                }
            }
        }
        for tier in &self.tiers {
            tier.record_miss();
        }
        let compiled = self.compile(backend, job)?;
        match &compiled.dependencies {
            Ok(dependencies) => {
                let artifact = Artifact {
                    kind: kind_of_target(backend.target()),
                    target: backend.target(),
                    kernel: job.kernel,
                    backend: backend.name(),
                    function: job.function,
                    identity: IdentityDigest::of(backend.name(), backend.identity()),
                    dependencies,
                    payload: &compiled.artifact,
                };
                for tier in &self.tiers {
                    tier.put(key, &artifact);
                }
            }
            Err(why) => tracing::debug!(
                "kernelkit artifact store: kernel `{}` is not stored: {why}",
                job.kernel
            ),
        }
        // Released last: the waiters find the artifact in every tier.
        drop(claims);
        let started = Instant::now();
        let module = traced_load(backend, job, &compiled.artifact)?;
        tracing::debug!(
            "kernel `{}`: loaded in {:.3} ms",
            job.kernel,
            started.elapsed().as_secs_f64() * 1e3
        );
        Ok((module, keep_artifact.then_some(compiled.artifact)))
    }

    /// Keeps an artifact found in tier `found_in` in the tiers before it
    /// (a fleet hit goes to the disk, so the next process of this machine
    /// finds it there).
    fn backfill(&self, found_in: usize, key: &ModuleKey, found: &Found) {
        let artifact = found.artifact();
        for tier in &self.tiers[..found_in] {
            tier.put(key, &artifact);
        }
    }

    /// Runs the backend compiler, counting the run and its wall time.
    fn compile(
        &self,
        backend: &dyn Backend,
        job: &CompileJob<'_>,
    ) -> Result<Compiled, CompileError> {
        self.memory.compiles.incr();
        let started = Instant::now();
        let range = nvtx::range(nvtx::What::Compile, job.kernel, job.function);
        let compiled = backend.compile(job);
        drop(range);
        let took = started.elapsed();
        self.memory.compile_ns.add(took.as_nanos() as u64);
        tracing::debug!(
            "kernel `{}`: compiled in {:.3} ms",
            job.kernel,
            took.as_secs_f64() * 1e3
        );
        compiled
    }

    /// What the memory and every tier have done so far.
    pub(crate) fn stats(&self) -> CacheStats {
        let c = &self.memory;
        let mut stats = CacheStats {
            hits: c.hits.get(),
            misses: c.misses.get(),
            compiles: c.compiles.get(),
            failures: c.failures.get(),
            compile_ns: c.compile_ns.get(),
            loaded: c.loads.get(),
            unloaded: c.unloads.get(),
            reloads: c.reloads.get(),
            ptx_loads: self.ptx_loads.get(),
            ..CacheStats::default()
        };
        for tier in &self.tiers {
            tier.add_stats(&mut stats);
        }
        stats
    }

    /// Modules loaded now (not those being built).
    pub(crate) fn loaded(&self) -> usize {
        self.memory.loaded()
    }
}

/// `backend.load`, inside an NVTX range when they are on.
fn traced_load(
    backend: &dyn Backend,
    job: &CompileJob<'_>,
    artifact: &[u8],
) -> Result<Module, CompileError> {
    let _range = nvtx::range(nvtx::What::Load, job.kernel, job.function);
    backend.load(job, artifact)
}

/// The module from `tier`'s artifact for `key`, if it has a good one that
/// loads.
fn load_stored(
    backend: &dyn Backend,
    tier: &dyn ArtifactTier,
    key: &ModuleKey,
    job: &CompileJob<'_>,
) -> Stored {
    let found = match tier.get(key) {
        // A tuning record is never loaded as a module (its key is the
        // tuner's own, so only a forged entry puts one here).
        Lookup::Hit(found) if !found.kind.is_loadable() => return Stored::Missing,
        Lookup::Hit(found) => found,
        Lookup::Missing => return Stored::Missing,
        Lookup::Unusable { seen } => return Stored::Unusable(seen),
    };
    match traced_load(backend, job, &found.payload) {
        Ok(module) => {
            tier.record_hit();
            Stored::Loaded(module, found)
        }
        Err(e) => {
            tier.record_bad_load(key, &e);
            Stored::NotLoaded
        }
    }
}

/// The kind of a compiled artifact for `target`: PTX for a virtual
/// architecture (`compute_90`), code for anything else.
pub(crate) fn kind_of_target(target: &str) -> EntryKind {
    if target.starts_with("compute_") {
        EntryKind::Ptx
    } else {
        EntryKind::Code
    }
}
