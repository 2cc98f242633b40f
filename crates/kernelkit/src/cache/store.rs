//! The artifact store: compiled artifacts on disk, shared by every process
//! of a user, so that a process started again compiles nothing.
//!
//! It sits under each device's kernel cache (which already makes sure one
//! thread per process builds a module key) and above the backend compiler.
//! Every operation on one entry (lookup, write, eviction) costs the same
//! whether the store holds a thousand entries or a million.
//!
//! - **Entries.** One file per artifact, `<key>.kka`, named by the 32 hex
//!   digits of its [`ModuleKey`] (a hash of everything that changes the
//!   binary, see [`crate::cache::key`]), in a subdirectory named by the
//!   key's first two digits (see `store/layout.rs`; flat stores of
//!   earlier kernelkits are read in place and moved by the first write);
//!   the format is in [`crate::cache::entry`]. An entry is written to a
//!   temporary file in the same directory, synced and renamed into place,
//!   so readers see a whole entry or none.
//! - **Dependencies.** Each entry lists the files its compile read besides
//!   the source (what headers `#include`), with a hash of their contents;
//!   a lookup checks them, and an entry whose files changed, vanished or
//!   would now be found elsewhere is a miss, compiled again and
//!   overwritten (see [`Dependencies`]). A compile whose reads cannot be
//!   known is not stored.
//! - **Failures are misses.** Any entry that cannot be read, fails its
//!   checksum, is stored under another key, is not trusted or does not load
//!   is counted in `disk_errors`; the kernel is compiled again and the entry
//!   rewritten. Only an entry proven corrupt (bad magic, checksum or
//!   lengths, another key) is removed at once: a read or load that failed
//!   for want of memory, file descriptors or a usable temporary directory
//!   says nothing about the entry, which stays for the next process. An
//!   entry of another format version is a plain miss. No store problem
//!   ever fails a call.
//! - **Between processes.** A process that misses takes an OS file lock on
//!   `<key>.lock` (see `cache::lock`) before it compiles, so the others wait
//!   for its entry instead of compiling the same source; the lock dies with
//!   its owner and the wait is bounded, after which they compile too.
//! - **Safety.** The directory and its subdirectories are created with
//!   mode `0700`. An entry is a shared library that will be loaded into the
//!   process, so it is read only when the directory, the entry's
//!   subdirectory (a real directory, not a link) and the file belong to the
//!   current user and are not writable by group or others (see
//!   `cache::trust`). Paths are built from hex keys only.
//! - **Size.** The store keeps a running total of its entries and bytes
//!   (`store/usage.rs`): the file `usage`, which is also the store's lock,
//!   held by every change to the set of entries; it is recounted from the
//!   files when it looks wrong (missing, damaged, or left dirty by a
//!   process that died while it changed the store). A write that takes the
//!   total over [`ArtifactStore::max_bytes`] evicts until it is back under
//!   90% of it ([`LOW_WATER_PERCENT`]), so the following writes do not
//!   evict; eviction removes least recently used entries as a sample of
//!   them tells (`store/evict.rs`). "Used" is the file's modification
//!   time, set when the entry is written and again on each hit. The entry
//!   just written is always kept. Between writes, the store holds at most
//!   its limit, plus one entry per process that is writing one.
//! - **Settings.** A [`CacheConfig`] (from `KERNELKIT_CACHE`,
//!   `KERNELKIT_CACHE_DIR`, `KERNELKIT_CACHE_MAX_BYTES`, or set by the
//!   program: see [`crate::config`]). A directory that
//!   cannot be created, trusted or written leaves the device with its memory
//!   cache only, after one warning per process.

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use crate::cache::entry::{self, Contents, Dependencies, EntryError, Header, MAX_HEADER_BYTES};
use crate::cache::key::ModuleKey;
use crate::cache::lock::KeyLock;
use crate::cache::tally;
use crate::cache::tier::{Claimed, Found};
use crate::cache::trust;
use crate::config::{CacheConfig, CacheMode, DEFAULT_MAX_BYTES};
use crate::error::CompileError;
use crate::stats::{CacheStats, Counter};

pub use crate::cache::tally::Tally;

mod admin;
mod evict;
mod layout;
mod report;
mod usage;
mod write;
pub use write::StagedBatch;

use evict::Evictor;
use layout::TEMP_SUFFIX;
pub use report::{
    BadEntry, ClearReport, EntryFault, EntryInfo, StoreError, StoreStats, VerifyReport,
};
use usage::{Recorded, Usage, UsageLock};

/// How long a process waits for another one compiling the same key.
const DEFAULT_LOCK_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a process waits for the store's lock (the running total). Its
/// holds last microseconds, milliseconds for an eviction step, seconds for
/// a recount of a large store; a write that cannot get it in this time is
/// not made (a later process compiles the kernel again).
const USAGE_LOCK_TIMEOUT: Duration = Duration::from_secs(30);
/// Larger files are not read: no compiled kernel is this big, and reading
/// one into memory could exhaust it.
const MAX_ENTRY_BYTES: u64 = 1 << 30;
/// An eviction brings the store down to this share of its limit, so that
/// the writes after it find room and do not evict.
pub const LOW_WATER_PERCENT: u64 = 90;
/// Entries one hold of the store's lock removes before it lets other
/// processes in (once the store is back under its limit).
const EVICT_STEP: usize = 256;

/// The on-disk artifact store. See the module documentation.
#[derive(Debug)]
pub struct ArtifactStore {
    dir: PathBuf,
    max_bytes: u64,
    lock_timeout: Duration,
    counts: Counts,
    /// Set after the first failed write has been reported.
    write_warned: AtomicBool,
}

/// This store object's counters (one process, one device).
#[derive(Default)]
struct Counts {
    hits: Counter,
    misses: Counter,
    writes: Counter,
    errors: Counter,
}

impl std::fmt::Debug for Counts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Counts")
            .field("hits", &self.hits.get())
            .field("misses", &self.misses.get())
            .field("writes", &self.writes.get())
            .field("errors", &self.errors.get())
            .finish()
    }
}

/// An entry that passed every check of its own (the dependency list is
/// checked by the lookup).
struct Good {
    header: Header,
    payload: Vec<u8>,
    dependencies: Dependencies,
    /// The open entry file, to record its last use on a hit.
    file: File,
}

/// A lookup's answer.
pub(crate) enum Lookup {
    /// A valid, trusted entry whose dependencies are as they were when it
    /// was compiled (boxed: a miss is the common small answer).
    Hit(Box<Found>),
    /// No entry, an out-of-date one, or a bad one (already counted, and
    /// removed if corrupt).
    Miss,
}

/// Where an entry file was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    /// In its subdirectory (counted in the running total).
    Fanout,
    /// In the store directory itself, where kernelkit kept entries before
    /// the fan-out (not counted until a recount moves it).
    Flat,
}

/// The share of `max` an eviction brings the store down to.
fn low_water(max: u64) -> u64 {
    max / 100 * LOW_WATER_PERCENT + max % 100 * LOW_WATER_PERCENT / 100
}

impl ArtifactStore {
    /// The store `config` asks for, or `None` for memory-only, with one
    /// warning per process when a disk store was asked for but cannot be
    /// used.
    pub(crate) fn for_devices(config: &CacheConfig) -> Option<ArtifactStore> {
        if config.mode != CacheMode::Disk {
            return None;
        }
        let Some(dir) = &config.dir else {
            warn_unusable("no home directory to put it in; set KERNELKIT_CACHE_DIR");
            return None;
        };
        match ArtifactStore::create(dir) {
            Ok(store) => Some(store.with_max_bytes(config.max_bytes)),
            Err(e) => {
                warn_unusable(&e.to_string());
                None
            }
        }
    }

    /// Opens an existing store directory (for inspection: nothing is
    /// created or written until a method that changes the store is
    /// called). Fails when it is missing or not trusted.
    pub fn open(dir: impl Into<PathBuf>) -> Result<ArtifactStore, StoreError> {
        let dir = dir.into();
        let meta = match std::fs::metadata(&dir) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(StoreError::Missing { dir });
            }
            Err(source) => {
                return Err(StoreError::Io {
                    dir,
                    operation: "read the directory's metadata",
                    source,
                })
            }
        };
        if let Err(reason) = trust::check_dir(&meta) {
            return Err(StoreError::Untrusted { dir, reason });
        }
        Ok(ArtifactStore {
            dir,
            max_bytes: DEFAULT_MAX_BYTES,
            lock_timeout: DEFAULT_LOCK_TIMEOUT,
            counts: Counts::default(),
            write_warned: AtomicBool::new(false),
        })
    }

    /// Opens a store for use by devices: creates the directory (mode
    /// `0700`) if needed, checks that it is trusted and that this process
    /// can write to it.
    pub fn create(dir: impl Into<PathBuf>) -> Result<ArtifactStore, StoreError> {
        let dir = dir.into();
        if let Err(source) = create_private_dir(&dir) {
            return Err(StoreError::Io {
                dir,
                operation: "create the directory",
                source,
            });
        }
        let store = ArtifactStore::open(dir)?;
        // Probe: a read-only mount or a directory without write permission
        // is found here, once, rather than on every compile.
        if let Err(source) = tempfile::Builder::new()
            .prefix(".probe")
            .suffix(TEMP_SUFFIX)
            .tempfile_in(&store.dir)
        {
            return Err(StoreError::Io {
                dir: store.dir,
                operation: "write to the directory",
                source,
            });
        }
        Ok(store)
    }

    /// Sets the size limit (default 1 GiB).
    pub fn with_max_bytes(mut self, max_bytes: u64) -> ArtifactStore {
        self.max_bytes = max_bytes;
        self
    }

    /// Sets how long a process waits for another one that compiles the same
    /// key before compiling it too (default 60 s).
    pub fn with_lock_timeout(mut self, timeout: Duration) -> ArtifactStore {
        self.lock_timeout = timeout;
        self
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The size limit in bytes.
    pub fn max_bytes(&self) -> u64 {
        self.max_bytes
    }

    /// The file that holds (or would hold) `key`'s entry: `<dir>/<first two
    /// hex digits>/<key>.kka`.
    pub fn entry_path(&self, key: &ModuleKey) -> PathBuf {
        layout::entry_path(&self.dir, key)
    }

    /// The payload stored under `key`, if the store holds a good entry whose
    /// dependencies are unchanged (for tools and tests; devices go through
    /// their module resolver). A fault is counted and handled as by any
    /// lookup (see [`ArtifactStore`]'s module documentation).
    pub fn get(&self, key: &ModuleKey) -> Option<Vec<u8>> {
        match self.lookup(key) {
            Lookup::Hit(found) => Some(found.payload),
            Lookup::Miss => None,
        }
    }

    /// Whether the store holds a good, trusted entry for `key` whose
    /// dependencies are unchanged: what a lookup would load, found without
    /// counting anything, recording a use or removing a bad entry.
    pub fn holds(&self, key: &ModuleKey) -> bool {
        matches!(self.find(key).1, Ok(Some(good)) if good.dependencies.check().is_ok())
    }

    /// Looks `key` up. An entry that cannot be used is a miss: counted as
    /// an error and reported, and removed only when it is proven corrupt
    /// (see [`EntryFault::is_corrupt`]); an entry of another format version
    /// is a plain miss. Either way the compile that follows rewrites it.
    pub(crate) fn lookup(&self, key: &ModuleKey) -> Lookup {
        let (place, found) = self.find(key);
        match found {
            Ok(Some(good)) => match good.dependencies.check() {
                Ok(()) => {
                    // Last use for eviction; failing to record it is harmless.
                    let _ = good.file.set_modified(SystemTime::now());
                    Lookup::Hit(Box::new(Found {
                        kind: good.header.kind,
                        target: good.header.target,
                        kernel: good.header.kernel,
                        backend: good.header.backend,
                        function: good.header.function,
                        identity: good.header.identity,
                        dependencies: good.dependencies,
                        payload: good.payload,
                    }))
                }
                Err(stale) => {
                    tracing::debug!(
                        "kernelkit artifact store: entry {key} is out of date ({stale}); compiling it again"
                    );
                    Lookup::Miss
                }
            },
            Ok(None) => Lookup::Miss,
            Err(EntryFault::Malformed(EntryError::Version { found, .. })) => {
                tracing::debug!(
                    "kernelkit artifact store: entry {key} has format version {found}; compiling it again"
                );
                Lookup::Miss
            }
            Err(fault) if fault.is_corrupt() => {
                self.count_error();
                tracing::warn!(
                    "kernelkit artifact store: entry {key} in {} is corrupt ({fault}); removing it and compiling again",
                    self.dir.display()
                );
                self.remove_corrupt(key, place);
                Lookup::Miss
            }
            Err(fault) => {
                self.keep_unusable(key, &fault.to_string());
                Lookup::Miss
            }
        }
    }

    /// Reads `key`'s entry from its subdirectory or, in a store not yet
    /// moved to the fan-out, from the store directory.
    fn find(&self, key: &ModuleKey) -> (Place, Result<Option<Good>, EntryFault>) {
        match self.read_entry(key, Place::Fanout) {
            Ok(None) => {}
            found => return (Place::Fanout, found),
        }
        match self.read_entry(key, Place::Flat) {
            Ok(None) => {}
            found => return (Place::Flat, found),
        }
        // Moved from the one to the other between the two reads.
        (Place::Fanout, self.read_entry(key, Place::Fanout))
    }

    fn place_path(&self, key: &ModuleKey, place: Place) -> PathBuf {
        match place {
            Place::Fanout => layout::entry_path(&self.dir, key),
            Place::Flat => layout::flat_entry_path(&self.dir, key),
        }
    }

    /// The whole file of `key`'s entry when it passes every check of its
    /// own (trust, checksum, key; not its dependency list): what a bundle
    /// export copies. `Ok(None)` when there is none.
    pub fn entry_bytes(&self, key: &ModuleKey) -> Result<Option<Vec<u8>>, EntryFault> {
        for place in [Place::Fanout, Place::Flat] {
            if let Some((bytes, _)) = self.read_file(key, place)? {
                parse_for(key, &bytes)?;
                return Ok(Some(bytes));
            }
        }
        Ok(None)
    }

    /// Reads and checks one entry; `Ok(None)` when there is none.
    fn read_entry(&self, key: &ModuleKey, place: Place) -> Result<Option<Good>, EntryFault> {
        let Some((bytes, file)) = self.read_file(key, place)? else {
            return Ok(None);
        };
        let parsed = parse_for(key, &bytes)?;
        Ok(Some(Good {
            header: parsed.header,
            payload: parsed.payload.to_vec(),
            dependencies: parsed.dependencies,
            file,
        }))
    }

    /// Reads one entry's file once the directory, its subdirectory and
    /// the file are trusted (the contents are [`parse_for`]'s to check);
    /// `Ok(None)` when there is none.
    fn read_file(
        &self,
        key: &ModuleKey,
        place: Place,
    ) -> Result<Option<(Vec<u8>, File)>, EntryFault> {
        let dir_meta = std::fs::metadata(&self.dir).map_err(EntryFault::Unreadable)?;
        trust::check_dir(&dir_meta)
            .map_err(|reason| EntryFault::Untrusted(format!("the directory: {reason}")))?;
        if place == Place::Fanout {
            // Not followed: a subdirectory is the store's own, never a link.
            match std::fs::symlink_metadata(layout::subdir(&self.dir, key)) {
                Ok(meta) => trust::check_dir(&meta).map_err(|reason| {
                    EntryFault::Untrusted(format!("its subdirectory: {reason}"))
                })?,
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(EntryFault::Unreadable(e)),
            }
        }
        #[cfg(test)]
        if let Some(errno) = tests::OPEN_FAULT.take() {
            return Err(EntryFault::Unreadable(io::Error::from_raw_os_error(errno)));
        }
        let mut file = match open_no_follow(&self.place_path(key, place)) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(EntryFault::Unreadable(e)),
        };
        let meta = file.metadata().map_err(EntryFault::Unreadable)?;
        trust::check_file(&meta).map_err(EntryFault::Untrusted)?;
        if meta.len() > MAX_ENTRY_BYTES {
            return Err(EntryFault::TooLarge(meta.len()));
        }
        let mut bytes = Vec::with_capacity(meta.len() as usize);
        file.read_to_end(&mut bytes)
            .map_err(EntryFault::Unreadable)?;
        Ok(Some((bytes, file)))
    }

    /// Removes an entry a lookup found corrupt. In its subdirectory this
    /// is a change to the store's total, made under the store's lock after
    /// a second read (a writer may have replaced the file since); without
    /// the lock the entry stays for the rewrite to replace.
    fn remove_corrupt(&self, key: &ModuleKey, place: Place) {
        let path = self.place_path(key, place);
        if place == Place::Flat {
            // Not in the total.
            let _ = std::fs::remove_file(&path);
            return;
        }
        let Ok(Some(mut lock)) = self.lock_usage() else {
            return;
        };
        if self.recount_if_suspect(&mut lock).is_err() {
            return;
        }
        let still_corrupt = matches!(self.read_entry(key, place), Err(f) if f.is_corrupt());
        if !still_corrupt {
            return;
        }
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            return;
        };
        if lock.begin_change().is_ok() && std::fs::remove_file(&path).is_ok() {
            lock.removed(layout::counted_bytes(&meta));
        }
    }

    /// Counts one disk error, here and in the store's lifetime counters.
    fn count_error(&self) {
        self.counts.errors.incr();
        self.persist(Tally {
            errors: 1,
            ..Tally::default()
        });
    }

    /// Counts and reports an entry that could not be used for a reason that
    /// may pass (no memory, no file descriptors, a full or `noexec`
    /// temporary directory, a faulted device, a file not trusted): the
    /// entry is kept, and the compile that follows rewrites it.
    fn keep_unusable(&self, key: &ModuleKey, why: &str) {
        self.count_error();
        tracing::warn!(
            "kernelkit artifact store: cannot use entry {key} in {} ({why}); compiling it again",
            self.dir.display()
        );
    }

    /// Records a module loaded from the store.
    pub(crate) fn record_hit(&self) {
        self.counts.hits.incr();
        self.persist(Tally {
            hits: 1,
            ..Tally::default()
        });
    }

    /// Records that a compile is needed because the store had nothing usable.
    pub(crate) fn record_miss(&self) {
        self.counts.misses.incr();
        self.persist(Tally {
            misses: 1,
            ..Tally::default()
        });
    }

    /// Records an entry that passed its checks but did not load. Nothing
    /// proves the entry bad (the load may fail for want of memory or of a
    /// usable temporary directory), so it is kept.
    pub(crate) fn record_bad_load(&self, key: &ModuleKey, error: &CompileError) {
        self.keep_unusable(key, &format!("it did not load: {error}"));
    }

    /// Waits (bounded) until no other process compiles `key`, and holds it
    /// for this one. `None` when the wait timed out or the lock file could
    /// not be made: the caller then compiles without it.
    pub(crate) fn lock(&self, key: &ModuleKey) -> Option<KeyLock> {
        let acquired = layout::create_subdir(&self.dir, key)
            .and_then(|_| KeyLock::acquire(layout::lock_path(&self.dir, key), self.lock_timeout));
        match acquired {
            Ok(Some(lock)) => Some(lock),
            Ok(None) => {
                tracing::info!(
                    "kernelkit artifact store: another process has been compiling {key} for {:.0} s; compiling it here too",
                    self.lock_timeout.as_secs_f64()
                );
                None
            }
            Err(e) => {
                tracing::debug!("kernelkit artifact store: no lock for {key}: {e}");
                None
            }
        }
    }

    /// Adds this store object's counters to a device's statistics.
    pub(crate) fn add_stats(&self, stats: &mut CacheStats) {
        stats.disk_hits += self.counts.hits.get();
        stats.disk_misses += self.counts.misses.get();
        stats.disk_writes += self.counts.writes.get();
        stats.disk_errors += self.counts.errors.get();
    }

    fn io(&self, operation: &'static str, source: io::Error) -> StoreError {
        StoreError::Io {
            dir: self.dir.clone(),
            operation,
            source,
        }
    }
}

/// `bytes` parsed as an entry (checksum and lengths) stored under `key`.
fn parse_for<'a>(key: &ModuleKey, bytes: &'a [u8]) -> Result<entry::Entry<'a>, EntryFault> {
    let parsed = entry::parse(bytes).map_err(EntryFault::Malformed)?;
    if parsed.header.key != *key {
        return Err(EntryFault::Malformed(EntryError::WrongKey {
            found: parsed.header.key,
            expected: *key,
        }));
    }
    Ok(parsed)
}

/// The store's lock stayed held (by a process stopped, or a long recount).
fn busy() -> io::Error {
    io::Error::new(
        io::ErrorKind::TimedOut,
        format!(
            "the store's lock stayed held for {} s",
            USAGE_LOCK_TIMEOUT.as_secs()
        ),
    )
}

/// Reports once per process that the disk tier is off.
fn warn_unusable(why: &str) {
    static WARNED: AtomicBool = AtomicBool::new(false);
    if !WARNED.swap(true, Ordering::Relaxed) {
        tracing::warn!(
            "kernelkit artifact store: {why}; kernels are cached in memory only (set KERNELKIT_CACHE=memory to silence this)"
        );
    }
}

/// Creates `dir` and missing parents with mode `0700`.
fn create_private_dir(dir: &Path) -> io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)
}

/// Opens a file for reading without following a final symbolic link.
fn open_no_follow(path: &Path) -> io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32);
    }
    options.open(path)
}

/// The first [`MAX_HEADER_BYTES`] of a file (fewer if it is shorter).
fn read_prefix(path: &Path) -> io::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(MAX_HEADER_BYTES);
    open_no_follow(path)?
        .take(MAX_HEADER_BYTES as u64)
        .read_to_end(&mut out)?;
    Ok(out)
}

#[cfg(all(test, unix))]
mod tests;

impl crate::cache::tier::ArtifactTier for ArtifactStore {
    fn get(&self, key: &ModuleKey) -> crate::cache::tier::Lookup {
        // A stale or bad entry is rewritten by the compile; the store's
        // lock makes the next look after a wait cheap and right, so every
        // miss is `Missing` here.
        match self.lookup(key) {
            Lookup::Hit(found) => crate::cache::tier::Lookup::Hit(found),
            Lookup::Miss => crate::cache::tier::Lookup::Missing,
        }
    }
    fn record_hit(&self) {
        ArtifactStore::record_hit(self)
    }
    fn record_miss(&self) {
        ArtifactStore::record_miss(self)
    }
    fn record_bad_load(&self, key: &ModuleKey, error: &CompileError) {
        ArtifactStore::record_bad_load(self, key, error)
    }
    fn claim(&self, key: &ModuleKey, _seen: Option<&[u8]>) -> Claimed {
        match self.lock(key) {
            Some(lock) => Claimed::Held(Box::new(lock)),
            None => Claimed::Unclaimed,
        }
    }
    fn put(&self, key: &ModuleKey, artifact: &crate::cache::tier::Artifact<'_>) {
        // A failure is counted and reported by `write`; the device has its
        // artifact either way.
        let _ = self.write(key, artifact);
    }
    fn holds(&self, key: &ModuleKey) -> bool {
        ArtifactStore::holds(self, key)
    }
    fn shared(&self) -> bool {
        false
    }
    fn add_stats(&self, stats: &mut CacheStats) {
        ArtifactStore::add_stats(self, stats)
    }
}
