//! What a compile read besides its source: every file an `#include`
//! reached, each with a hash of its contents, and the places a changed
//! search would look.
//!
//! The artifact store's key is a hash of the generated source, which names
//! an included file but does not contain it, so the key cannot cover a
//! file before the compile has found it. The store therefore keeps this
//! list with each entry and checks it on every load ([`Dependencies::check`]):
//! a file whose contents changed, that is gone, or that now exists where a
//! search found nothing, makes the entry a miss, and the compile that
//! follows rewrites it. Contents are hashed, not paths or times, so a store
//! built in one container hits in an identical one.
//!
//! Not covered: system headers (those of the C++ standard library, the CUDA
//! toolkit's, NVRTC's built-in ones), which the compiler identity in the key
//! stands for; and, for the CPU backend, a new file that would hide an
//! included one found in a system directory. Each backend says how it finds
//! its list (`cpu::compile`: the compiler's `-MMD` output; `cuda::includes`:
//! kernelkit's own search, whose results are what NVRTC compiles).

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use xxhash_rust::xxh3::xxh3_128;

/// One file a compile read, and the xxh3-128 hash of what it read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileDigest {
    /// The file, as the compile found it (absolute).
    pub path: PathBuf,
    /// xxh3-128 of its contents.
    pub hash: u128,
}

/// The dependency list of one compiled artifact. See the module
/// documentation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Dependencies {
    /// The include directories the compile searched, in order (for
    /// people: they are also part of the backend's identity in the key).
    pub include_dirs: Vec<PathBuf>,
    /// The working directory, when a search looked in it (a quoted
    /// `#include` of NVRTC): a process elsewhere would find other files.
    pub cwd: Option<PathBuf>,
    /// Every file the compile read besides its source and system headers.
    pub files: Vec<FileDigest>,
    /// Paths a search tried and found no file at: one appearing there
    /// would be included instead of what was.
    pub absent: Vec<PathBuf>,
}

/// Why a stored artifact no longer matches the files it was compiled from.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Stale {
    /// A file's contents differ.
    #[error("{} changed", .0.display())]
    Changed(PathBuf),
    /// A file is gone or cannot be read.
    #[error("{} cannot be read ({})", .0.display(), .1)]
    Unreadable(PathBuf, String),
    /// A file now exists where a search found none.
    #[error("{} now exists and would be included", .0.display())]
    Appeared(PathBuf),
    /// Relative includes were searched in another working directory.
    #[error("includes were searched from {}, this process runs in {}", .0.display(), .1.display())]
    OtherDirectory(PathBuf, PathBuf),
}

/// Files changed less than this before a compile started may have been
/// read in an older state (file times are only as fine as the file system
/// keeps them, two seconds on some).
const CHANGE_MARGIN: Duration = Duration::from_secs(2);

impl Dependencies {
    /// Checks the list against the files as they are now.
    pub fn check(&self) -> Result<(), Stale> {
        if let Some(cwd) = &self.cwd {
            let here = std::env::current_dir()
                .map_err(|e| Stale::Unreadable(PathBuf::from("."), e.to_string()))?;
            if &here != cwd {
                return Err(Stale::OtherDirectory(cwd.clone(), here));
            }
        }
        self.check_files()
    }

    /// [`check`](Dependencies::check) without the working directory: the
    /// files and the absent paths only. A bundle import checks this much
    /// (it runs in another directory than the programs that will load the
    /// entries; their lookups check the rest).
    pub fn check_files(&self) -> Result<(), Stale> {
        for f in &self.files {
            let bytes = std::fs::read(&f.path)
                .map_err(|e| Stale::Unreadable(f.path.clone(), e.to_string()))?;
            if xxh3_128(&bytes) != f.hash {
                return Err(Stale::Changed(f.path.clone()));
            }
        }
        if let Some(p) = self.absent.iter().find(|p| p.is_file()) {
            return Err(Stale::Appeared(p.clone()));
        }
        Ok(())
    }
}

impl Dependencies {
    /// Every path the list names: include directories, the working
    /// directory, the files read and the paths found absent.
    pub fn paths(&self) -> impl Iterator<Item = &Path> {
        self.include_dirs
            .iter()
            .map(PathBuf::as_path)
            .chain(self.cwd.as_deref())
            .chain(self.files.iter().map(|f| f.path.as_path()))
            .chain(self.absent.iter().map(PathBuf::as_path))
    }
}

/// The digests of `paths` as they are now. `Err` (why) when one cannot be
/// read, or was changed at or after `started` less [`CHANGE_MARGIN`]: the
/// compile may have read another version than the one hashed now, so its
/// artifact must not be stored under these digests.
pub(crate) fn digest_files(
    paths: &[PathBuf],
    started: SystemTime,
) -> Result<Vec<FileDigest>, String> {
    let since = started.checked_sub(CHANGE_MARGIN).unwrap_or(started);
    paths
        .iter()
        .map(|path| {
            let unreadable = |e: std::io::Error| format!("{} cannot be read: {e}", path.display());
            let file = std::fs::File::open(path).map_err(unreadable)?;
            let modified = file
                .metadata()
                .and_then(|m| m.modified())
                .map_err(unreadable)?;
            if modified >= since {
                return Err(format!(
                    "{} changed while (or just before) it was compiled",
                    path.display()
                ));
            }
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut &file, &mut bytes).map_err(unreadable)?;
            Ok(FileDigest {
                path: path.clone(),
                hash: xxh3_128(&bytes),
            })
        })
        .collect()
}

/// The digest of contents already read (the CUDA backend reads each
/// included file once and hands NVRTC those very bytes).
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) fn digest_contents(path: &Path, contents: &[u8]) -> FileDigest {
    FileDigest {
        path: path.to_path_buf(),
        hash: xxh3_128(contents),
    }
}

/// `path` without `.` components and with each `..` applied to the
/// component before it (as written, without asking the file system).
pub(crate) fn normalize(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn old_file(dir: &Path, name: &str, text: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(SystemTime::now() - Duration::from_secs(60))
            .unwrap();
        path
    }

    #[test]
    fn a_change_a_removal_or_a_new_file_is_stale() {
        let dir = tempfile::tempdir().unwrap();
        let a = old_file(dir.path(), "a.h", "#define A 1\n");
        let b = old_file(dir.path(), "b.h", "#define B 1\n");
        let shadow = dir.path().join("shadow.h");
        let deps = Dependencies {
            include_dirs: vec![dir.path().to_path_buf()],
            cwd: None,
            files: digest_files(&[a.clone(), b.clone()], SystemTime::now()).unwrap(),
            absent: vec![shadow.clone()],
        };
        assert_eq!(deps.check(), Ok(()));
        // Same contents, new times: still good (contents are what counts).
        std::fs::write(&a, "#define A 1\n").unwrap();
        assert_eq!(deps.check(), Ok(()));
        std::fs::write(&a, "#define A 2\n").unwrap();
        assert_eq!(deps.check(), Err(Stale::Changed(a.clone())));
        std::fs::write(&a, "#define A 1\n").unwrap();
        std::fs::remove_file(&b).unwrap();
        assert!(matches!(deps.check(), Err(Stale::Unreadable(p, _)) if p == b));
        std::fs::write(&b, "#define B 1\n").unwrap();
        std::fs::write(&shadow, "").unwrap();
        assert_eq!(deps.check(), Err(Stale::Appeared(shadow)));
    }

    #[test]
    fn another_working_directory_is_stale() {
        let here = std::env::current_dir().unwrap();
        let mut deps = Dependencies {
            cwd: Some(here.clone()),
            ..Dependencies::default()
        };
        assert_eq!(deps.check(), Ok(()));
        deps.cwd = Some(here.join("elsewhere"));
        assert!(matches!(deps.check(), Err(Stale::OtherDirectory(..))));
    }

    #[test]
    fn a_file_changed_during_the_compile_is_not_digested() {
        let dir = tempfile::tempdir().unwrap();
        let old = old_file(dir.path(), "old.h", "x");
        let started = SystemTime::now();
        let new = dir.path().join("new.h");
        std::fs::write(&new, "y").unwrap();
        assert!(digest_files(std::slice::from_ref(&old), started).is_ok());
        let err = digest_files(&[old, new], started).unwrap_err();
        assert!(err.contains("new.h"), "{err}");
    }

    #[test]
    fn normalizing_applies_dot_dot_as_written() {
        assert_eq!(normalize(Path::new("/a/./b/../c")), PathBuf::from("/a/c"));
        assert_eq!(normalize(Path::new("a/../../c")), PathBuf::from("../c"));
    }
}
