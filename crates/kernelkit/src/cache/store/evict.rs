//! Eviction by sampled least-recent use, after Redis's approximated LRU:
//! no pass sorts (or even lists) the whole store.
//!
//! "Last use" is an entry file's modification time: set when it is
//! written and again on each hit (entries are never modified in place, so
//! it means nothing else). Each round draws [`SAMPLES`] entries at random
//! (a random subdirectory, then a random name in it; a subdirectory is
//! listed once per eviction and its names drawn without replacement),
//! reads their last use, and adds them to a pool of candidates kept in
//! order of last use; then the [`PER_ROUND`] least recently used of the
//! pool are removed, each after a fresh look at the file: one used since it
//! was sampled goes back into the pool with its new time instead. The pool
//! keeps the [`POOL`] oldest candidates across rounds; the younger ones go
//! back to be drawn again. A store smaller than a sample is seen whole, so
//! eviction there is exact least-recent use.
//!
//! An entry just read is among the most recently used, so it would have to
//! be older than nearly every entry of a sample of at least [`SAMPLES`] to
//! be removed: hot entries survive. A process that has an entry open keeps
//! reading it even if it is removed (the file lives until it is closed),
//! and a lookup reads the whole entry before it returns.

use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::layout;
use super::usage::UsageLock;
use crate::cache::key::ModuleKey;

/// Entries drawn per round.
const SAMPLES: usize = 32;
/// Candidates removed per round (at most).
const PER_ROUND: usize = 4;
/// Candidates kept across rounds.
const POOL: usize = 64;

/// One sampled entry.
#[derive(Debug)]
struct Candidate {
    key: ModuleKey,
    path: PathBuf,
    bytes: u64,
    modified: SystemTime,
    /// The file's identity when sampled: a file replaced since is looked at
    /// again rather than removed on old information.
    inode: (u64, u64),
    /// Whether it went back into the pool once already (used or replaced
    /// after it was sampled); one that changed again is in use, and stays.
    second_look: bool,
}

/// What one [`Evictor::run`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Step {
    /// Entries removed.
    pub(crate) removed: usize,
    /// Every entry has been drawn (and none is left in the pool): nothing
    /// more can be removed in this eviction.
    pub(crate) exhausted: bool,
}

/// One eviction's state: the subdirectories listed so far and the pool. It
/// may span several holds of the store's lock; what changed in between is
/// seen when a candidate is looked at again before its removal.
pub(crate) struct Evictor<'a> {
    dir: &'a Path,
    keep: Option<ModuleKey>,
    /// Per prefix: the names not drawn yet, once listed.
    listings: Vec<Option<Vec<ModuleKey>>>,
    /// Prefixes that may still have names to draw.
    open: Vec<u8>,
    pool: Vec<Candidate>,
    rng: Rng,
    now: SystemTime,
}

impl<'a> Evictor<'a> {
    /// An eviction of the store in `dir` that never removes `keep`.
    pub(crate) fn new(dir: &'a Path, keep: Option<ModuleKey>) -> Evictor<'a> {
        Evictor {
            dir,
            keep,
            listings: (0..256).map(|_| None).collect(),
            open: (0..=255).collect(),
            pool: Vec::new(),
            rng: Rng::seeded(),
            now: SystemTime::now(),
        }
    }

    /// Removes entries, least recently used first as far as the samples
    /// tell, until the total of `lock` is at most `target` bytes or
    /// `budget` entries were removed.
    pub(crate) fn run(
        &mut self,
        lock: &mut UsageLock,
        target: u64,
        budget: usize,
    ) -> io::Result<Step> {
        let mut step = Step::default();
        while lock.usage().bytes > target && step.removed < budget {
            self.sample()?;
            if self.pool.is_empty() {
                step.exhausted = true;
                break;
            }
            for _ in 0..PER_ROUND {
                if lock.usage().bytes <= target || step.removed >= budget || self.pool.is_empty() {
                    break;
                }
                let oldest = self.pool.remove(0);
                if self.remove(lock, oldest)? {
                    step.removed += 1;
                }
            }
        }
        Ok(step)
    }

    /// Draws up to [`SAMPLES`] entries into the pool, and sends the pool's
    /// youngest beyond [`POOL`] back to be drawn again.
    fn sample(&mut self) -> io::Result<()> {
        let mut drawn = 0;
        while drawn < SAMPLES && !self.open.is_empty() {
            let slot = self.rng.below(self.open.len());
            let prefix = self.open[slot];
            let names = match &mut self.listings[prefix as usize] {
                Some(names) => names,
                listing @ None => listing.insert(layout::subdir_keys(
                    &layout::subdir_of_prefix(self.dir, prefix),
                    self.now,
                )?),
            };
            if names.is_empty() {
                self.open.swap_remove(slot);
                continue;
            }
            let key = names.swap_remove(self.rng.below(names.len()));
            if Some(key) == self.keep {
                continue;
            }
            if let Some(c) = candidate(self.dir, key)? {
                self.pool.push(c);
                drawn += 1;
            }
        }
        self.pool.sort_by_key(|c| c.modified);
        for young in self.pool.drain(POOL.min(self.pool.len())..) {
            let prefix = young.key.as_bytes()[0];
            if let Some(names) = &mut self.listings[prefix as usize] {
                names.push(young.key);
                if !self.open.contains(&prefix) {
                    self.open.push(prefix);
                }
            }
        }
        Ok(())
    }

    /// Removes `c` if it is as it was when sampled; true if it was removed.
    /// One used or replaced since goes back into the pool as it is now.
    fn remove(&mut self, lock: &mut UsageLock, c: Candidate) -> io::Result<bool> {
        match candidate(self.dir, c.key)? {
            // Removed since it was sampled: by another process's eviction
            // while this one let go of the lock between steps (which took
            // it off the total), or behind the store's back (which the
            // recount of an eviction that runs out of entries catches).
            None => Ok(false),
            Some(mut now) if now.modified != c.modified || now.inode != c.inode => {
                if !c.second_look {
                    now.second_look = true;
                    let at = self.pool.partition_point(|p| p.modified <= now.modified);
                    self.pool.insert(at, now);
                }
                Ok(false)
            }
            Some(_) => {
                lock.begin_change()?;
                match std::fs::remove_file(&c.path) {
                    Ok(()) => {
                        lock.removed(c.bytes);
                        Ok(true)
                    }
                    Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
                    Err(e) => Err(e),
                }
            }
        }
    }
}

/// The entry of `key` in its subdirectory as it is now; `None` when there
/// is none.
fn candidate(dir: &Path, key: ModuleKey) -> io::Result<Option<Candidate>> {
    let path = layout::entry_path(dir, &key);
    let meta = match std::fs::symlink_metadata(&path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    Ok(Some(Candidate {
        key,
        bytes: layout::counted_bytes(&meta),
        modified: meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
        inode: inode(&meta),
        path,
        second_look: false,
    }))
}

#[cfg(unix)]
fn inode(meta: &std::fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (meta.dev(), meta.ino())
}

#[cfg(not(unix))]
fn inode(_meta: &std::fs::Metadata) -> (u64, u64) {
    (0, 0)
}

/// xorshift64*: enough to draw samples, seeded differently in every
/// process and eviction.
struct Rng(u64);

impl Rng {
    fn seeded() -> Rng {
        let nanos = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let seed = nanos ^ (u64::from(std::process::id()) << 32) ^ 0x9e37_79b9_7f4a_7c15;
        Rng(seed.max(1))
    }

    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number in `0..n` (`n > 0`).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}
