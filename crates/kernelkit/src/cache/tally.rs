//! The store's lifetime counters, kept in the store so that
//! `kernelkit cache stats` can say how often the store has been useful to
//! all the processes that shared it since it was last cleared.
//!
//! The file `counters` holds four little-endian `u64`s (hits, misses,
//! writes, errors). Each update takes an OS lock on the file for the few
//! microseconds of a read-add-write; updates happen at most once per compile
//! or disk load, never on the per-call path. Losing an update (a lock not
//! taken in time, a full disk) only makes the numbers a little low.

use std::io;
use std::path::Path;

/// The counters file's name in the store directory.
pub(crate) const FILE_NAME: &str = "counters";

/// What the store has done for every process since it was cleared.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Modules loaded from the store instead of compiled.
    pub hits: u64,
    /// Compiles that found nothing usable in the store.
    pub misses: u64,
    /// Entries written.
    pub writes: u64,
    /// Bad entries found and failed reads or writes.
    pub errors: u64,
}

impl Tally {
    fn to_bytes(self) -> [u8; 32] {
        let mut out = [0u8; 32];
        for (chunk, v) in
            out.chunks_exact_mut(8)
                .zip([self.hits, self.misses, self.writes, self.errors])
        {
            chunk.copy_from_slice(&v.to_le_bytes());
        }
        out
    }

    fn from_bytes(bytes: &[u8]) -> Tally {
        let word = |i: usize| {
            bytes
                .get(8 * i..8 * i + 8)
                .and_then(|b| b.try_into().ok())
                .map(u64::from_le_bytes)
                .unwrap_or(0)
        };
        Tally {
            hits: word(0),
            misses: word(1),
            writes: word(2),
            errors: word(3),
        }
    }

    fn saturating_add(self, o: Tally) -> Tally {
        Tally {
            hits: self.hits.saturating_add(o.hits),
            misses: self.misses.saturating_add(o.misses),
            writes: self.writes.saturating_add(o.writes),
            errors: self.errors.saturating_add(o.errors),
        }
    }
}

/// Reads the counters of the store in `dir` (zero when there are none).
pub(crate) fn read(dir: &Path) -> Tally {
    std::fs::read(dir.join(FILE_NAME))
        .map(|b| Tally::from_bytes(&b))
        .unwrap_or_default()
}

/// Adds `delta` to the counters of the store in `dir`.
pub(crate) fn add(dir: &Path, delta: Tally) -> io::Result<()> {
    update(dir, delta)
}

#[cfg(unix)]
fn update(dir: &Path, delta: Tally) -> io::Result<()> {
    use rustix::fs::{flock, FlockOperation};
    use std::os::unix::fs::{FileExt, OpenOptionsExt};
    use std::time::{Duration, Instant};
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(dir.join(FILE_NAME))?;
    let started = Instant::now();
    while flock(&file, FlockOperation::NonBlockingLockExclusive).is_err() {
        if started.elapsed() > Duration::from_secs(2) {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the counters file stayed locked",
            ));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let mut old = [0u8; 32];
    let n = file.read_at(&mut old, 0)?;
    let new = Tally::from_bytes(&old[..n]).saturating_add(delta);
    file.write_all_at(&new.to_bytes(), 0)
    // Closing the file releases the lock.
}

#[cfg(not(unix))]
fn update(_dir: &Path, _delta: Tally) -> io::Result<()> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "needs a Unix system",
    ))
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn concurrent_updates_add_up() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read(dir.path()), Tally::default());
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..25 {
                        let one = Tally {
                            hits: 1,
                            errors: 2,
                            ..Tally::default()
                        };
                        add(dir.path(), one).unwrap();
                    }
                });
            }
        });
        let t = read(dir.path());
        assert_eq!((t.hits, t.misses, t.writes, t.errors), (100, 0, 0, 200));
    }
}
