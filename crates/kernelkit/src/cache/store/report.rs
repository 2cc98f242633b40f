//! What the store's operations report: its errors, the faults of one
//! entry, and the answers of `stats`, `list`, `verify` and `clear`.

use std::io;
use std::path::PathBuf;
use std::time::SystemTime;

use crate::cache::entry::{EntryError, Header};
use crate::cache::key::ModuleKey;
use crate::cache::tally::Tally;

/// A store directory that cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// There is no directory at the path.
    #[error("artifact store {dir}: no such directory")]
    Missing {
        /// The directory.
        dir: PathBuf,
    },
    /// The directory belongs to another user or others may write it.
    #[error("artifact store {dir} is not trusted: {reason}")]
    Untrusted {
        /// The directory.
        dir: PathBuf,
        /// What is wrong (owner, mode).
        reason: String,
    },
    /// A file system operation failed.
    #[error("artifact store {dir}: cannot {operation}: {source}")]
    Io {
        /// The directory.
        dir: PathBuf,
        /// What was being done.
        operation: &'static str,
        /// The system's error.
        source: io::Error,
    },
}

/// Why one entry is not usable.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EntryFault {
    /// The file could not be opened or read.
    #[error("unreadable: {0}")]
    Unreadable(io::Error),
    /// The file belongs to another user or others may write it.
    #[error("not trusted: {0}")]
    Untrusted(String),
    /// The contents are not a valid entry for its key.
    #[error("{0}")]
    Malformed(EntryError),
    /// The file is larger than any artifact (1 GiB); it is not read.
    #[error("{0} bytes, too large to be an artifact")]
    TooLarge(u64),
}

impl EntryFault {
    /// Whether the fault proves that the file is not a good entry for its
    /// key, so that removing it loses nothing: bad magic, checksum or
    /// lengths, stored under another key, larger than any artifact. A file
    /// that could not be read or is not trusted may be a good entry (the
    /// store then keeps it), and one of another format version belongs to
    /// another kernelkit.
    pub fn is_corrupt(&self) -> bool {
        match self {
            EntryFault::Malformed(EntryError::Version { .. }) => false,
            EntryFault::Malformed(_) | EntryFault::TooLarge(_) => true,
            EntryFault::Unreadable(_) | EntryFault::Untrusted(_) => false,
        }
    }
}

/// One entry, as `kernelkit cache list` shows it.
#[derive(Debug)]
pub struct EntryInfo {
    /// The key (the file name without extension).
    pub key: ModuleKey,
    /// The file.
    pub path: PathBuf,
    /// File size in bytes.
    pub bytes: u64,
    /// When a process last wrote or loaded it.
    pub last_use: SystemTime,
    /// What the entry says it holds, or why its header cannot be read (the
    /// payload and checksum are checked by [`ArtifactStore::verify`](super::ArtifactStore::verify)).
    pub header: Result<Header, EntryFault>,
}

/// An entry that failed [`ArtifactStore::verify`](super::ArtifactStore::verify).
#[derive(Debug)]
pub struct BadEntry {
    /// The key its file name stands for.
    pub key: ModuleKey,
    /// The file.
    pub path: PathBuf,
    /// What is wrong with it.
    pub fault: EntryFault,
}

/// The result of [`ArtifactStore::verify`](super::ArtifactStore::verify).
#[derive(Debug, Default)]
pub struct VerifyReport {
    /// Entries that passed every check.
    pub good: usize,
    /// Entries that did not.
    pub bad: Vec<BadEntry>,
    /// Entries of another format version (written by another kernelkit):
    /// not used by this one, not bad; they age out.
    pub other_format: usize,
}

/// The size and lifetime counters of a store ([`ArtifactStore::stats`](super::ArtifactStore::stats)).
#[derive(Clone, Debug)]
pub struct StoreStats {
    /// The directory.
    pub dir: PathBuf,
    /// Number of entries.
    pub entries: u64,
    /// Their total size in bytes.
    pub bytes: u64,
    /// Whether `entries` and `bytes` were counted from the files (a recount
    /// was asked for, or the running total was missing or could not be
    /// trusted) rather than read from the running total.
    pub counted: bool,
    /// The size limit the store was opened with.
    pub max_bytes: u64,
    /// Hits, misses, writes and errors of every process since the store was
    /// last cleared.
    pub lifetime: Tally,
}

/// What [`ArtifactStore::clear`](super::ArtifactStore::clear) removed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClearReport {
    /// Entries removed.
    pub entries: usize,
    /// Their total size in bytes.
    pub bytes: u64,
}
