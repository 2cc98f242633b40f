//! The store's one way in, and the running total it keeps: writing an
//! entry, recounting the total from the files, evicting down to the low
//! water mark.

use super::*;

impl ArtifactStore {
    /// Publishes an artifact, then, if that took the store over its limit,
    /// evicts down to [`LOW_WATER_PERCENT`] of it. A failure is counted,
    /// reported once per store, and returned (devices ignore it: they have
    /// their artifact either way, and a later process compiles it again).
    ///
    /// This is the store's one way in: compiles (through the device's
    /// module resolver) and imported bundles ([`crate::cache::bundle`])
    /// both come through it, so the running total, eviction and file
    /// modes hold for every entry.
    pub fn write(&self, key: &ModuleKey, contents: &Contents<'_>) -> Result<(), StoreError> {
        let bytes = entry::encode(key, contents)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))
            .and_then(|bytes| match bytes.len() as u64 {
                n if n > MAX_ENTRY_BYTES => Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{n} bytes, over the {MAX_ENTRY_BYTES}-byte limit of an entry"),
                )),
                _ => Ok(bytes),
            });
        match bytes.and_then(|bytes| self.publish(key, &bytes)) {
            Ok(()) => {
                self.counts.writes.incr();
                self.persist(Tally {
                    writes: 1,
                    ..Tally::default()
                });
                Ok(())
            }
            Err(e) => {
                self.counts.errors.incr();
                self.persist(Tally {
                    errors: 1,
                    ..Tally::default()
                });
                if !self.write_warned.swap(true, Ordering::Relaxed) {
                    tracing::warn!(
                        "kernelkit artifact store: cannot write to {}: {e}; compiled kernels will not be kept for other processes",
                        self.dir.display()
                    );
                }
                Err(self.io("write an entry", e))
            }
        }
    }

    /// [`ArtifactStore::write`] for many entries at once (a bundle's
    /// import): the entries are encoded in parallel and their temporary
    /// files written one after another, then renamed
    /// into place under one hold of the store's lock (one change of the
    /// running total, one eviction), and the whole batch is made durable
    /// at the end, once. The same files, modes and total as one write per
    /// entry, without one lock, total update and sync per entry and per
    /// new subdirectory. Stops at the first entry that cannot be written
    /// (those renamed before it are whole entries); returns how many were
    /// written.
    ///
    /// Where the system has `syncfs` (Linux), the contents are not synced
    /// before their renames: one sync of the filesystem after them makes
    /// the contents, the names and the new subdirectories durable together.
    /// A crash in between can leave a published entry torn or empty, which
    /// its checksum refuses on the next read (a corrupt entry is removed
    /// and counts as a miss, as any store failure does); it never loads.
    /// Elsewhere each file is synced before its rename, and each directory
    /// touched after.
    pub fn write_batch(&self, entries: &[(ModuleKey, Contents<'_>)]) -> Result<usize, StoreError> {
        self.publish_batch(self.stage_batch(entries))
    }

    /// The first half of [`ArtifactStore::write_batch`]: the entries'
    /// temporary files, written but not published (no reader sees them).
    /// Dropping the result removes them; [`ArtifactStore::publish_batch`]
    /// renames them into place. An import stages while the bundle's
    /// signature is still being checked, and publishes once it passed.
    pub fn stage_batch(&self, entries: &[(ModuleKey, Contents<'_>)]) -> StagedBatch {
        use rayon::prelude::*;
        let started = std::time::Instant::now();
        // Encoded in parallel (each a copy and a checksum), written one
        // after another where nothing is synced per file: files and
        // directories created at once compete for the filesystem's journal
        // and the store's directory, so threads there only wait for each
        // other (`tools/fsprobe.py`).
        let encoded: Vec<io::Result<Vec<u8>>> = entries
            .par_iter()
            .map(|(key, contents)| {
                let bytes = entry::encode(key, contents)
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
                if bytes.len() as u64 > MAX_ENTRY_BYTES {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!(
                            "{} bytes, over the {MAX_ENTRY_BYTES}-byte limit of an entry",
                            bytes.len()
                        ),
                    ));
                }
                Ok(bytes)
            })
            .collect();
        let encoded_in = started.elapsed();
        let made_subdir = AtomicBool::new(false);
        // Time spent making directories, creating files and writing them
        // (summed over threads), for the debug log.
        let spent: [AtomicU64; 3] = Default::default();
        let lap = |i: usize, since: std::time::Instant| {
            spent[i].fetch_add(since.elapsed().as_nanos() as u64, Ordering::Relaxed);
            std::time::Instant::now()
        };
        let write_one = |(key, bytes): (&ModuleKey, io::Result<Vec<u8>>)| {
            let bytes = bytes?;
            let t = std::time::Instant::now();
            let (sub, created) = layout::create_subdir_unsynced(&self.dir, key)?;
            if created {
                made_subdir.store(true, Ordering::Relaxed);
            }
            let t = lap(0, t);
            let mut tmp = tempfile::Builder::new()
                .prefix(&layout::temp_prefix(key))
                .suffix(TEMP_SUFFIX)
                .tempfile_in(&sub)?; // mode 0600
            let t = lap(1, t);
            tmp.write_all(&bytes)?;
            lap(2, t);
            if !ONE_SYNC_PER_FILESYSTEM {
                tmp.as_file().sync_all()?;
            }
            // Closed now, kept by name until its rename: a batch held open
            // would grow the process's descriptor table a few times, and
            // each growth of a threaded process's table waits for an RCU
            // grace period (Linux), milliseconds each on a large machine.
            Ok((*key, bytes.len() as u64, tmp.into_temp_path()))
        };
        let keys = entries.iter().map(|(key, _)| key);
        let prepared: Vec<io::Result<(ModuleKey, u64, tempfile::TempPath)>> =
            if ONE_SYNC_PER_FILESYSTEM {
                keys.zip(encoded).map(write_one).collect()
            } else {
                // A sync per file: that wait is what threads share out.
                keys.zip(encoded)
                    .collect::<Vec<_>>()
                    .into_par_iter()
                    .map(write_one)
                    .collect()
            };
        let mut ready = Vec::with_capacity(prepared.len());
        let mut first_error = None;
        for p in prepared {
            match p {
                Ok(r) => ready.push(r),
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        StagedBatch {
            ready,
            first_error,
            made_subdir: made_subdir.into_inner(),
            started,
            encoded_in,
            file_parts: spent.map(|n| std::time::Duration::from_nanos(n.into_inner())),
            files_written: started.elapsed(),
        }
    }

    /// The second half of [`ArtifactStore::write_batch`]: `staged`'s files
    /// renamed into place under one hold of the store's lock, then made
    /// durable together. Returns how many were published; the first
    /// entry that could not be staged or published is the error.
    pub fn publish_batch(&self, staged: StagedBatch) -> Result<usize, StoreError> {
        let StagedBatch {
            ready,
            mut first_error,
            made_subdir,
            started,
            encoded_in,
            file_parts: [dirs, creates, writes],
            files_written,
        } = staged;
        let fail = |e: io::Error| {
            self.counts.errors.incr();
            self.persist(Tally {
                errors: 1,
                ..Tally::default()
            });
            self.io("write an entry", e)
        };
        let mut lock = self
            .lock_usage()
            .and_then(|l| {
                l.ok_or_else(|| {
                    io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!(
                            "the store's lock stayed held for {} s",
                            USAGE_LOCK_TIMEOUT.as_secs()
                        ),
                    )
                })
            })
            .map_err(fail)?;
        self.recount_if_suspect(&mut lock).map_err(fail)?;
        lock.begin_change().map_err(fail)?;
        let mut written = Vec::with_capacity(ready.len());
        for (key, len, tmp) in ready {
            let path = layout::entry_path(&self.dir, &key);
            let old = match std::fs::symlink_metadata(&path) {
                Ok(meta) => Some(layout::counted_bytes(&meta)),
                Err(e) if e.kind() == io::ErrorKind::NotFound => None,
                Err(e) => {
                    first_error.get_or_insert(e);
                    break;
                }
            };
            if let Err(e) = tmp.persist(&path) {
                first_error.get_or_insert(e.error);
                break;
            }
            if let Some(old) = old {
                lock.removed(old);
            }
            lock.added(len);
            written.push(key);
        }
        if let Err(e) = self.evict_from(lock, None) {
            tracing::debug!("kernelkit artifact store: eviction failed: {e}");
        }
        let renamed = started.elapsed();
        if !written.is_empty() {
            self.make_durable(&written, made_subdir);
        }
        tracing::debug!(
            "kernelkit artifact store: a batch of {} entries written in {:?} (files {:?}, of \
             which encoding {:?}, directories {:?}, creates {:?}, writes {:?}; renames {:?}, \
             sync {:?})",
            written.len(),
            started.elapsed(),
            files_written,
            encoded_in,
            dirs,
            creates,
            writes,
            renamed - files_written,
            started.elapsed() - renamed
        );
        let written = written.len();
        self.counts.writes.add(written as u64);
        self.persist(Tally {
            writes: written as u64,
            ..Tally::default()
        });
        match first_error {
            Some(e) => Err(fail(e)),
            None => Ok(written),
        }
    }

    /// Makes a batch's entries `keys` durable (best effort: a failure
    /// loses nothing a later import or compile cannot redo): one sync of
    /// the filesystem, else each entry's file (unless synced before its
    /// rename), each subdirectory touched, and the store's directory if a
    /// subdirectory was made.
    fn make_durable(&self, keys: &[ModuleKey], made_subdir: bool) {
        use rayon::prelude::*;
        if ONE_SYNC_PER_FILESYSTEM {
            match sync_filesystem(&self.dir) {
                Ok(()) => return,
                Err(e) => {
                    tracing::debug!(
                        "kernelkit artifact store: syncfs failed ({e}); syncing each file"
                    );
                    keys.par_iter().for_each(|key| {
                        if let Ok(f) = File::open(layout::entry_path(&self.dir, key)) {
                            let _ = f.sync_all();
                        }
                    });
                }
            }
        }
        let subdirs: std::collections::BTreeSet<_> = keys
            .iter()
            .map(|key| layout::subdir(&self.dir, key))
            .collect();
        subdirs
            .into_par_iter()
            .chain(made_subdir.then(|| self.dir.clone()))
            .for_each(|dir| {
                if let Ok(d) = File::open(&dir) {
                    let _ = d.sync_all();
                }
            });
    }

    /// Writes a temporary file in the entry's subdirectory and syncs it;
    /// then, holding the store's lock, renames it over the entry's path,
    /// adds it to the running total and evicts if the total is over the
    /// limit.
    fn publish(&self, key: &ModuleKey, bytes: &[u8]) -> io::Result<()> {
        let sub = layout::create_subdir(&self.dir, key)?;
        let mut tmp = tempfile::Builder::new()
            .prefix(&layout::temp_prefix(key))
            .suffix(TEMP_SUFFIX)
            .tempfile_in(&sub)?; // mode 0600
        tmp.write_all(bytes)?;
        tmp.as_file().sync_all()?;
        let mut lock = self.lock_usage()?.ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "the store's lock stayed held for {} s",
                    USAGE_LOCK_TIMEOUT.as_secs()
                ),
            )
        })?;
        self.recount_if_suspect(&mut lock)?;
        let path = layout::entry_path(&self.dir, key);
        let old = match std::fs::symlink_metadata(&path) {
            Ok(meta) => Some(layout::counted_bytes(&meta)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(e),
        };
        lock.begin_change()?;
        tmp.persist(&path).map_err(|e| e.error)?;
        if let Some(old) = old {
            lock.removed(old);
        }
        lock.added(bytes.len() as u64);
        if let Err(e) = self.evict_from(lock, Some(key)) {
            tracing::debug!("kernelkit artifact store: eviction failed: {e}");
        }
        // Make the rename itself durable; a failure here loses nothing that
        // a later compile cannot redo.
        if let Ok(d) = File::open(&sub) {
            let _ = d.sync_all();
        }
        Ok(())
    }

    /// Adds a tally to the store's lifetime counters (best effort).
    pub(super) fn persist(&self, delta: Tally) {
        if let Err(e) = tally::add(&self.dir, delta) {
            tracing::debug!("kernelkit artifact store: counters not updated: {e}");
        }
    }

    /// Takes the store's lock (`Ok(None)`: it stayed held too long).
    pub(super) fn lock_usage(&self) -> io::Result<Option<UsageLock>> {
        UsageLock::acquire(&self.dir, USAGE_LOCK_TIMEOUT)
    }

    /// Recounts under `lock` if the total it found cannot be trusted.
    pub(super) fn recount_if_suspect(&self, lock: &mut UsageLock) -> io::Result<()> {
        if let Some(why) = lock.suspect() {
            tracing::debug!(
                "kernelkit artifact store: counting the entries of {} ({why})",
                self.dir.display()
            );
            self.recount_locked(lock)?;
        }
        Ok(())
    }

    /// Counts the store's entries from its files and makes that the
    /// running total; on the way, moves flat entries (of kernelkit before
    /// the fan-out) into their subdirectories and removes temporary files
    /// left by crashed writers. Its cost grows with the store: it runs when
    /// the total looks wrong, or when asked ([`ArtifactStore::recount`]).
    fn recount_locked(&self, lock: &mut UsageLock) -> io::Result<()> {
        lock.begin_change()?;
        let listing = layout::scan(&self.dir)?;
        let now = SystemTime::now();
        for t in listing
            .temps
            .iter()
            .filter(|t| layout::is_stale(t.modified, now))
        {
            let _ = std::fs::remove_file(&t.path);
        }
        let mut usage = Usage::default();
        for e in &listing.entries {
            if e.flat {
                let path = layout::entry_path(&self.dir, &e.key);
                if std::fs::symlink_metadata(&path).is_ok() {
                    // The fan-out holds this key already: the flat copy is
                    // the older one.
                    let _ = std::fs::remove_file(&e.path);
                    continue;
                }
                layout::create_subdir(&self.dir, &e.key)?;
                match std::fs::rename(&e.path, &path) {
                    Ok(()) => {}
                    Err(err) if err.kind() == io::ErrorKind::NotFound => continue,
                    Err(err) => return Err(err),
                }
            }
            usage.entries += 1;
            usage.bytes += e.bytes;
        }
        lock.set(usage);
        Ok(())
    }

    /// Counts the store's entries from its files and makes that the
    /// running total (`kernelkit cache stats --recount`), moving the
    /// entries of a flat store into subdirectories on the way. Needed only
    /// when files were added or removed behind the store's back (a total
    /// that looks wrong is recounted without being asked).
    pub fn recount(&self) -> Result<StoreStats, StoreError> {
        let mut lock = self
            .lock_usage()
            .map_err(|source| self.io("take the store's lock", source))?
            .ok_or_else(|| self.io("take the store's lock", busy()))?;
        self.recount_locked(&mut lock)
            .map_err(|source| self.io("count the entries", source))?;
        let usage = lock.usage();
        drop(lock);
        Ok(self.stats_of(usage, true))
    }

    /// Removes least recently used entries (approximately: see
    /// `store/evict.rs`) until the store is under [`LOW_WATER_PERCENT`] of
    /// its limit, if it is over the limit. Returns the number of entries
    /// removed. Writes call it; it is public for tools.
    pub fn evict(&self) -> io::Result<usize> {
        let mut lock = self.lock_usage()?.ok_or_else(busy)?;
        self.recount_if_suspect(&mut lock)?;
        self.evict_from(lock, None)
    }

    /// Evicts under `lock` (released on return), never `keep`.
    fn evict_from(&self, mut lock: UsageLock, keep: Option<&ModuleKey>) -> io::Result<usize> {
        if lock.usage().bytes <= self.max_bytes {
            return Ok(0);
        }
        let target = low_water(self.max_bytes);
        let mut evictor = Evictor::new(&self.dir, keep.copied());
        let mut removed = 0;
        let mut recounted = false;
        loop {
            let step = evictor.run(&mut lock, target, EVICT_STEP)?;
            removed += step.removed;
            let usage = lock.usage();
            if usage.bytes <= target {
                return Ok(removed);
            }
            if step.exhausted {
                // Nothing left to remove. Either only `keep` is left, or
                // the total counts entries that are gone: count them, once.
                if recounted || usage.bytes <= self.max_bytes || usage.entries <= 1 {
                    return Ok(removed);
                }
                self.recount_locked(&mut lock)?;
                recounted = true;
                evictor = Evictor::new(&self.dir, keep.copied());
                continue;
            }
            if usage.bytes <= self.max_bytes {
                // Back under the limit: let the other processes in between
                // steps on the way down to the low-water mark.
                drop(lock);
                lock = self.lock_usage()?.ok_or_else(busy)?;
                self.recount_if_suspect(&mut lock)?;
            }
        }
    }
}

/// A batch's temporary files, written and not yet published
/// ([`ArtifactStore::stage_batch`]); dropped, they are removed.
pub struct StagedBatch {
    ready: Vec<(ModuleKey, u64, tempfile::TempPath)>,
    /// The first entry that could not be staged.
    first_error: Option<io::Error>,
    made_subdir: bool,
    started: std::time::Instant,
    /// How long the entries took to encode, of `files_written`.
    encoded_in: std::time::Duration,
    /// Of `files_written`: making subdirectories, creating the temporary
    /// files, writing them (summed over threads where they ran at once).
    file_parts: [std::time::Duration; 3],
    files_written: std::time::Duration,
}

impl StagedBatch {
    /// How many entries were staged.
    pub fn len(&self) -> usize {
        self.ready.len()
    }

    /// Whether none was.
    pub fn is_empty(&self) -> bool {
        self.ready.is_empty()
    }
}

/// Whether a batch makes its files durable with one `syncfs` of the
/// store's filesystem (Linux) rather than one `fsync` per file and per
/// directory.
const ONE_SYNC_PER_FILESYSTEM: bool = cfg!(target_os = "linux");

/// Flushes the filesystem holding `dir` (`syncfs`): every file and
/// directory entry written to it so far is durable when it returns.
#[cfg(target_os = "linux")]
fn sync_filesystem(dir: &std::path::Path) -> io::Result<()> {
    let d = File::open(dir)?;
    rustix::fs::syncfs(&d).map_err(io::Error::from)
}

#[cfg(not(target_os = "linux"))]
fn sync_filesystem(_dir: &std::path::Path) -> io::Result<()> {
    Err(io::Error::new(io::ErrorKind::Unsupported, "no syncfs here"))
}
