//! The store seen whole, for administration (`kernelkit cache ...`):
//! its size, its entries, a check of each, and clearing it.

use super::*;

impl ArtifactStore {
    /// Size, entry count and lifetime counters: the running total, read
    /// without listing the store, or, when the store has none that can be
    /// trusted (a store of kernelkit before the fan-out, a process that
    /// died while it changed the store), counted from the files (nothing is
    /// written: [`ArtifactStore::recount`] stores a count).
    pub fn stats(&self) -> Result<StoreStats, StoreError> {
        let recorded = usage::read_shared(&self.dir, Duration::from_secs(1))
            .map_err(|source| self.io("read the running total", source))?;
        match recorded {
            Recorded::Clean(usage) => Ok(self.stats_of(usage, false)),
            Recorded::Suspect(_) => {
                let listing = layout::scan(&self.dir)
                    .map_err(|source| self.io("list the directory", source))?;
                let usage = Usage {
                    entries: listing.entries.len() as u64,
                    bytes: listing.entries.iter().map(|e| e.bytes).sum(),
                };
                Ok(self.stats_of(usage, true))
            }
        }
    }

    pub(super) fn stats_of(&self, usage: Usage, counted: bool) -> StoreStats {
        StoreStats {
            dir: self.dir.clone(),
            entries: usage.entries,
            bytes: usage.bytes,
            counted,
            max_bytes: self.max_bytes,
            lifetime: tally::read(&self.dir),
        }
    }

    /// Every entry with what its header says, most recently used first.
    pub fn list(&self) -> Result<Vec<EntryInfo>, StoreError> {
        let listing =
            layout::scan(&self.dir).map_err(|source| self.io("list the directory", source))?;
        let mut out: Vec<EntryInfo> = listing
            .entries
            .into_iter()
            .map(|f| {
                let header = read_prefix(&f.path)
                    .map_err(EntryFault::Unreadable)
                    .and_then(|prefix| entry::parse_header(&prefix).map_err(EntryFault::Malformed));
                EntryInfo {
                    key: f.key,
                    path: f.path,
                    bytes: f.bytes,
                    last_use: f.modified,
                    header,
                }
            })
            .collect();
        out.sort_by_key(|e| std::cmp::Reverse(e.last_use));
        Ok(out)
    }

    /// Checks every entry as a lookup would (trust, checksum, key), without
    /// changing anything.
    pub fn verify(&self) -> Result<VerifyReport, StoreError> {
        let listing =
            layout::scan(&self.dir).map_err(|source| self.io("list the directory", source))?;
        let mut report = VerifyReport::default();
        for f in listing.entries {
            let place = if f.flat { Place::Flat } else { Place::Fanout };
            match self.read_entry(&f.key, place) {
                Ok(Some(_)) => report.good += 1,
                // Removed since the scan: nothing to verify.
                Ok(None) => {}
                Err(EntryFault::Malformed(EntryError::Version { .. })) => report.other_format += 1,
                Err(fault) => report.bad.push(BadEntry {
                    key: f.key,
                    path: f.path,
                    fault,
                }),
            }
        }
        Ok(report)
    }

    /// Removes every entry, lock file, temporary file, the lifetime
    /// counters and the subdirectories left empty, and sets the running
    /// total to zero; files the store did not make are left alone.
    pub fn clear(&self) -> Result<ClearReport, StoreError> {
        let mut lock = self
            .lock_usage()
            .map_err(|source| self.io("take the store's lock", source))?
            .ok_or_else(|| self.io("take the store's lock", busy()))?;
        let listing =
            layout::scan(&self.dir).map_err(|source| self.io("list the directory", source))?;
        lock.begin_change()
            .map_err(|source| self.io("write the running total", source))?;
        // From here the total is zero plus what is left if a removal fails.
        lock.set(Usage {
            entries: listing.entries.iter().filter(|e| !e.flat).count() as u64,
            bytes: listing
                .entries
                .iter()
                .filter(|e| !e.flat)
                .map(|e| e.bytes)
                .sum(),
        });
        let mut report = ClearReport::default();
        for e in &listing.entries {
            match std::fs::remove_file(&e.path) {
                Ok(()) => {
                    report.entries += 1;
                    report.bytes += e.bytes;
                }
                Err(err) if err.kind() == io::ErrorKind::NotFound => {}
                Err(source) => return Err(self.io("remove an entry", source)),
            }
            if !e.flat {
                lock.removed(e.bytes);
            }
        }
        let others = listing
            .locks
            .iter()
            .chain(listing.temps.iter().map(|t| &t.path));
        for path in others.chain([&self.dir.join(tally::FILE_NAME)]) {
            match std::fs::remove_file(path) {
                Ok(()) => {}
                Err(err) if err.kind() == io::ErrorKind::NotFound => {}
                Err(source) => return Err(self.io("remove a file", source)),
            }
        }
        for sub in &listing.subdirs {
            // Fails, harmlessly, on one that holds something else.
            let _ = std::fs::remove_dir(sub);
        }
        Ok(report)
    }
}
