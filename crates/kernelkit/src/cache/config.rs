//! The artifact store's settings, read from the environment.
//!
//! | variable | meaning | default |
//! |---|---|---|
//! | `KERNELKIT_CACHE` | `disk`: memory and disk tiers; `memory` or `off`: no disk tier | `disk` |
//! | `KERNELKIT_CACHE_DIR` | the store directory | `$XDG_CACHE_HOME/kernelkit`, else `~/.cache/kernelkit` (`~/Library/Caches/kernelkit` on macOS) |
//! | `KERNELKIT_CACHE_MAX_BYTES` | size limit, bytes, or with a `K`, `M`, `G` suffix (powers of 1024) | 1 GiB |
//!
//! `off` means the same as `memory`: the device's in-memory kernel cache
//! cannot be switched off, since loaded modules must stay alive while work
//! queued on a stream may still run their code. A value that cannot be
//! parsed is reported once (a warning) and the default is used.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

/// Default size limit of the store: 1 GiB.
pub const DEFAULT_MAX_BYTES: u64 = 1 << 30;

/// Which cache tiers are in use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheMode {
    /// In-memory kernel caches only (what `off` also means; see the module
    /// documentation).
    Memory,
    /// Memory, then the artifact store on disk.
    Disk,
}

/// The settings of the disk tier.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreConfig {
    /// Whether there is a disk tier.
    pub mode: CacheMode,
    /// The directory, if one could be found.
    pub dir: Option<PathBuf>,
    /// The size limit in bytes.
    pub max_bytes: u64,
}

impl StoreConfig {
    /// Reads `KERNELKIT_CACHE`, `KERNELKIT_CACHE_DIR` and
    /// `KERNELKIT_CACHE_MAX_BYTES`.
    pub fn from_env() -> StoreConfig {
        let var = |name: &str| {
            std::env::var(name)
                .ok()
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        let mode = match var("KERNELKIT_CACHE").as_deref() {
            None | Some("disk") => CacheMode::Disk,
            Some("memory") | Some("off") => CacheMode::Memory,
            Some(other) => {
                warn_once(&format!(
                    "KERNELKIT_CACHE={other:?} is not one of off, memory, disk; using disk"
                ));
                CacheMode::Disk
            }
        };
        let max_bytes = match var("KERNELKIT_CACHE_MAX_BYTES") {
            None => DEFAULT_MAX_BYTES,
            Some(v) => parse_size(&v).unwrap_or_else(|| {
                warn_once(&format!(
                    "KERNELKIT_CACHE_MAX_BYTES={v:?} is not a size (e.g. 1073741824, 512M, 2G); using 1 GiB"
                ));
                DEFAULT_MAX_BYTES
            }),
        };
        StoreConfig {
            mode,
            dir: default_dir(),
            max_bytes,
        }
    }
}

/// `KERNELKIT_CACHE_DIR`, else the user's cache directory joined with
/// `kernelkit`; `None` when there is no home directory to put it in.
pub fn default_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("KERNELKIT_CACHE_DIR").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    user_cache_dir().map(|d| d.join("kernelkit"))
}

/// What the XDG base directory spec (Linux) or the platform says.
fn user_cache_dir() -> Option<PathBuf> {
    let absolute = |v: std::ffi::OsString| Some(PathBuf::from(v)).filter(|p| p.is_absolute());
    let home = std::env::var_os("HOME").and_then(absolute);
    if cfg!(target_os = "macos") {
        return home.map(|h| h.join("Library/Caches"));
    }
    std::env::var_os("XDG_CACHE_HOME")
        .and_then(absolute)
        .or_else(|| home.map(|h| h.join(".cache")))
}

/// Parses `123`, `64K`, `512M`, `2G` (also `KiB`/`MiB`/`GiB`, any case).
pub fn parse_size(text: &str) -> Option<u64> {
    let t = text.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (number, suffix) = t.split_at(digits);
    let n: u64 = number.parse().ok()?;
    let shift = match suffix.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kib" => 10,
        "m" | "mib" => 20,
        "g" | "gib" => 30,
        _ => return None,
    };
    n.checked_mul(1u64 << shift)
}

/// Logs a configuration problem once per process.
fn warn_once(message: &str) {
    static WARNED: AtomicBool = AtomicBool::new(false);
    if !WARNED.swap(true, Ordering::Relaxed) {
        tracing::warn!("kernelkit artifact store: {message}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("1073741824"), Some(1 << 30));
        assert_eq!(parse_size("64K"), Some(64 << 10));
        assert_eq!(parse_size("512m"), Some(512 << 20));
        assert_eq!(parse_size("2GiB"), Some(2 << 30));
        assert_eq!(parse_size("0"), Some(0));
        assert_eq!(parse_size("-1"), None);
        assert_eq!(parse_size("1T"), None);
        assert_eq!(parse_size("G"), None);
        assert_eq!(parse_size("99999999999999999999G"), None);
    }
}
