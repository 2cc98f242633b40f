//! `kernelkit run --out-dir DIR`: the outputs as `DIR/NAME.npy` files.
//!
//! Each output is first written whole to a new temporary file in `DIR`
//! (`.NAME.npy.XXXXXX.tmp`, created exclusively — `O_CREAT | O_EXCL` — with
//! the mode the umask gives any new file). Only when every output is
//! written, and no `DIR/NAME.npy` is a folder, is each renamed over
//! `DIR/NAME.npy`. So a failed run publishes no output, a reader of
//! `DIR/NAME.npy` sees the old file or the new one and never a part, and
//! the rename replaces whatever was at that name — a symbolic link
//! included — without writing through it. (A rename that fails after
//! others succeeded, say on a full or read-only folder, leaves those
//! others published; temporary files are removed on every error.)

use std::io::{BufWriter, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use kernelkit::spec_file::npy;
use kernelkit::DType;
use tempfile::NamedTempFile;

use crate::failure::CommandError;

/// Outputs written to temporary files in one folder, not yet in place.
pub struct Staged {
    dir: PathBuf,
    files: Vec<(NamedTempFile, PathBuf)>,
}

fn write_error(what: &Path, e: impl std::fmt::Display) -> CommandError {
    CommandError::Write {
        what: what.display().to_string(),
        reason: e.to_string(),
    }
}

impl Staged {
    /// Stages outputs for `dir`, which is created if needed.
    pub fn new(dir: &Path) -> Result<Staged, CommandError> {
        std::fs::create_dir_all(dir).map_err(|e| write_error(dir, e))?;
        Ok(Staged {
            dir: dir.to_path_buf(),
            files: Vec::new(),
        })
    }

    /// Writes one output (`name` is a checked identifier) to a temporary
    /// file; returns the path it will have.
    pub fn add(
        &mut self,
        name: &str,
        bytes: &[u8],
        dtype: DType,
        shape: &[usize],
    ) -> Result<PathBuf, CommandError> {
        let path = self.dir.join(format!("{name}.npy"));
        let mut temp = tempfile::Builder::new()
            .prefix(&format!(".{name}.npy."))
            .suffix(".tmp")
            .permissions(std::fs::Permissions::from_mode(0o666))
            .tempfile_in(&self.dir)
            .map_err(|e| write_error(&path, e))?;
        let mut w = BufWriter::new(temp.as_file_mut());
        npy::write_to(&mut w, bytes, dtype, shape)
            .and_then(|()| w.flush())
            .map_err(|e| write_error(&path, e))?;
        drop(w);
        self.files.push((temp, path.clone()));
        Ok(path)
    }

    /// Renames every staged file into place (after checking that none of
    /// the names is taken by a folder).
    pub fn publish(self) -> Result<(), CommandError> {
        for (_, path) in &self.files {
            if std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir()) {
                return Err(write_error(path, "a folder has that name"));
            }
        }
        for (temp, path) in self.files {
            temp.persist(&path)
                .map_err(|e| write_error(&path, e.error))?;
        }
        Ok(())
    }
}
