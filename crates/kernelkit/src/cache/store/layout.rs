//! Where the store keeps its files, and how they are found again.
//!
//! Layout 2 (fan-out): each entry lives in a subdirectory named by the
//! first two hex digits of its key, as git keeps its objects, so that no
//! directory holds more than about 1/256 of the store and a write or a
//! lookup never touches a directory of the whole store's size:
//!
//! ```text
//! <dir>/usage                         the running total (`store/usage.rs`)
//! <dir>/counters                      the lifetime counters (`cache/tally.rs`)
//! <dir>/3f/3fa9…c2.kka                an entry (its full key in its name)
//! <dir>/3f/3fa9…c2.lock               a compile in progress (`cache/lock.rs`)
//! <dir>/3f/.3fa9…c2.Xq7bT1.tmp        an entry being written
//! ```
//!
//! Layout 1 (the store's first layout) kept entries, locks and temporary
//! files in `<dir>` itself. Such *flat* entries are still read where they
//! are; the first write to the store (or `kernelkit cache stats
//! --recount`) moves them into their subdirectories (see `recount` in
//! `store.rs`). Names are built from hex keys only, and a file whose name
//! is not one of these is never touched.

use std::fs::Metadata;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::cache::key::ModuleKey;

/// Extension of entry files.
pub(crate) const ENTRY_EXT: &str = "kka";
/// Extension of per-key lock files.
pub(crate) const LOCK_EXT: &str = "lock";
/// Suffix of temporary files being written.
pub(crate) const TEMP_SUFFIX: &str = ".tmp";
/// Temporary files older than this were left by a crashed writer.
pub(crate) const STALE_TEMP_AGE: Duration = Duration::from_secs(3600);

/// The subdirectory of `key`: its first two hex digits.
pub(crate) fn subdir(dir: &Path, key: &ModuleKey) -> PathBuf {
    dir.join(subdir_name(key))
}

fn subdir_name(key: &ModuleKey) -> String {
    format!("{:02x}", key.as_bytes()[0])
}

/// The subdirectory of the keys whose first byte is `prefix`.
pub(crate) fn subdir_of_prefix(dir: &Path, prefix: u8) -> PathBuf {
    dir.join(format!("{prefix:02x}"))
}

/// The file of `key`'s entry.
pub(crate) fn entry_path(dir: &Path, key: &ModuleKey) -> PathBuf {
    subdir(dir, key).join(format!("{key}.{ENTRY_EXT}"))
}

/// Where layout 1 kept `key`'s entry.
pub(crate) fn flat_entry_path(dir: &Path, key: &ModuleKey) -> PathBuf {
    dir.join(format!("{key}.{ENTRY_EXT}"))
}

/// The lock file of a compile of `key`.
pub(crate) fn lock_path(dir: &Path, key: &ModuleKey) -> PathBuf {
    subdir(dir, key).join(format!("{key}.{LOCK_EXT}"))
}

/// The start of the names of `key`'s temporary files.
pub(crate) fn temp_prefix(key: &ModuleKey) -> String {
    format!(".{key}.")
}

/// Creates `key`'s subdirectory (mode `0700`) unless it is there, and
/// makes a new one durable (a sync of `dir`).
pub(crate) fn create_subdir(dir: &Path, key: &ModuleKey) -> io::Result<PathBuf> {
    let (sub, created) = create_subdir_unsynced(dir, key)?;
    if created {
        // Losing the new directory loses nothing a compile cannot redo.
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
    }
    Ok(sub)
}

/// [`create_subdir`] without the sync, for a caller that makes many
/// entries durable at once (a batch write): the subdirectory, and whether
/// it was made now.
pub(crate) fn create_subdir_unsynced(dir: &Path, key: &ModuleKey) -> io::Result<(PathBuf, bool)> {
    let sub = subdir(dir, key);
    let mut builder = std::fs::DirBuilder::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    match builder.create(&sub) {
        Ok(()) => Ok((sub, true)),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok((sub, false)),
        Err(e) => Err(e),
    }
}

/// What a file name in the store stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Name {
    /// `<key>.kka`.
    Entry(ModuleKey),
    /// `<key>.lock`.
    Lock,
    /// `.<anything>.tmp`.
    Temp,
}

/// The kind of a file name, or `None` for a name the store did not make.
pub(crate) fn classify(name: &str) -> Option<Name> {
    if let Some(stem) = name.strip_suffix(&format!(".{ENTRY_EXT}")) {
        return ModuleKey::from_hex(stem).map(Name::Entry);
    }
    if let Some(stem) = name.strip_suffix(&format!(".{LOCK_EXT}")) {
        return ModuleKey::from_hex(stem).map(|_| Name::Lock);
    }
    (name.starts_with('.') && name.ends_with(TEMP_SUFFIX)).then_some(Name::Temp)
}

/// The prefix a subdirectory name stands for (`"3f"` → `0x3f`): exactly
/// two lowercase hex digits.
pub(crate) fn parse_subdir_name(name: &str) -> Option<u8> {
    let b = name.as_bytes();
    let hex = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    match b {
        [hi, lo] => Some(hex(*hi)? << 4 | hex(*lo)?),
        _ => None,
    }
}

/// The bytes an entry file counts for in the store's total: its length if
/// it is a regular file (a link or anything else named like an entry is
/// never used, and counts nothing).
pub(crate) fn counted_bytes(meta: &Metadata) -> u64 {
    if meta.is_file() {
        meta.len()
    } else {
        0
    }
}

/// One entry file found by a [`scan`].
#[derive(Debug)]
pub(crate) struct EntryFile {
    pub(crate) key: ModuleKey,
    pub(crate) path: PathBuf,
    /// What it counts for ([`counted_bytes`]).
    pub(crate) bytes: u64,
    pub(crate) modified: SystemTime,
    /// Kept in layout 1's place, the store directory itself.
    pub(crate) flat: bool,
}

/// A temporary file found by a [`scan`].
#[derive(Debug)]
pub(crate) struct TempFile {
    pub(crate) path: PathBuf,
    pub(crate) modified: SystemTime,
}

/// Every file the store made, by kind.
#[derive(Debug, Default)]
pub(crate) struct Listing {
    pub(crate) entries: Vec<EntryFile>,
    pub(crate) locks: Vec<PathBuf>,
    pub(crate) temps: Vec<TempFile>,
    /// The fan-out subdirectories.
    pub(crate) subdirs: Vec<PathBuf>,
}

/// Lists the whole store: the store directory (flat entries of layout 1)
/// and every subdirectory. Its cost grows with the store: it serves the
/// commands that look at every entry (`list`, `verify`, `clear`) and the
/// recount, never a write or a lookup.
pub(crate) fn scan(dir: &Path) -> io::Result<Listing> {
    let mut listing = Listing::default();
    scan_one(dir, true, &mut listing)?;
    let mut subdirs = std::mem::take(&mut listing.subdirs);
    subdirs.sort();
    for sub in &subdirs {
        match scan_one(sub, false, &mut listing) {
            Ok(()) => {}
            // Removed meanwhile (`clear` removes empty subdirectories).
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    listing.subdirs = subdirs;
    Ok(listing)
}

fn scan_one(dir: &Path, top: bool, listing: &mut Listing) -> io::Result<()> {
    for dirent in std::fs::read_dir(dir)? {
        let dirent = dirent?;
        let name = dirent.file_name();
        let Some(name) = name.to_str() else { continue };
        // Not followed: a link is never an entry's size or age, nor a
        // subdirectory of the store.
        let Ok(meta) = dirent.metadata() else {
            continue; // removed meanwhile
        };
        if top && meta.is_dir() {
            if parse_subdir_name(name).is_some() {
                listing.subdirs.push(dirent.path());
            }
            continue;
        }
        let modified = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
        match classify(name) {
            Some(Name::Entry(key)) => listing.entries.push(EntryFile {
                key,
                path: dirent.path(),
                bytes: counted_bytes(&meta),
                modified,
                flat: top,
            }),
            Some(Name::Lock) => listing.locks.push(dirent.path()),
            Some(Name::Temp) => listing.temps.push(TempFile {
                path: dirent.path(),
                modified,
            }),
            None => {}
        }
    }
    Ok(())
}

/// The keys of the entries in one subdirectory (unordered), for sampling;
/// temporary files older than [`STALE_TEMP_AGE`] found on the way are
/// removed (a crashed writer's). A missing subdirectory is empty.
pub(crate) fn subdir_keys(sub: &Path, now: SystemTime) -> io::Result<Vec<ModuleKey>> {
    let dirents = match std::fs::read_dir(sub) {
        Ok(d) => d,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut keys = Vec::new();
    for dirent in dirents {
        let dirent = dirent?;
        let name = dirent.file_name();
        match name.to_str().and_then(classify) {
            Some(Name::Entry(key)) => keys.push(key),
            Some(Name::Temp) => remove_if_stale(&dirent.path(), now),
            _ => {}
        }
    }
    Ok(keys)
}

/// Removes a temporary file last written more than [`STALE_TEMP_AGE`]
/// before `now` (best effort: a writer may still be filling a young one).
pub(crate) fn remove_if_stale(path: &Path, now: SystemTime) {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return;
    };
    if is_stale(meta.modified().unwrap_or(SystemTime::UNIX_EPOCH), now) {
        let _ = std::fs::remove_file(path);
    }
}

/// Whether a temporary file last written at `modified` was left by a
/// crashed writer.
pub(crate) fn is_stale(modified: SystemTime, now: SystemTime) -> bool {
    now.duration_since(modified).unwrap_or_default() > STALE_TEMP_AGE
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_strangers_are_ignored() {
        let key = ModuleKey::derive("cpu", "c", "f", "s");
        let dir = Path::new("/store");
        let entry = entry_path(dir, &key);
        let hex = key.to_string();
        assert_eq!(
            entry,
            dir.join(&hex[..2]).join(format!("{hex}.kka")),
            "entries fan out by their first two hex digits"
        );
        let name = entry.file_name().unwrap().to_str().unwrap();
        assert_eq!(classify(name), Some(Name::Entry(key)));
        let lock = lock_path(dir, &key);
        assert_eq!(lock.parent(), entry.parent());
        assert_eq!(
            classify(lock.file_name().unwrap().to_str().unwrap()),
            Some(Name::Lock)
        );
        assert_eq!(
            classify(&format!("{}abc{TEMP_SUFFIX}", temp_prefix(&key))),
            Some(Name::Temp)
        );
        for stranger in ["notes.txt", "counters", "usage", "ABC.kka", "x.lock"] {
            assert_eq!(classify(stranger), None, "{stranger}");
        }
        assert_eq!(parse_subdir_name(&hex[..2]), Some(key.as_bytes()[0]));
        for bad in ["3F", "3", "3fa", "g0", ".."] {
            assert_eq!(parse_subdir_name(bad), None, "{bad}");
        }
        assert_eq!(subdir_of_prefix(dir, key.as_bytes()[0]), subdir(dir, &key));
    }
}
