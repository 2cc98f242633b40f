//! Whether a store directory or entry file may be trusted.
//!
//! A CPU artifact is a shared library that kernelkit will `dlopen`: whoever
//! can write it can run code in every process that uses the store. So a
//! directory or file is trusted only when it belongs to the current
//! (effective) user and neither its group nor others may write it. The
//! checksum catches accidents; this catches other users.

use std::fs::Metadata;

/// Why a path is not trusted.
pub(crate) type Distrust = String;

/// Checks a directory's metadata (taken through symbolic links).
pub(crate) fn check_dir(meta: &Metadata) -> Result<(), Distrust> {
    if !meta.is_dir() {
        return Err("it is not a directory".into());
    }
    check_owner_and_mode(meta)
}

/// Checks an entry file's metadata (taken from the open file, so it is the
/// file that will be read).
pub(crate) fn check_file(meta: &Metadata) -> Result<(), Distrust> {
    if !meta.is_file() {
        return Err("it is not a regular file".into());
    }
    check_owner_and_mode(meta)
}

/// Checks a secret's file (the fleet tier's signing key): the current
/// user's, a regular file, and neither readable nor writable by group or
/// others (a secret others can read signs for them too).
pub(crate) fn check_secret_file(meta: &Metadata) -> Result<(), Distrust> {
    if !meta.is_file() {
        return Err("it is not a regular file".into());
    }
    check_owner_and_mode(meta)?;
    if let Some(mode) = exposed_mode(meta) {
        return Err(format!(
            "its mode {mode:04o} lets other users read it (expected 0600 or 0400)"
        ));
    }
    Ok(())
}

/// The permission bits of a file that group or others may read, write or
/// run (`None` when they may not): a private key's file must not be
/// (the fleet's secrets, and the bundles' Ed25519 signing keys).
pub(crate) fn exposed_mode(meta: &Metadata) -> Option<u32> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let mode = meta.mode() & 0o7777;
        if mode & 0o077 != 0 {
            return Some(mode);
        }
    }
    #[cfg(not(unix))]
    let _ = meta;
    None
}

#[cfg(unix)]
fn check_owner_and_mode(meta: &Metadata) -> Result<(), Distrust> {
    use std::os::unix::fs::MetadataExt;
    let me = rustix::process::geteuid().as_raw();
    if meta.uid() != me {
        return Err(format!(
            "it belongs to user {}, not to the current user {me}",
            meta.uid()
        ));
    }
    let mode = meta.mode() & 0o7777;
    if mode & 0o022 != 0 {
        return Err(format!(
            "its mode {mode:04o} lets other users write it (expected no group/other write bits)"
        ));
    }
    Ok(())
}

#[cfg(not(unix))]
fn check_owner_and_mode(_meta: &Metadata) -> Result<(), Distrust> {
    Err("ownership cannot be checked on this platform".into())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn group_or_other_write_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, b"x").unwrap();
        for (mode, ok) in [(0o600, true), (0o644, true), (0o620, false), (0o602, false)] {
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).unwrap();
            let meta = std::fs::metadata(&file).unwrap();
            assert_eq!(check_file(&meta).is_ok(), ok, "mode {mode:o}");
        }
        assert!(check_dir(&std::fs::metadata(&file).unwrap()).is_err());
        assert!(check_file(&std::fs::metadata(dir.path()).unwrap()).is_err());
    }

    #[test]
    fn a_secret_readable_by_others_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("key");
        std::fs::write(&file, [7u8; 32]).unwrap();
        for (mode, ok) in [(0o600, true), (0o400, true), (0o640, false), (0o604, false)] {
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).unwrap();
            let meta = std::fs::metadata(&file).unwrap();
            assert_eq!(check_secret_file(&meta).is_ok(), ok, "mode {mode:o}");
        }
    }
}
