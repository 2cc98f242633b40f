//! The manifest that recording appends to (`KERNELKIT_RECORD`, or
//! `kernel::record::start`): one JSON line per module the process
//! resolves, each written once. On the device floor so that both floors
//! that resolve modules write to it: the kernel floor a line per variant
//! (`kernel::record`), the device floor a line for kernelkit's own
//! strided-copy kernel (`device::copy`).
//!
//! - **Once.** Each line is deduplicated by its text's hash against a set
//!   of this process's lines, seeded with the file's lines when recording
//!   starts.
//! - **Many writers.** Each line is one `write` of the whole line to a file
//!   opened with `O_APPEND`: lines of many threads and processes never
//!   interleave.

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

use xxhash_rust::xxh3::xxh3_64;

use crate::config::Config;

/// The open manifest and the hashes of the lines it holds.
struct Recorder {
    path: PathBuf,
    file: File,
    seen: HashSet<u64>,
}

/// Whether a manifest is open (read without the lock, so that a process
/// that does not record builds no line).
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// `None` inside: not recording. Initialised from `KERNELKIT_RECORD` on
/// first use.
fn state() -> &'static Mutex<Option<Recorder>> {
    static STATE: OnceLock<Mutex<Option<Recorder>>> = OnceLock::new();
    STATE.get_or_init(|| {
        let recorder = Config::from_env().record.and_then(|path| {
            open(&path)
                .map_err(|e| {
                    tracing::warn!("KERNELKIT_RECORD: cannot record to {}: {e}", path.display())
                })
                .ok()
        });
        ACTIVE.store(recorder.is_some(), Ordering::Release);
        Mutex::new(recorder)
    })
}

fn open(path: &Path) -> std::io::Result<Recorder> {
    let file = OpenOptions::new().create(true).append(true).open(path)?;
    let seen = std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| xxh3_64(l.as_bytes()))
        .collect();
    Ok(Recorder {
        path: path.to_path_buf(),
        file,
        seen,
    })
}

fn lock() -> std::sync::MutexGuard<'static, Option<Recorder>> {
    state().lock().unwrap_or_else(|p| p.into_inner())
}

/// Records into `path` from now on (created if missing, appended to),
/// instead of any manifest recorded to before.
pub(crate) fn start(path: &Path) -> std::io::Result<()> {
    let recorder = open(path)?;
    let mut guard = lock();
    *guard = Some(recorder);
    ACTIVE.store(true, Ordering::Release);
    Ok(())
}

/// Stops recording; returns the manifest recorded to, if any.
pub(crate) fn stop() -> Option<PathBuf> {
    let mut guard = lock();
    ACTIVE.store(false, Ordering::Release);
    guard.take().map(|r| r.path)
}

/// The manifest being recorded to, if any.
pub(crate) fn recording() -> Option<PathBuf> {
    lock().as_ref().map(|r| r.path.clone())
}

/// Whether a manifest is open (cheap: callers build their line only then).
pub(crate) fn active() -> bool {
    state();
    ACTIVE.load(Ordering::Acquire)
}

/// Appends `line` (one JSON object, no newline) when recording and when
/// the manifest does not hold it yet. A failed write is logged, never an
/// error of the call.
pub(crate) fn append(line: &str) {
    let mut guard = lock();
    let Some(recorder) = guard.as_mut() else {
        return;
    };
    if !recorder.seen.insert(xxh3_64(line.as_bytes())) {
        return;
    }
    let mut bytes = Vec::with_capacity(line.len() + 1);
    bytes.extend_from_slice(line.as_bytes());
    bytes.push(b'\n');
    // One write of the whole line to an O_APPEND file: lines never
    // interleave with other writers'.
    if let Err(e) = recorder.file.write_all(&bytes) {
        tracing::warn!(
            "kernelkit record: cannot append to {}: {e}",
            recorder.path.display()
        );
    }
}
