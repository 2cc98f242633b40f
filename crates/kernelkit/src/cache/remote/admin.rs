//! The fleet tier for tools (`kernelkit cache stats|list|verify|clear
//! --remote`): counts, lists, checks and removes the entries on every
//! master of the server or cluster.
//!
//! These walk the keys with `SCAN` on a direct connection to each master
//! (a cluster's keys are spread over them), so their cost grows with the
//! number of entries; devices never call them.

use std::time::Duration;

use crate::cache::entry::{self, EntryError, Header, MAX_HEADER_BYTES};
use crate::cache::key::ModuleKey;
use crate::cache::remote::keyring::{KeyError, KeyId, Keyring, Verdict};
use crate::cache::remote::server::{Names, Server, PREFIX};
use crate::config::RemoteConfig;

/// Keys asked per `SCAN` step.
const SCAN_COUNT: usize = 500;

/// Why the fleet tier cannot be inspected.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RemoteError {
    /// No address was given.
    #[error("no fleet tier configured (set KERNELKIT_REMOTE_CACHE)")]
    NotConfigured,
    /// The address cannot be used.
    #[error("fleet tier address: {0}")]
    Address(String),
    /// A key file cannot be used (or none was given where one is needed).
    #[error(transparent)]
    Key(#[from] KeyError),
    /// The server did not answer or refused.
    #[error("fleet tier {server}: {message}")]
    Server {
        /// The address (without password).
        server: String,
        /// What went wrong.
        message: String,
    },
}

/// One master's figures.
#[derive(Clone, Debug)]
pub struct ServerStats {
    /// The master's address (without password).
    pub server: String,
    /// kernelkit entries on it.
    pub entries: u64,
    /// Their total size in bytes.
    pub bytes: u64,
    /// The server's memory in use (`used_memory`).
    pub used_memory: u64,
    /// Its budget (`maxmemory`; 0: none).
    pub maxmemory: u64,
    /// What it does when full (`maxmemory-policy`).
    pub policy: String,
}

/// The whole tier's figures ([`RemoteCache::stats`]).
#[derive(Clone, Debug)]
pub struct RemoteStats {
    /// Per master.
    pub servers: Vec<ServerStats>,
    /// The expiry this configuration gives new entries.
    pub ttl: Option<Duration>,
    /// The configured key ids (the signing one first), if keys were given.
    pub key_ids: Vec<KeyId>,
}

/// One entry as `kernelkit cache list --remote` shows it.
#[derive(Debug)]
pub struct RemoteEntryInfo {
    /// Its module key.
    pub key: ModuleKey,
    /// Where it is.
    pub server: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// Time left before it expires (`None`: no expiry).
    pub ttl: Option<Duration>,
    /// The key id its signature names (`None`: no signature).
    pub signer: Option<KeyId>,
    /// What its header says.
    pub header: Result<Header, EntryError>,
}

/// The result of [`RemoteCache::verify`].
#[derive(Debug, Default)]
pub struct RemoteVerifyReport {
    /// Entries whose signature, checksum and key are right.
    pub good: usize,
    /// The others, with why.
    pub bad: Vec<(ModuleKey, String)>,
    /// Entries of another format version (not used, not bad).
    pub other_format: usize,
}

/// A handle on the fleet tier for tools. See the module documentation.
#[derive(Debug)]
pub struct RemoteCache {
    server: Server,
    keyring: Option<Keyring>,
    ttl: Option<Duration>,
}

impl RemoteCache {
    /// The tier `config` names; its key files are read if given (only
    /// [`verify`](RemoteCache::verify) needs them).
    pub fn open(config: &RemoteConfig) -> Result<RemoteCache, RemoteError> {
        if !config.is_configured() {
            return Err(RemoteError::NotConfigured);
        }
        let keyring = if config.key_files.is_empty() {
            None
        } else {
            Some(Keyring::load(&config.key_files)?)
        };
        Ok(RemoteCache {
            server: Server::new(config).map_err(RemoteError::Address)?,
            keyring,
            ttl: config.ttl,
        })
    }

    fn error(&self, e: impl std::fmt::Display) -> RemoteError {
        RemoteError::Server {
            server: self.server.label(),
            message: e.to_string(),
        }
    }

    /// Every entry key on every master, with the master's connection.
    fn walk(
        &self,
        mut each: impl FnMut(&str, &mut redis::Connection, ModuleKey) -> redis::RedisResult<()>,
    ) -> Result<(), RemoteError> {
        let masters = self.server.masters().map_err(|e| self.error(e))?;
        for (label, mut conn) in masters {
            let mut cursor: u64 = 0;
            loop {
                let (next, keys): (u64, Vec<Vec<u8>>) = redis::cmd("SCAN")
                    .arg(cursor)
                    .arg("MATCH")
                    .arg(format!("{PREFIX}*:entry"))
                    .arg("COUNT")
                    .arg(SCAN_COUNT)
                    .query(&mut conn)
                    .map_err(|e| self.error(format!("{label}: {e}")))?;
                for name in keys {
                    if let Some(key) = Names::key_of_entry(&name) {
                        each(&label, &mut conn, key)
                            .map_err(|e| self.error(format!("{label}: {e}")))?;
                    }
                }
                if next == 0 {
                    break;
                }
                cursor = next;
            }
        }
        Ok(())
    }

    /// Entry counts and sizes per master, and each master's memory.
    pub fn stats(&self) -> Result<RemoteStats, RemoteError> {
        let masters = self.server.masters().map_err(|e| self.error(e))?;
        let mut servers = Vec::new();
        for (label, mut conn) in masters {
            let info: String = redis::cmd("INFO")
                .arg("memory")
                .query(&mut conn)
                .map_err(|e| self.error(format!("{label}: {e}")))?;
            let field = |name: &str| {
                info.lines()
                    .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
                    .map(|v| v.trim().to_string())
            };
            servers.push(ServerStats {
                server: label,
                entries: 0,
                bytes: 0,
                used_memory: field("used_memory")
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0),
                maxmemory: field("maxmemory").and_then(|v| v.parse().ok()).unwrap_or(0),
                policy: field("maxmemory_policy").unwrap_or_default(),
            });
        }
        self.walk(|label, conn, key| {
            let len: u64 = redis::cmd("STRLEN")
                .arg(Names::of(&key).entry)
                .query(conn)?;
            if let Some(s) = servers.iter_mut().find(|s| s.server == label) {
                s.entries += 1;
                s.bytes += len;
            }
            Ok(())
        })?;
        Ok(RemoteStats {
            servers,
            ttl: self.ttl,
            key_ids: self.keyring.as_ref().map(Keyring::ids).unwrap_or_default(),
        })
    }

    /// Every entry with what its header says (without checking it).
    pub fn list(&self) -> Result<Vec<RemoteEntryInfo>, RemoteError> {
        let mut out = Vec::new();
        self.walk(|label, conn, key| {
            let names = Names::of(&key);
            let (prefix, len, pttl, sig): (Vec<u8>, u64, i64, Option<Vec<u8>>) = redis::pipe()
                .cmd("GETRANGE")
                .arg(&names.entry)
                .arg(0)
                .arg(MAX_HEADER_BYTES - 1)
                .cmd("STRLEN")
                .arg(&names.entry)
                .cmd("PTTL")
                .arg(&names.entry)
                .cmd("GET")
                .arg(&names.sig)
                .query(conn)?;
            if len == 0 {
                // Gone since the scan.
                return Ok(());
            }
            out.push(RemoteEntryInfo {
                key,
                server: label.to_string(),
                bytes: len,
                ttl: u64::try_from(pttl).ok().map(Duration::from_millis),
                signer: sig.as_deref().and_then(signer_of),
                header: entry::parse_header(&prefix),
            });
            Ok(())
        })?;
        out.sort_by_key(|e| e.key.to_string());
        Ok(out)
    }

    /// Checks every entry as a device would before using it: signature
    /// (needs the key files), checksum, key. The dependency manifest is
    /// not checked (it is about the node that reads the entry).
    pub fn verify(&self) -> Result<RemoteVerifyReport, RemoteError> {
        let Some(keyring) = &self.keyring else {
            return Err(RemoteError::Key(KeyError::None));
        };
        let mut report = RemoteVerifyReport::default();
        self.walk(|_, conn, key| {
            let names = Names::of(&key);
            let (bytes, sig): (Option<Vec<u8>>, Option<Vec<u8>>) = redis::cmd("MGET")
                .arg(&names.entry)
                .arg(&names.sig)
                .query(conn)?;
            let Some(bytes) = bytes else {
                return Ok(());
            };
            let fault = match keyring.verify(&key, &bytes, sig.as_deref()) {
                Verdict::Good => match entry::parse(&bytes) {
                    Ok(e) if e.header.key == key => None,
                    Ok(e) => Some(
                        EntryError::WrongKey {
                            found: e.header.key,
                            expected: key,
                        }
                        .to_string(),
                    ),
                    Err(EntryError::Version { .. }) => {
                        report.other_format += 1;
                        return Ok(());
                    }
                    Err(e) => Some(e.to_string()),
                },
                Verdict::Unsigned => Some("unsigned".into()),
                Verdict::UnknownKey(id) => Some(format!("signed by unknown key {id}")),
                Verdict::BadSignature(id) => Some(format!("bad signature (key {id})")),
            };
            match fault {
                None => report.good += 1,
                Some(why) => report.bad.push((key, why)),
            }
            Ok(())
        })?;
        Ok(report)
    }

    /// Removes every kernelkit key (entries, signatures, leases); returns
    /// the number of entries removed.
    pub fn clear(&self) -> Result<usize, RemoteError> {
        let masters = self.server.masters().map_err(|e| self.error(e))?;
        let mut entries = 0;
        for (label, mut conn) in masters {
            let mut cursor: u64 = 0;
            loop {
                let (next, keys): (u64, Vec<Vec<u8>>) = redis::cmd("SCAN")
                    .arg(cursor)
                    .arg("MATCH")
                    .arg(format!("{PREFIX}*"))
                    .arg("COUNT")
                    .arg(SCAN_COUNT)
                    .query(&mut conn)
                    .map_err(|e| self.error(format!("{label}: {e}")))?;
                // One key per command: a cluster node refuses a command
                // whose keys are in several slots.
                let mut pipe = redis::pipe();
                for k in &keys {
                    pipe.cmd("UNLINK").arg(k).ignore();
                    if Names::key_of_entry(k).is_some() {
                        entries += 1;
                    }
                }
                if !keys.is_empty() {
                    pipe.exec(&mut conn)
                        .map_err(|e| self.error(format!("{label}: {e}")))?;
                }
                if next == 0 {
                    break;
                }
                cursor = next;
            }
        }
        Ok(entries)
    }
}

/// The key id a signature value names.
fn signer_of(sig: &[u8]) -> Option<KeyId> {
    KeyId::from_signature(sig)
}
