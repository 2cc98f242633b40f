//! The lock that lets one process compile a key while the others wait.
//!
//! It is an OS file lock (`flock`) on `<key>.lock` in the store directory.
//! The kernel drops it when its holder's file is closed, so a crashed
//! process never leaves a key locked. Waiting is bounded: past the timeout
//! the waiter compiles anyway, and both publish atomically, so the lock only
//! saves work, it is never needed for correctness.
//!
//! The holder removes the lock file when it is done, after publishing the
//! entry, so the directory does not fill with lock files. A process that
//! opened the old file still gets its lock and finds the entry; one that
//! arrives later creates a fresh file and finds the entry too. A race with
//! `clear` can at worst let two processes compile the same key.
//!
//! [`lock_within`] (an OS lock with a bounded wait, shared or exclusive)
//! also serves the store's own lock, its running total (`store/usage.rs`).

use std::fs::File;
use std::io;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// A held per-key lock. Dropping it removes the lock file and releases it.
#[derive(Debug)]
pub(crate) struct KeyLock {
    path: PathBuf,
    file: File,
}

impl KeyLock {
    /// Takes the lock at `path`, waiting up to `timeout`. `Ok(None)` means
    /// the wait timed out.
    pub(crate) fn acquire(path: PathBuf, timeout: Duration) -> io::Result<Option<KeyLock>> {
        let file = open(&path)?;
        let pauses = Pauses {
            first: Duration::from_millis(1),
            most: Duration::from_millis(20),
        };
        Ok(lock_within(&file, Mode::Exclusive, timeout, pauses)?.then_some(KeyLock { path, file }))
    }
}

/// Whether a lock excludes every other holder or only exclusive ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Readers: any number at once, none while an exclusive holder has it.
    Shared,
    /// Writers: one at a time.
    Exclusive,
}

/// How long a waiter sleeps between tries: `first`, doubling up to `most`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Pauses {
    pub(crate) first: Duration,
    pub(crate) most: Duration,
}

/// Takes an OS lock (`flock`) on `file`, trying again until `timeout` has
/// passed; `false` when it stayed held by another open file. (A blocking
/// `flock` would wait forever on a holder that was stopped, not killed.)
pub(crate) fn lock_within(
    file: &File,
    mode: Mode,
    timeout: Duration,
    pauses: Pauses,
) -> io::Result<bool> {
    let started = Instant::now();
    let mut pause = pauses.first;
    loop {
        if try_lock(file, mode)? {
            return Ok(true);
        }
        let waited = started.elapsed();
        if waited >= timeout {
            return Ok(false);
        }
        std::thread::sleep(pause.min(timeout - waited));
        pause = (pause * 2).min(pauses.most);
    }
}

impl Drop for KeyLock {
    fn drop(&mut self) {
        // Remove the file only if it is still ours: after a `clear` another
        // process may have made a new one at the same path.
        if same_file(&self.file, &self.path) {
            let _ = std::fs::remove_file(&self.path);
        }
        // Closing `file` (dropped after this) releases the lock.
    }
}

#[cfg(unix)]
fn open(path: &std::path::Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(path)
}

/// True when the lock was taken, false when another file holds it.
#[cfg(unix)]
fn try_lock(file: &File, mode: Mode) -> io::Result<bool> {
    use rustix::fs::{flock, FlockOperation};
    let operation = match mode {
        Mode::Shared => FlockOperation::NonBlockingLockShared,
        Mode::Exclusive => FlockOperation::NonBlockingLockExclusive,
    };
    match flock(file, operation) {
        Ok(()) => Ok(true),
        Err(e) if e == rustix::io::Errno::WOULDBLOCK || e == rustix::io::Errno::INTR => Ok(false),
        Err(e) => Err(e.into()),
    }
}

#[cfg(unix)]
fn same_file(file: &File, path: &std::path::Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::symlink_metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn open(_path: &std::path::Path) -> io::Result<File> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "file locks need a Unix system",
    ))
}

#[cfg(not(unix))]
fn try_lock(_file: &File, _mode: Mode) -> io::Result<bool> {
    Ok(false)
}

#[cfg(not(unix))]
fn same_file(_file: &File, _path: &std::path::Path) -> bool {
    false
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn excludes_other_holders_until_dropped_then_cleans_up() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("k.lock");
        let held = KeyLock::acquire(path.clone(), Duration::from_secs(1))
            .unwrap()
            .expect("a free lock is taken at once");
        // A second open file description (as another process would have)
        // cannot take it and times out.
        let second = KeyLock::acquire(path.clone(), Duration::from_millis(30)).unwrap();
        assert!(second.is_none());
        drop(held);
        assert!(!path.exists(), "the holder removes its lock file");
        let again = KeyLock::acquire(path.clone(), Duration::from_millis(30)).unwrap();
        assert!(again.is_some());
    }

    #[test]
    fn a_waiter_gets_the_lock_when_the_holder_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("k.lock");
        let held = KeyLock::acquire(path.clone(), Duration::from_secs(1))
            .unwrap()
            .unwrap();
        let waiter = {
            let path = path.clone();
            std::thread::spawn(move || KeyLock::acquire(path, Duration::from_secs(60)).unwrap())
        };
        std::thread::sleep(Duration::from_millis(20));
        drop(held);
        assert!(waiter.join().unwrap().is_some());
    }
}
