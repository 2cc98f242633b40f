//! Private scratch space for compiles and loads: fresh temporary
//! directories that only the current user can enter (mode 0700) and files
//! that only they can read (0600).
//!
//! The modes are given when each directory or file is created, not left to
//! the process's umask (which usually lets everyone read): the sources,
//! compiler logs and libraries written here are the user's kernels, and a
//! library written where others can reach it could be swapped before it is
//! loaded.

use std::fs::{File, OpenOptions, Permissions};
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

use tempfile::TempDir;

/// A fresh directory in the system's temporary directory, mode 0700,
/// removed when the value is dropped.
pub(super) fn private_dir(prefix: &str) -> io::Result<TempDir> {
    tempfile::Builder::new()
        .prefix(prefix)
        .permissions(Permissions::from_mode(0o700))
        .tempdir()
}

/// Creates `path` (which must not exist) with mode 0600 and writes `bytes`
/// to it, synced.
pub(super) fn write_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = create_private(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// Creates `path` (which must not exist) with mode 0600.
pub(super) fn create_private(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn directories_are_0700_and_files_0600() {
        let dir = private_dir("kernelkit-test-").unwrap();
        assert_eq!(
            std::fs::metadata(dir.path()).unwrap().mode() & 0o7777,
            0o700
        );
        let file = dir.path().join("f");
        write_private(&file, b"bytes").unwrap();
        assert_eq!(std::fs::metadata(&file).unwrap().mode() & 0o7777, 0o600);
        assert_eq!(std::fs::read(&file).unwrap(), b"bytes");
        assert!(
            write_private(&file, b"again").is_err(),
            "an existing file (or a link planted there) is never written through"
        );
    }
}
