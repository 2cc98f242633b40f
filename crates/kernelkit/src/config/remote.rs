//! The fleet tier's settings: where the Redis server (or cluster) is, which
//! secrets sign and verify its entries, and how long it may make a call
//! wait.
//!
//! The address (`KERNELKIT_REMOTE_CACHE`) is one URL, `redis://host:port/db`
//! (`rediss://` for TLS, the server's certificate checked against the
//! system's root certificates or `SSL_CERT_FILE`; `#insecure` is refused;
//! `redis://:password@host:port` or
//! `redis://user:password@host:port` with a password), or several separated
//! by commas: the seed nodes of a Redis Cluster. A single URL whose server
//! turns out to be a cluster node is used as a cluster seed too.
//!
//! The key files (`KERNELKIT_REMOTE_KEY_FILE`): one path, or several
//! separated by `:` for a rotation: the first signs, every one verifies.
//! Their checks (size, permissions) are made when a device opens the tier
//! (`cache::remote`): without a usable key the tier stays off.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use super::{warn_once, Vars};

/// How long a connection attempt may take. A Redis of the same network
/// answers in well under a millisecond; the margin is for a node whose
/// cores are all busy compiling (a stalled server costs this once, then
/// the breaker skips it).
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
/// How long one command may take (see [`DEFAULT_CONNECT_TIMEOUT`]).
pub const DEFAULT_OP_TIMEOUT: Duration = Duration::from_secs(1);
/// How long a compile lease lives unless renewed (it is renewed every third
/// of this while the compile runs).
pub const DEFAULT_LEASE: Duration = Duration::from_secs(10);
/// How long a process waits for another one's compile before compiling.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(30);
/// How long an entry lives in Redis after it was written: 7 days.
pub const DEFAULT_TTL: Duration = Duration::from_secs(7 * 24 * 3600);
/// How long the tier stops asking a server that failed.
pub const DEFAULT_BREAKER_COOLDOWN: Duration = Duration::from_secs(5);
/// The largest entry the tier writes or reads: 64 MiB.
pub const DEFAULT_MAX_ENTRY_BYTES: u64 = 64 << 20;

/// The settings of the fleet tier. [`RemoteConfig::default`] is off.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RemoteConfig {
    /// The server's URL, or a cluster's seed nodes (`KERNELKIT_REMOTE_CACHE`);
    /// empty: no fleet tier.
    pub urls: Vec<String>,
    /// The secrets' files (`KERNELKIT_REMOTE_KEY_FILE`): the first signs,
    /// every one verifies. Empty: the tier stays off (with a warning when
    /// an address is set).
    pub key_files: Vec<PathBuf>,
    /// Connection attempts (the TCP connect, the TLS handshake for
    /// `rediss://`, `AUTH`, `SELECT`) give up after this
    /// (`KERNELKIT_REMOTE_TIMEOUT`, seconds, sets both timeouts).
    pub connect_timeout: Duration,
    /// One command's deadline: its wait for the connection, its writes and
    /// its whole reply, however slowly the server sends (the bytes of its
    /// TLS records too, over `rediss://`; a command that
    /// connects first may take `connect_timeout` more). Past it the command
    /// fails and the breaker opens.
    pub op_timeout: Duration,
    /// The compile lease's lifetime (renewed while the compile runs).
    pub lease: Duration,
    /// The longest a process waits for another one's compile
    /// (`KERNELKIT_REMOTE_WAIT`, seconds).
    pub wait: Duration,
    /// How long entries live in Redis (`KERNELKIT_REMOTE_TTL`, seconds;
    /// `0`: until the server evicts them).
    pub ttl: Option<Duration>,
    /// After a failed connection or a command that timed out, the tier
    /// asks nothing for this long (then one call tries again).
    pub breaker_cooldown: Duration,
    /// Entries over this size are neither written nor read: a reply that
    /// announces a value over it is refused from its header, and a whole
    /// reply is held to it plus 64 KiB (`redis://` and `rediss://` alike).
    pub max_entry_bytes: u64,
}

impl Default for RemoteConfig {
    fn default() -> RemoteConfig {
        RemoteConfig {
            urls: Vec::new(),
            key_files: Vec::new(),
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            op_timeout: DEFAULT_OP_TIMEOUT,
            lease: DEFAULT_LEASE,
            wait: DEFAULT_WAIT,
            ttl: Some(DEFAULT_TTL),
            breaker_cooldown: DEFAULT_BREAKER_COOLDOWN,
            max_entry_bytes: DEFAULT_MAX_ENTRY_BYTES,
        }
    }
}

/// Why an address is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RemoteAddressError {
    /// One of the comma-separated parts is not a `redis://` or `rediss://`
    /// URL.
    #[error("`{0}` is not a redis:// or rediss:// URL")]
    Scheme(String),
    /// No URL at all.
    #[error("no URL given")]
    Empty,
}

/// Parses `KERNELKIT_REMOTE_CACHE`'s format: one URL, or a cluster's seed
/// nodes separated by commas (blanks around them are ignored).
pub fn parse_remote_urls(text: &str) -> Result<Vec<String>, RemoteAddressError> {
    let urls: Vec<String> = text
        .split(',')
        .map(str::trim)
        .filter(|u| !u.is_empty())
        .map(str::to_string)
        .collect();
    if urls.is_empty() {
        return Err(RemoteAddressError::Empty);
    }
    for u in &urls {
        let lower = u.to_ascii_lowercase();
        if !(lower.starts_with("redis://") || lower.starts_with("rediss://")) {
            return Err(RemoteAddressError::Scheme(u.clone()));
        }
    }
    Ok(urls)
}

/// Set once the tier's settings were warned about.
static WARNED: AtomicBool = AtomicBool::new(false);

impl RemoteConfig {
    /// Whether an address is set (the tier may still stay off: no key).
    pub fn is_configured(&self) -> bool {
        !self.urls.is_empty()
    }

    /// `KERNELKIT_REMOTE_CACHE`, `KERNELKIT_REMOTE_KEY_FILE`,
    /// `KERNELKIT_REMOTE_TTL`, `KERNELKIT_REMOTE_WAIT`,
    /// `KERNELKIT_REMOTE_TIMEOUT`.
    pub(super) fn from_vars(vars: &Vars<'_>) -> RemoteConfig {
        let warn = |message: String| {
            warn_once(&WARNED, &format!("kernelkit fleet tier: {message}"));
        };
        let mut c = RemoteConfig::default();
        if let Some(v) = vars.trimmed("KERNELKIT_REMOTE_CACHE") {
            match parse_remote_urls(&v) {
                Ok(urls) => c.urls = urls,
                Err(e) => warn(format!(
                    "KERNELKIT_REMOTE_CACHE: {e} (expected redis://host:port/db, rediss://…, \
                     or cluster seeds separated by commas); the fleet tier is off"
                )),
            }
        }
        if let Some(v) = vars.os_nonempty("KERNELKIT_REMOTE_KEY_FILE") {
            c.key_files = std::env::split_paths(&v)
                .filter(|p| !p.as_os_str().is_empty())
                .collect();
        }
        let seconds = |name: &str, default: Duration| -> Option<Duration> {
            let v = vars.trimmed(name)?;
            match v.parse::<f64>() {
                Ok(s) if s.is_finite() && (0.0..1e9).contains(&s) => {
                    Some(Duration::from_secs_f64(s))
                }
                _ => {
                    warn(format!(
                        "{name}={v:?} is not a number of seconds; using {} s",
                        default.as_secs()
                    ));
                    None
                }
            }
        };
        if let Some(ttl) = seconds("KERNELKIT_REMOTE_TTL", DEFAULT_TTL) {
            c.ttl = Some(ttl).filter(|t| !t.is_zero());
        }
        if let Some(wait) = seconds("KERNELKIT_REMOTE_WAIT", DEFAULT_WAIT) {
            c.wait = wait;
        }
        if let Some(t) = seconds("KERNELKIT_REMOTE_TIMEOUT", DEFAULT_OP_TIMEOUT) {
            if !t.is_zero() {
                c.connect_timeout = t;
                c.op_timeout = t;
            }
        }
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::tests::config_of;

    #[test]
    fn urls_and_cluster_seeds_parse() {
        assert_eq!(
            parse_remote_urls("redis://127.0.0.1:6379/0").unwrap(),
            ["redis://127.0.0.1:6379/0"]
        );
        assert_eq!(
            parse_remote_urls(" redis://a:7000, rediss://b:7001 ,").unwrap(),
            ["redis://a:7000", "rediss://b:7001"]
        );
        assert_eq!(
            parse_remote_urls("http://a:1").unwrap_err(),
            RemoteAddressError::Scheme("http://a:1".into())
        );
        assert_eq!(
            parse_remote_urls(" , ").unwrap_err(),
            RemoteAddressError::Empty
        );
    }

    #[test]
    fn the_variables_land_in_their_fields() {
        let c = config_of(&[
            ("KERNELKIT_REMOTE_CACHE", "redis://a:1,redis://b:2"),
            ("KERNELKIT_REMOTE_KEY_FILE", "/k/new:/k/old"),
            ("KERNELKIT_REMOTE_TTL", "3600"),
            ("KERNELKIT_REMOTE_WAIT", "2.5"),
            ("KERNELKIT_REMOTE_TIMEOUT", "0.1"),
        ])
        .cache
        .remote;
        assert_eq!(c.connect_timeout, Duration::from_millis(100));
        assert_eq!(c.op_timeout, Duration::from_millis(100));
        assert_eq!(c.urls, ["redis://a:1", "redis://b:2"]);
        assert_eq!(c.key_files, ["/k/new", "/k/old"].map(PathBuf::from));
        assert_eq!(c.ttl, Some(Duration::from_secs(3600)));
        assert_eq!(c.wait, Duration::from_millis(2500));
        let zero = config_of(&[("KERNELKIT_REMOTE_TTL", "0")]).cache.remote;
        assert_eq!(zero.ttl, None, "0: no expiry");
    }

    #[test]
    fn unset_or_bad_values_leave_the_tier_off_or_at_its_defaults() {
        let d = config_of(&[]).cache.remote;
        assert_eq!(d, RemoteConfig::default());
        assert!(!d.is_configured());
        let bad = config_of(&[
            ("KERNELKIT_REMOTE_CACHE", "memcached://x"),
            ("KERNELKIT_REMOTE_TTL", "soon"),
            ("KERNELKIT_REMOTE_WAIT", "-1"),
        ])
        .cache
        .remote;
        assert!(!bad.is_configured());
        assert_eq!(bad.ttl, Some(DEFAULT_TTL));
        assert_eq!(bad.wait, DEFAULT_WAIT);
    }
}
