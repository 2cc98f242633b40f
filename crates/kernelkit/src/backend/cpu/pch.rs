//! A precompiled prelude header: parsing `<cmath>`, `<atomic>` and friends
//! dominates a small kernel's CPU compile, so the prelude is parsed once
//! per machine and compiler, not in every compile.
//!
//! The header is built once per machine and compiler into the configured
//! directory (`KERNELKIT_PCH_DIR`, see [`crate::config::CpuConfig`];
//! default: `kernelkit-pch-<uid>` in the temp dir,
//! mode 0700, owned by the user — anything else and no PCH is used), named
//! by a hash of the compiler identity, the flags and the prelude text, and
//! published with an atomic rename from a temporary file of its own (so two
//! builds at once, by two backends or two processes, each publish a whole
//! header). A compile that finds no header starts the build on a background
//! thread and compiles without it; later compiles include it once it
//! exists. Its existence is checked on every compile: the directory is
//! shared, and a header that vanished (a temp-directory cleaner) is simply
//! not used.
//!
//! The generated source is unchanged: the compiler's input replaces the
//! prelude text by an `#include` of the header followed by a `#line`
//! directive, so compiler messages carry the line numbers of the full
//! source. GCC silently falls back to parsing the header if the PCH does not
//! match; other compilers parse the header text. Either way the result is
//! the same code.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crate::codegen::cpu::PRELUDE;

pub(super) struct Pch {
    /// `<dir>/<hash>.hpp`, if the directory is usable.
    header: Option<PathBuf>,
    /// Shared with the background build.
    state: Arc<BuildState>,
    /// The background build, joined by the compile that started it so a
    /// short-lived process still publishes the header before it exits.
    build: Mutex<Option<JoinHandle<()>>>,
}

/// Whether a background build is under way or has failed.
#[derive(Default)]
struct BuildState {
    /// A build is under way (at most one per `Pch` at a time).
    building: AtomicBool,
    /// A build failed: it is not tried again in this process.
    failed: AtomicBool,
}

impl Pch {
    /// The header for a compiler identity in `dir` (none: no PCH).
    pub(super) fn new(dir: Option<PathBuf>, identity_hash: u64) -> Pch {
        let header = dir.map(|dir| {
            let hash = xxhash_rust::xxh3::xxh3_64_with_seed(PRELUDE.as_bytes(), identity_hash);
            dir.join(format!("{hash:016x}.hpp"))
        });
        Pch {
            header,
            state: Arc::new(BuildState::default()),
            build: Mutex::new(None),
        }
    }

    /// The compiler input for `source`: with the PCH if it is there now
    /// (then the prelude is replaced by an include), else the source itself.
    /// When the PCH is not there, a build is started in the background with
    /// `build` (header, output), unless one is under way or has failed.
    pub(super) fn input_for(
        &self,
        source: &str,
        build: impl FnOnce(&Path, &Path) -> bool + Send + 'static,
    ) -> Option<String> {
        let header = self.header.as_ref()?;
        let rest = source.strip_prefix(PRELUDE)?;
        if !self.is_ready(header, build) {
            return None;
        }
        let lines = PRELUDE.matches('\n').count();
        Some(format!(
            "#include \"{}\"\n#line {} \"kernel.cpp\"\n{rest}",
            header.display(),
            lines + 1
        ))
    }

    /// Whether the header and its PCH exist now: checked on every compile
    /// (two `stat`s, against a compile's hundreds of milliseconds), since
    /// the directory is shared and may be cleaned at any time.
    fn is_ready(
        &self,
        header: &Path,
        build: impl FnOnce(&Path, &Path) -> bool + Send + 'static,
    ) -> bool {
        if self.present() {
            return true;
        }
        let gch = gch_path(header);
        let state = &self.state;
        if state.failed.load(Ordering::Acquire) || state.building.swap(true, Ordering::AcqRel) {
            return false;
        }
        tracing::debug!(
            "no precompiled header at {}; compiling without it and building it",
            gch.display()
        );
        let (header, state) = (header.to_path_buf(), Arc::clone(state));
        let handle = std::thread::spawn(move || {
            let built = publish_header(&header).and_then(|()| publish_gch(&header, &gch, build));
            if let Err(e) = built {
                tracing::debug!("the precompiled header was not built: {e}");
                state.failed.store(true, Ordering::Release);
            }
            state.building.store(false, Ordering::Release);
        });
        *self.build.lock().unwrap_or_else(|p| p.into_inner()) = Some(handle);
        false
    }

    /// Whether the header and its PCH exist now.
    pub(super) fn present(&self) -> bool {
        self.header
            .as_ref()
            .is_some_and(|h| h.is_file() && gch_path(h).is_file())
    }

    /// Whether `path` is one of the files of this PCH's directory (the
    /// header a compile includes instead of the prelude text).
    pub(super) fn holds(&self, path: &Path) -> bool {
        self.header
            .as_ref()
            .and_then(|h| h.parent())
            .is_some_and(|dir| path.parent() == Some(dir))
    }

    /// Waits for a background build this process started, if any is left
    /// (called after a compile, so the build overlaps with it).
    pub(super) fn finish_build(&self) {
        let handle = self.build.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(h) = handle {
            let _ = h.join();
        }
    }
}

fn gch_path(header: &Path) -> PathBuf {
    let mut s = header.as_os_str().to_owned();
    s.push(".gch");
    PathBuf::from(s)
}

/// Writes the prelude text next to where its `.gch` goes: to a temporary
/// file of its own (mode 0600), renamed into place, so a reader sees the
/// whole header or none.
fn publish_header(header: &Path) -> std::io::Result<()> {
    if header.is_file() {
        return Ok(());
    }
    let mut tmp = temporary_next_to(header)?;
    tmp.write_all(PRELUDE.as_bytes())?;
    tmp.persist(header).map_err(|e| e.error)?;
    Ok(())
}

/// Runs `build` (header, output) into a temporary file of its own and
/// renames that to `gch` when the compiler succeeded.
fn publish_gch(
    header: &Path,
    gch: &Path,
    build: impl FnOnce(&Path, &Path) -> bool,
) -> std::io::Result<()> {
    let tmp = temporary_next_to(header)?.into_temp_path();
    if !build(header, &tmp) {
        return Err(std::io::Error::other("the compiler failed"));
    }
    tmp.persist(gch).map_err(|e| e.error)
}

/// A new file with a unique name (mode 0600) in the directory of `header`,
/// removed unless it is persisted.
fn temporary_next_to(header: &Path) -> std::io::Result<tempfile::NamedTempFile> {
    let dir = header.parent().unwrap_or(Path::new("."));
    tempfile::Builder::new()
        .prefix(".kernelkit-pch-")
        .suffix(".tmp")
        .tempfile_in(dir)
}

/// The configured PCH directory `dir`, created 0700 if missing, if it is
/// ours and private; `None` (no PCH) otherwise.
pub(super) fn usable_dir(dir: Option<&Path>) -> Option<PathBuf> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    let dir = dir?;
    let uid = rustix::process::geteuid().as_raw();
    let _ = std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir);
    let meta = std::fs::symlink_metadata(dir).ok()?;
    if !meta.is_dir() || meta.uid() != uid || meta.mode() & 0o022 != 0 {
        tracing::debug!(
            "not using {} for precompiled headers: not a private directory",
            dir.display()
        );
        return None;
    }
    Some(dir.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Barrier};

    fn pch_in(dir: &Path) -> Pch {
        Pch::new(Some(dir.to_path_buf()), 7)
    }

    fn source() -> String {
        format!("{PRELUDE}int body;\n")
    }

    /// A header that was there and is gone (a temp-directory cleaner) is
    /// not used: the compile falls back to the full source.
    #[test]
    fn a_header_that_vanished_is_not_used() {
        let dir = tempfile::tempdir().unwrap();
        let pch = pch_in(dir.path());
        let header = pch.header.clone().unwrap();
        std::fs::write(&header, PRELUDE).unwrap();
        std::fs::write(gch_path(&header), b"precompiled").unwrap();
        let input = pch.input_for(&source(), |_, _| panic!("nothing to build"));
        assert!(input.is_some_and(|i| i.contains(&header.display().to_string())));
        std::fs::remove_file(gch_path(&header)).unwrap();
        assert_eq!(
            pch.input_for(&source(), |_, _| false),
            None,
            "the vanished header is still used"
        );
        pch.finish_build();
    }

    /// Two backends of one process build the same header at once: each
    /// writes its own temporary file, and the published header is one
    /// whole build, never a mix.
    #[test]
    fn concurrent_builds_write_distinct_temporary_files() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (pch_in(dir.path()), pch_in(dir.path()));
        let barrier = Arc::new(Barrier::new(2));
        let outputs = Arc::new(Mutex::new(Vec::new()));
        for (pch, text) in [(&a, "whole build a"), (&b, "whole build b")] {
            let (barrier, outputs) = (barrier.clone(), outputs.clone());
            let input = pch.input_for(&source(), move |_, out| {
                outputs.lock().unwrap().push(out.to_path_buf());
                barrier.wait(); // both builds are under way
                std::fs::write(out, text).unwrap();
                true
            });
            assert_eq!(input, None, "no header yet");
        }
        a.finish_build();
        b.finish_build();
        let outputs = outputs.lock().unwrap();
        assert_ne!(
            outputs[0], outputs[1],
            "two builds wrote one temporary file"
        );
        let header = a.header.clone().unwrap();
        let published = std::fs::read_to_string(gch_path(&header)).unwrap();
        assert!(
            published == "whole build a" || published == "whole build b",
            "{published:?}"
        );
        assert_eq!(std::fs::read_to_string(&header).unwrap(), PRELUDE);
    }
}
