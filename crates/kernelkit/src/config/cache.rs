//! The artifact store's settings.
//!
//! `off` means the same as `memory`: the device's in-memory kernel cache
//! cannot be switched off, since loaded modules must stay alive while work
//! queued on a stream may still run their code.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

use super::remote::RemoteConfig;
use super::{warn_once, Vars};

/// Default size limit of the store: 1 GiB.
pub const DEFAULT_MAX_BYTES: u64 = 1 << 30;

/// Default size limit of a bundle file that `kernelkit cache import`
/// reads: 1 GiB, far more than any set of compiled kernels. A bundle is
/// read whole into memory (and verified there), so the limit bounds what
/// one import may hold.
pub const DEFAULT_BUNDLE_MAX_BYTES: u64 = 1 << 30;

/// Default most modules one device keeps loaded: 4,096. Generous: a
/// program that uses fewer distinct kernels never unloads one; a service
/// that generates kernels without end stays bounded.
pub const DEFAULT_MAX_LOADED_MODULES: usize = 4096;

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
#[non_exhaustive]
pub struct CacheConfig {
    /// Whether there is a disk tier (`KERNELKIT_CACHE`).
    pub mode: CacheMode,
    /// The store directory (`KERNELKIT_CACHE_DIR`, else the user's cache
    /// directory), if one is known: without one there is no disk tier.
    pub dir: Option<PathBuf>,
    /// The size limit in bytes (`KERNELKIT_CACHE_MAX_BYTES`); least
    /// recently used entries go first.
    pub max_bytes: u64,
    /// The file of Ed25519 public keys whose bundles may be imported
    /// (`KERNELKIT_TRUSTED_KEYS`; see [`crate::cache::bundle`]). Without
    /// one, no bundle is imported.
    pub trusted_keys: Option<PathBuf>,
    /// The largest bundle file `kernelkit cache import` reads
    /// (`KERNELKIT_BUNDLE_MAX_BYTES`): a bundle is held whole in memory
    /// while it is verified, so a larger file is refused before it is read.
    pub bundle_max_bytes: u64,
    /// The user's home directory (`HOME`): an exported bundle never holds
    /// an entry whose dependency list names a path under it, since such a
    /// path means nothing on another machine or for another user.
    pub home: Option<PathBuf>,
    /// The fleet tier under the disk tier (Redis; off unless an address
    /// and a key are given: see [`RemoteConfig`]).
    pub remote: RemoteConfig,
    /// Modules one device keeps loaded (`KERNELKIT_MAX_LOADED_MODULES`, at
    /// least 1): past it, the module least recently used is unloaded once
    /// every launch that used it has completed (see
    /// `cache::kernel_cache`); a pinned module is never unloaded. The
    /// process-wide CUDA devices' shared artifact pool keeps the compiled
    /// artifacts of twice this many modules (`cache::artifact_pool`).
    pub max_loaded_modules: usize,
}

/// No disk tier (no directory is known without the environment), the
/// default size limit.
impl Default for CacheConfig {
    fn default() -> CacheConfig {
        CacheConfig {
            mode: CacheMode::Memory,
            dir: None,
            max_bytes: DEFAULT_MAX_BYTES,
            trusted_keys: None,
            bundle_max_bytes: DEFAULT_BUNDLE_MAX_BYTES,
            home: None,
            remote: RemoteConfig::default(),
            max_loaded_modules: DEFAULT_MAX_LOADED_MODULES,
        }
    }
}

/// Set once the store's settings were warned about.
static WARNED: AtomicBool = AtomicBool::new(false);

impl CacheConfig {
    /// `KERNELKIT_CACHE`, `KERNELKIT_CACHE_DIR`, `KERNELKIT_CACHE_MAX_BYTES`,
    /// `KERNELKIT_TRUSTED_KEYS`, `KERNELKIT_BUNDLE_MAX_BYTES` (and `HOME`, `XDG_CACHE_HOME` for the
    /// default directory), and the fleet tier's `KERNELKIT_REMOTE_*`.
    pub(super) fn from_vars(vars: &Vars<'_>) -> CacheConfig {
        let warn = |message: String| {
            warn_once(&WARNED, &format!("kernelkit artifact store: {message}"));
        };
        let mode = match vars.trimmed("KERNELKIT_CACHE").as_deref() {
            None | Some("disk") => CacheMode::Disk,
            Some("memory") | Some("off") => CacheMode::Memory,
            Some(other) => {
                warn(format!(
                    "KERNELKIT_CACHE={other:?} is not one of off, memory, disk; using disk"
                ));
                CacheMode::Disk
            }
        };
        let max_bytes = match vars.trimmed("KERNELKIT_CACHE_MAX_BYTES") {
            None => DEFAULT_MAX_BYTES,
            Some(v) => parse_size(&v).unwrap_or_else(|| {
                warn(format!(
                    "KERNELKIT_CACHE_MAX_BYTES={v:?} is not a size (e.g. 1073741824, 512M, 2G); \
                     using 1 GiB"
                ));
                DEFAULT_MAX_BYTES
            }),
        };
        let bundle_max_bytes = match vars.trimmed("KERNELKIT_BUNDLE_MAX_BYTES") {
            None => DEFAULT_BUNDLE_MAX_BYTES,
            Some(v) => parse_size(&v).unwrap_or_else(|| {
                warn(format!(
                    "KERNELKIT_BUNDLE_MAX_BYTES={v:?} is not a size (e.g. 1073741824, 512M, 2G); \
                     using 1 GiB"
                ));
                DEFAULT_BUNDLE_MAX_BYTES
            }),
        };
        let max_loaded_modules = match vars.trimmed("KERNELKIT_MAX_LOADED_MODULES") {
            None => DEFAULT_MAX_LOADED_MODULES,
            Some(v) => match v.parse::<usize>() {
                Ok(n) if n >= 1 => n,
                _ => {
                    warn(format!(
                        "KERNELKIT_MAX_LOADED_MODULES={v:?} is not a count of at least 1; \
                         using {DEFAULT_MAX_LOADED_MODULES}"
                    ));
                    DEFAULT_MAX_LOADED_MODULES
                }
            },
        };
        let dir = match vars.os_nonempty("KERNELKIT_CACHE_DIR") {
            Some(dir) => Some(PathBuf::from(dir)),
            None => user_cache_dir(vars).map(|d| d.join("kernelkit")),
        };
        CacheConfig {
            mode,
            dir,
            max_bytes,
            trusted_keys: vars
                .os_nonempty("KERNELKIT_TRUSTED_KEYS")
                .map(PathBuf::from),
            bundle_max_bytes,
            home: vars
                .os("HOME")
                .map(PathBuf::from)
                .filter(|p| p.is_absolute()),
            remote: RemoteConfig::from_vars(vars),
            max_loaded_modules,
        }
    }
}

/// What the XDG base directory spec (Linux) or the platform says.
fn user_cache_dir(vars: &Vars<'_>) -> Option<PathBuf> {
    let absolute = |v: std::ffi::OsString| Some(PathBuf::from(v)).filter(|p| p.is_absolute());
    let home = vars.os("HOME").and_then(absolute);
    if cfg!(target_os = "macos") {
        return home.map(|h| h.join("Library/Caches"));
    }
    vars.os("XDG_CACHE_HOME")
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
