//! The running total: how many entries the store's subdirectories hold and
//! how many bytes, kept in the file `usage`, so that a write knows whether
//! the store is over its limit without listing it, and `kernelkit cache
//! stats` answers without listing it either.
//!
//! **The file is the store's lock.** Every change to the set of entries
//! (publishing one, evicting, removing a corrupt one, clearing, recounting)
//! is made by a process that holds an exclusive OS lock (`flock`) on this
//! file ([`UsageLock`]), and changes the total in the same hold; readers of
//! the total take the lock shared ([`read_shared`]). The holds are short:
//! a rename or a few unlinks (the slow part of a write, filling and syncing
//! its temporary file, is done before). So the total is exact as long as
//! every process keeps to the lock.
//!
//! **A total that looks wrong is recounted** from the files (see
//! `ArtifactStore::recount`): when the file is missing (a new store, or one
//! of layout 1, whose entries the recount moves into subdirectories), is of
//! another layout, or fails its checksum; and when it is marked *dirty*: a
//! holder marks the file before it changes a file of the store and clears
//! the mark with the new total when it lets go, so a holder that died in
//! between (killed, crashed) leaves the mark for the next one. Eviction
//! also recounts when it finds nothing left to remove while the total says
//! the store is over its limit (entries deleted behind the store's back).
//!
//! Format, 40 bytes: magic `KKUSAGE\0`, layout version (`u32` LE), flags
//! (`u32` LE, bit 0: dirty), entries (`u64` LE), bytes (`u64` LE), and the
//! xxh3-64 of the 32 bytes before it (`u64` LE).

use std::fs::File;
use std::io;
use std::path::Path;
use std::time::Duration;

use xxhash_rust::xxh3::xxh3_64;

use crate::cache::lock::{lock_within, Mode, Pauses};

/// The file's name in the store directory.
pub(crate) const FILE_NAME: &str = "usage";
/// The layout this kernelkit writes (see `store/layout.rs`); layout 1 had
/// no usage file.
pub(crate) const LAYOUT: u32 = 2;

const MAGIC: [u8; 8] = *b"KKUSAGE\0";
const LEN: usize = 40;
const DIRTY: u32 = 1;
/// Waits between tries for the lock: holds last microseconds.
const PAUSES: Pauses = Pauses {
    first: Duration::from_micros(50),
    most: Duration::from_millis(2),
};

/// Entries and bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Usage {
    /// Entry files in the store's subdirectories.
    pub(crate) entries: u64,
    /// Their total size ([`super::layout::counted_bytes`]).
    pub(crate) bytes: u64,
}

/// What the file says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Recorded {
    /// A total that can be used.
    Clean(Usage),
    /// Why the files must be counted instead.
    Suspect(&'static str),
}

fn encode(usage: Usage, dirty: bool) -> [u8; LEN] {
    let mut out = [0u8; LEN];
    out[..8].copy_from_slice(&MAGIC);
    out[8..12].copy_from_slice(&LAYOUT.to_le_bytes());
    out[12..16].copy_from_slice(&(if dirty { DIRTY } else { 0 }).to_le_bytes());
    out[16..24].copy_from_slice(&usage.entries.to_le_bytes());
    out[24..32].copy_from_slice(&usage.bytes.to_le_bytes());
    let sum = xxh3_64(&out[..32]);
    out[32..].copy_from_slice(&sum.to_le_bytes());
    out
}

fn decode(bytes: &[u8]) -> Recorded {
    let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
    let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
    if bytes.is_empty() {
        // Created by a holder that died before it wrote anything.
        return Recorded::Suspect("the running total was never written");
    }
    if bytes.len() != LEN || bytes[..8] != MAGIC {
        return Recorded::Suspect("the running total's file is malformed");
    }
    if u64_at(32) != xxh3_64(&bytes[..32]) {
        return Recorded::Suspect("the running total's file fails its checksum");
    }
    if u32_at(8) != LAYOUT {
        return Recorded::Suspect("the running total is of another layout");
    }
    if u32_at(12) & DIRTY != 0 {
        return Recorded::Suspect("a process died while it changed the store");
    }
    Recorded::Clean(Usage {
        entries: u64_at(16),
        bytes: u64_at(24),
    })
}

/// Reads the file's first bytes (one more than a record, so that a longer
/// file is seen as malformed).
fn read_record(file: &File) -> io::Result<Recorded> {
    let mut buf = [0u8; LEN + 1];
    let mut n = 0;
    while n < buf.len() {
        match read_at(file, &mut buf[n..], n as u64)? {
            0 => break,
            k => n += k,
        }
    }
    Ok(decode(&buf[..n]))
}

/// The total as it is now, read under a shared lock (so never in the middle
/// of a holder's change). A missing file is [`Recorded::Suspect`]; nothing
/// is created. When the lock stays held past `timeout`, the file is read
/// without it (the checksum and the dirty mark still tell a usable total).
pub(crate) fn read_shared(dir: &Path, timeout: Duration) -> io::Result<Recorded> {
    let file = match open(dir, false) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Ok(Recorded::Suspect("the store has no running total yet"));
        }
        Err(e) => return Err(e),
    };
    lock_within(&file, Mode::Shared, timeout, PAUSES)?;
    read_record(&file)
    // Closing the file releases the lock.
}

/// The store's lock, held, with the total as it was found. Changes are
/// made in this order: [`UsageLock::begin_change`] (marks the file dirty,
/// once per hold), the change to the files, then the change to the total
/// ([`added`](UsageLock::added), [`removed`](UsageLock::removed),
/// [`set`](UsageLock::set)). Dropping it writes the new total, clean, and
/// releases the lock.
#[derive(Debug)]
pub(crate) struct UsageLock {
    file: File,
    usage: Usage,
    /// Why the total found cannot be used, until [`UsageLock::set`] gives
    /// a counted one.
    suspect: Option<&'static str>,
    /// The file says dirty because of this hold.
    marked: bool,
    /// The total changed in this hold (so it is written when it ends).
    changed: bool,
}

impl UsageLock {
    /// Takes the lock, creating the file (mode `0600`) if needed, waiting
    /// up to `timeout`; `Ok(None)` when it stayed held.
    pub(crate) fn acquire(dir: &Path, timeout: Duration) -> io::Result<Option<UsageLock>> {
        let file = open(dir, true)?;
        if !lock_within(&file, Mode::Exclusive, timeout, PAUSES)? {
            return Ok(None);
        }
        let (usage, suspect) = match read_record(&file)? {
            Recorded::Clean(u) => (u, None),
            Recorded::Suspect(why) => (Usage::default(), Some(why)),
        };
        Ok(Some(UsageLock {
            file,
            usage,
            suspect,
            marked: false,
            changed: false,
        }))
    }

    /// Why the total cannot be used: the caller counts the files and calls
    /// [`UsageLock::set`] before it changes anything.
    pub(crate) fn suspect(&self) -> Option<&'static str> {
        self.suspect
    }

    /// The total, with the changes of this hold.
    pub(crate) fn usage(&self) -> Usage {
        self.usage
    }

    /// Marks the file dirty before the first change of this hold to the
    /// store's files. A failure means the change must not be made.
    pub(crate) fn begin_change(&mut self) -> io::Result<()> {
        if !self.marked {
            write_at(&self.file, &encode(self.usage, true), 0)?;
            self.marked = true;
            self.changed = true;
        }
        Ok(())
    }

    /// An entry of `bytes` was published where there was none.
    pub(crate) fn added(&mut self, bytes: u64) {
        self.changed = true;
        self.usage.entries = self.usage.entries.saturating_add(1);
        self.usage.bytes = self.usage.bytes.saturating_add(bytes);
    }

    /// An entry of `bytes` was removed.
    pub(crate) fn removed(&mut self, bytes: u64) {
        self.changed = true;
        self.usage.entries = self.usage.entries.saturating_sub(1);
        self.usage.bytes = self.usage.bytes.saturating_sub(bytes);
    }

    /// The total counted from the files.
    pub(crate) fn set(&mut self, usage: Usage) {
        self.usage = usage;
        self.suspect = None;
        self.changed = true;
    }
}

impl Drop for UsageLock {
    fn drop(&mut self) {
        // A total still suspect was not counted: the file keeps saying so
        // (dirty, if this hold changed files anyway), for the next holder.
        if self.suspect.is_none() && self.changed {
            // A failure leaves the file as it was: dirty if this hold
            // changed anything, so the next holder recounts.
            let _ = write_at(&self.file, &encode(self.usage, false), 0);
        }
        // Closing `file` (dropped after this) releases the lock.
    }
}

#[cfg(unix)]
fn open(dir: &Path, create: bool) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .write(create)
        .create(create)
        .truncate(false)
        .mode(0o600)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(dir.join(FILE_NAME))
}

#[cfg(unix)]
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(file, buf, offset)
}

#[cfg(unix)]
fn write_at(file: &File, buf: &[u8], offset: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(file, buf, offset)
}

#[cfg(not(unix))]
fn open(_dir: &Path, _create: bool) -> io::Result<File> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "the store's lock needs a Unix system",
    ))
}

#[cfg(not(unix))]
fn read_at(_file: &File, _buf: &mut [u8], _offset: u64) -> io::Result<usize> {
    Ok(0)
}

#[cfg(not(unix))]
fn write_at(_file: &File, _buf: &[u8], _offset: u64) -> io::Result<()> {
    Ok(())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    const WAIT: Duration = Duration::from_secs(5);

    fn recorded(dir: &Path) -> Recorded {
        read_shared(dir, WAIT).unwrap()
    }

    #[test]
    fn a_missing_total_is_suspect_and_a_set_one_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(recorded(dir.path()), Recorded::Suspect(_)));
        assert!(
            !dir.path().join(FILE_NAME).exists(),
            "reading creates nothing"
        );
        let mut lock = UsageLock::acquire(dir.path(), WAIT).unwrap().unwrap();
        assert!(lock.suspect().is_some());
        lock.set(Usage {
            entries: 2,
            bytes: 300,
        });
        lock.begin_change().unwrap();
        lock.added(50);
        lock.removed(100);
        drop(lock);
        let want = Usage {
            entries: 2,
            bytes: 250,
        };
        assert_eq!(recorded(dir.path()), Recorded::Clean(want));
        let lock = UsageLock::acquire(dir.path(), WAIT).unwrap().unwrap();
        assert_eq!((lock.suspect(), lock.usage()), (None, want));
    }

    /// A holder that dies after marking the file (here: whose drop never
    /// runs) leaves it dirty, and the total is suspect until counted.
    #[test]
    fn a_holder_that_dies_mid_change_leaves_the_total_suspect() {
        let dir = tempfile::tempdir().unwrap();
        let mut lock = UsageLock::acquire(dir.path(), WAIT).unwrap().unwrap();
        lock.set(Usage::default());
        drop(lock);
        let mut lock = UsageLock::acquire(dir.path(), WAIT).unwrap().unwrap();
        lock.begin_change().unwrap();
        lock.added(10);
        // Release the lock without the clean write, as a kill would.
        let file = lock.file.try_clone().unwrap();
        std::mem::forget(lock);
        rustix::fs::flock(&file, rustix::fs::FlockOperation::Unlock).unwrap();
        assert_eq!(
            recorded(dir.path()),
            Recorded::Suspect("a process died while it changed the store")
        );
        let lock = UsageLock::acquire(dir.path(), WAIT).unwrap().unwrap();
        assert!(lock.suspect().is_some());
    }

    #[test]
    fn damage_is_suspect() {
        let dir = tempfile::tempdir().unwrap();
        let good = encode(
            Usage {
                entries: 1,
                bytes: 9,
            },
            false,
        );
        let path = dir.path().join(FILE_NAME);
        let mut other_layout = good;
        other_layout[8] ^= 3;
        let mut flipped = good;
        flipped[20] ^= 1;
        let mut longer = good.to_vec();
        longer.push(0);
        for (what, bytes) in [
            ("empty", Vec::new()),
            ("truncated", good[..39].to_vec()),
            ("longer", longer),
            ("flipped", flipped.to_vec()),
            ("other layout", other_layout.to_vec()),
        ] {
            std::fs::write(&path, &bytes).unwrap();
            assert!(
                matches!(recorded(dir.path()), Recorded::Suspect(_)),
                "{what}"
            );
        }
        std::fs::write(&path, good).unwrap();
        assert!(matches!(recorded(dir.path()), Recorded::Clean(_)));
    }

    #[test]
    fn holders_exclude_each_other() {
        let dir = tempfile::tempdir().unwrap();
        let held = UsageLock::acquire(dir.path(), WAIT).unwrap().unwrap();
        let short = Duration::from_millis(20);
        assert!(UsageLock::acquire(dir.path(), short).unwrap().is_none());
        drop(held);
        assert!(UsageLock::acquire(dir.path(), short).unwrap().is_some());
    }
}
