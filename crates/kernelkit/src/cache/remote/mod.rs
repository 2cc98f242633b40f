//! The fleet tier: compiled artifacts in a Redis server (or cluster) that
//! every node of a fleet shares, so that each kernel is compiled once per
//! fleet rather than once per node.
//!
//! - **Where it sits.** After the disk store in the module resolver's
//!   tiers: memory → disk → Redis → compile. A hit here is written to the
//!   disk (the next process of the node finds it there); a compile is
//!   written to the disk and here.
//! - **What it stores.** The disk store's entries, byte for byte
//!   ([`crate::cache::entry`]: names, the dependency manifest, the
//!   artifact, a checksum), so an entry whose headers changed on this node
//!   is a miss here as on the disk. Per module key three Redis keys that
//!   share a hash tag (one cluster slot): `kernelkit:{<key>}:entry`,
//!   `…:sig`, `…:lease`. Entries live for the configured TTL (7 days by
//!   default) and the server's `maxmemory` policy evicts beyond its budget.
//! - **Nothing foreign is loaded.** Each entry is signed, HMAC-SHA-256 over
//!   the key and the entry ([`keyring`]); one unsigned, signed by an
//!   unknown secret, badly signed, corrupt, or stored under another key is
//!   a miss counted in `remote_rejected`, never loaded. Without a key file
//!   the tier is off, with one warning.
//! - **One compile per fleet.** A process that misses everywhere takes the
//!   key's lease before it compiles; the others wait for its entry
//!   (bounded), see `lease`.
//! - **Degrade, never fail.** Short connect and command deadlines, a
//!   circuit breaker (`breaker`); every fault is a miss counted in
//!   `remote_errors`, and the time spent here is in `remote_wait_ms`.
//! - **Bounded by what the node says, not the server.** A command (its wait
//!   for the connection, its writes and reads) ends by its deadline however
//!   slowly the server answers, and a reply larger than the entry size
//!   limit is refused from its header before its bytes are read (`server`,
//!   `wire`): an entry refused so counts in `remote_rejected`.

mod admin;
mod breaker;
mod cluster;
pub mod keyring;
mod lease;
mod server;
#[cfg(feature = "remote-tls")]
mod tls;
mod wire;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::cache::entry::{self, EntryError};
use crate::cache::key::ModuleKey;
use crate::cache::tier::{Artifact, ArtifactTier, Claimed, Found, Lookup};
use crate::config::RemoteConfig;
use crate::error::CompileError;
use crate::stats::{CacheStats, Counter};

pub use admin::{
    RemoteCache, RemoteEntryInfo, RemoteError, RemoteStats, RemoteVerifyReport, ServerStats,
};
use keyring::{Keyring, Verdict};
use lease::{Lease, Look};
use server::{Names, OpError, Server};

/// The Redis tier of one device. See the module documentation.
pub(crate) struct RemoteTier {
    server: Arc<Server>,
    keyring: Keyring,
    lease: Duration,
    wait: Duration,
    ttl: Option<Duration>,
    max_entry_bytes: u64,
    counts: Counts,
    /// Set after the first rejected entry and the first failed write were
    /// reported (later ones go to the debug log).
    rejected_warned: AtomicBool,
    write_warned: AtomicBool,
}

/// This tier's counters.
#[derive(Default)]
struct Counts {
    hits: Counter,
    misses: Counter,
    writes: Counter,
    errors: Counter,
    rejected: Counter,
    wait_ns: Counter,
}

/// Writes an entry and its signature at once, with an expiry (`ARGV[3]`
/// milliseconds) or without (`ARGV[3]` = 0).
const PUT: &str = "if ARGV[3] == '0' then \
      redis.call('set', KEYS[1], ARGV[1]) redis.call('set', KEYS[2], ARGV[2]) \
    else \
      redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[3]) \
      redis.call('set', KEYS[2], ARGV[2], 'PX', ARGV[3]) \
    end return 1";

/// Reports once per process that the tier is off.
fn warn_off(why: &str) {
    static WARNED: AtomicBool = AtomicBool::new(false);
    if !WARNED.swap(true, Ordering::Relaxed) {
        tracing::warn!("kernelkit fleet tier: {why}; the fleet tier is off (kernels are compiled on this node)");
    }
}

impl RemoteTier {
    /// The tier `config` asks for, or `None` (not configured, or not
    /// usable: no key, a key file refused, an address that cannot be
    /// used; each said once per process).
    pub(crate) fn for_devices(config: &RemoteConfig) -> Option<RemoteTier> {
        if !config.is_configured() {
            return None;
        }
        let keyring = match Keyring::load(&config.key_files) {
            Ok(k) => k,
            Err(e) => {
                warn_off(&e.to_string());
                return None;
            }
        };
        let server = match Server::new(config) {
            Ok(s) => s,
            Err(e) => {
                warn_off(&e);
                return None;
            }
        };
        tracing::debug!(
            "kernelkit fleet tier: {} (signing key {})",
            server.label(),
            keyring.signing_id()
        );
        Some(RemoteTier {
            server: Arc::new(server),
            keyring,
            lease: config.lease.max(Duration::from_millis(30)),
            wait: config.wait,
            ttl: config.ttl,
            max_entry_bytes: config.max_entry_bytes,
            counts: Counts::default(),
            rejected_warned: AtomicBool::new(false),
            write_warned: AtomicBool::new(false),
        })
    }

    /// Counts the time since `started` as time spent on the fleet tier.
    fn spent(&self, started: Instant) {
        self.counts.wait_ns.add(started.elapsed().as_nanos() as u64);
    }

    /// Counts a command that failed (a skipped one costs nothing and is
    /// not an error: the breaker already counted its cause).
    fn op_failed(&self, what: &str, key: &ModuleKey, e: &OpError) {
        if !matches!(e, OpError::Skipped) {
            self.counts.errors.incr();
            tracing::debug!("kernelkit fleet tier: {what} {key}: {e}");
        }
    }

    /// Counts and reports an entry that is not used.
    fn reject(&self, key: &ModuleKey, why: &str) {
        self.counts.rejected.incr();
        let message = format!(
            "kernelkit fleet tier: entry {key} on {} is not used ({why}); compiling it here",
            self.server.label()
        );
        if self.rejected_warned.swap(true, Ordering::Relaxed) {
            tracing::debug!("{message}");
        } else {
            tracing::warn!("{message}");
        }
    }

    /// Checks a fetched entry (see [`RemoteTier::verify`]), counting and
    /// reporting a rejected one.
    fn check(&self, key: &ModuleKey, bytes: &[u8], sig: Option<&[u8]>) -> Option<Found> {
        match self.verify(key, bytes, sig) {
            Ok(found) => Some(found),
            Err(Refusal::Rejected(why)) => {
                self.reject(key, &why);
                None
            }
            Err(Refusal::NotHere(why)) => {
                tracing::debug!("kernelkit fleet tier: entry {key} {why}; compiling it again");
                None
            }
        }
    }

    /// Checks a fetched entry: size, signature, format, key, then the
    /// dependency manifest against this node's files. Counts nothing.
    fn verify(&self, key: &ModuleKey, bytes: &[u8], sig: Option<&[u8]>) -> Result<Found, Refusal> {
        if bytes.len() as u64 > self.max_entry_bytes {
            return Err(Refusal::Rejected(format!(
                "{} bytes, over the size limit",
                bytes.len()
            )));
        }
        match self.keyring.verify(key, bytes, sig) {
            Verdict::Good => {}
            Verdict::Unsigned => return Err(Refusal::Rejected("unsigned".into())),
            Verdict::UnknownKey(id) => {
                return Err(Refusal::Rejected(format!(
                    "signed by key {id}, which this node does not hold"
                )))
            }
            Verdict::BadSignature(id) => {
                return Err(Refusal::Rejected(format!(
                    "its signature by key {id} does not match"
                )))
            }
        }
        let parsed = match entry::parse(bytes) {
            Ok(p) => p,
            Err(EntryError::Version { found, .. }) => {
                return Err(Refusal::NotHere(format!("has format version {found}")))
            }
            Err(e) => return Err(Refusal::Rejected(e.to_string())),
        };
        if parsed.header.key != *key {
            let e = EntryError::WrongKey {
                found: parsed.header.key,
                expected: *key,
            };
            return Err(Refusal::Rejected(e.to_string()));
        }
        if let Err(stale) = parsed.dependencies.check() {
            return Err(Refusal::NotHere(format!(
                "is out of date on this node ({stale})"
            )));
        }
        Ok(Found::from_entry(parsed))
    }

    /// The entry and signature stored under `key` (`None` for the entry
    /// when there is none).
    fn fetch(&self, key: &ModuleKey) -> Result<Fetched, OpError> {
        let names = Names::of(key);
        self.server
            .run(redis::cmd("MGET").arg(&names.entry).arg(&names.sig))
    }

    /// The signature stored under `key`, after its entry was refused for
    /// its size: what a claim compares with to tell a new entry from it.
    fn fetch_sig(&self, key: &ModuleKey) -> Option<Vec<u8>> {
        let names = Names::of(key);
        self.server.run(redis::cmd("GET").arg(&names.sig)).ok()?
    }
}

/// An entry and its signature as fetched (either may be absent).
type Fetched = (Option<Vec<u8>>, Option<Vec<u8>>);

/// Why a fetched entry is not used.
enum Refusal {
    /// Foreign, corrupt or too large: counted in `remote_rejected`.
    Rejected(String),
    /// Good, but not for this node (another format version, or its
    /// dependencies differ here): a plain miss.
    NotHere(String),
}

impl ArtifactTier for RemoteTier {
    fn get(&self, key: &ModuleKey) -> Lookup {
        let started = Instant::now();
        let found = match self.fetch(key) {
            Ok((Some(bytes), sig)) => match self.check(key, &bytes, sig.as_deref()) {
                Some(found) => Lookup::Hit(Box::new(found)),
                None => Lookup::Unusable {
                    seen: sig.unwrap_or_default(),
                },
            },
            Ok((None, _)) => Lookup::Missing,
            Err(OpError::TooLarge(why)) => {
                self.reject(key, &why);
                Lookup::Unusable {
                    seen: self.fetch_sig(key).unwrap_or_default(),
                }
            }
            Err(e) => {
                self.op_failed("reading", key, &e);
                Lookup::Missing
            }
        };
        self.spent(started);
        found
    }

    fn record_hit(&self) {
        self.counts.hits.incr();
    }

    fn record_miss(&self) {
        self.counts.misses.incr();
    }

    fn record_bad_load(&self, key: &ModuleKey, error: &CompileError) {
        self.counts.errors.incr();
        tracing::warn!(
            "kernelkit fleet tier: entry {key} is signed but did not load ({error}); compiling it here"
        );
    }

    fn claim(&self, key: &ModuleKey, seen: Option<&[u8]>) -> Claimed {
        let started = Instant::now();
        let names = Names::of(key);
        let token = Lease::token();
        let mut pause = lease::FIRST_POLL;
        let claimed = loop {
            match lease::look(
                &self.server,
                &names,
                &token,
                self.lease,
                seen.unwrap_or(&[]),
            ) {
                Ok(Look::Published) => break Claimed::Published,
                Ok(Look::Taken) => {
                    let held = Lease::hold(self.server.clone(), &names, token, self.lease);
                    break Claimed::Held(Box::new(held));
                }
                Ok(Look::Held) => {}
                Err(e) => {
                    self.op_failed("claiming", key, &e);
                    break Claimed::Unclaimed;
                }
            }
            if started.elapsed() >= self.wait {
                tracing::info!(
                    "kernelkit fleet tier: another process has been compiling {key} for {:.0} s; compiling it here too",
                    self.wait.as_secs_f64()
                );
                break Claimed::Unclaimed;
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(lease::MAX_POLL);
        };
        self.spent(started);
        claimed
    }

    fn put(&self, key: &ModuleKey, artifact: &Artifact<'_>) {
        let bytes = match entry::encode(key, artifact) {
            Ok(b) if b.len() as u64 <= self.max_entry_bytes => b,
            Ok(b) => {
                tracing::debug!(
                    "kernelkit fleet tier: entry {key} ({} bytes) is over the size limit; not shared",
                    b.len()
                );
                return;
            }
            Err(e) => {
                tracing::debug!("kernelkit fleet tier: entry {key} is not shared: {e}");
                return;
            }
        };
        let started = Instant::now();
        let sig = self.keyring.sign(key, &bytes);
        let names = Names::of(key);
        let ttl_ms = self.ttl.map_or(0, |t| t.as_millis().max(1) as u64);
        let written: Result<i64, _> = self.server.run(
            redis::cmd("EVAL")
                .arg(PUT)
                .arg(2)
                .arg(&names.entry)
                .arg(&names.sig)
                .arg(&bytes)
                .arg(&sig)
                .arg(ttl_ms),
        );
        match written {
            Ok(_) => self.counts.writes.incr(),
            Err(e) => {
                self.op_failed("writing", key, &e);
                if matches!(e, OpError::Refused(_))
                    && !self.write_warned.swap(true, Ordering::Relaxed)
                {
                    tracing::warn!(
                        "kernelkit fleet tier: {} refused a write ({e}); compiled kernels are not shared while it does",
                        self.server.label()
                    );
                }
            }
        }
        self.spent(started);
    }

    /// Fetches and checks the entry as [`get`](ArtifactTier::get) does
    /// (signature, format, key, dependencies), counting nothing: an
    /// `EXISTS` would answer yes for an entry this node rejects or finds
    /// out of date, and a state query that says "compiled" must mean a
    /// call would load it. A server away or slow answers no (its time is
    /// the tier's timeouts, as for a lookup).
    fn holds(&self, key: &ModuleKey) -> bool {
        match self.fetch(key) {
            Ok((Some(bytes), sig)) => self.verify(key, &bytes, sig.as_deref()).is_ok(),
            Ok((None, _)) | Err(_) => false,
        }
    }

    fn shared(&self) -> bool {
        true
    }

    fn add_stats(&self, stats: &mut CacheStats) {
        stats.remote_hits += self.counts.hits.get();
        stats.remote_misses += self.counts.misses.get();
        stats.remote_writes += self.counts.writes.get();
        stats.remote_errors += self.counts.errors.get();
        stats.remote_rejected += self.counts.rejected.get();
        stats.remote_wait_ns += self.counts.wait_ns.get();
    }
}
