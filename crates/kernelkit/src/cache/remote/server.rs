//! One connection to the fleet's Redis (a server, or a cluster through its
//! seed nodes), with bounded waits and the circuit breaker.
//!
//! Every command goes through [`Server::run`]: it is skipped at once while
//! the breaker is open; otherwise it runs on the connection (made first if
//! there is none: at most the connect timeout), and at most the command
//! timeout passes before it gives up. A connection that failed or timed
//! out is dropped (the next command reconnects) and opens the breaker; an
//! error the server answered with (out of memory, a cluster that is down)
//! leaves both as they are. The synchronous client is used, so no async
//! runtime runs inside the library; the connection is behind a mutex (its
//! commands take microseconds; a command that stalls holds it for at most
//! the command timeout, and the callers queued behind it see the breaker
//! open and skip).

use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use redis::{ConnectionLike, RedisResult};

use crate::cache::key::ModuleKey;
use crate::cache::remote::breaker::{Breaker, Permit};
use crate::config::RemoteConfig;

/// The prefix of every key the tier writes.
pub(crate) const PREFIX: &str = "kernelkit:";

/// The Redis keys of one module key. They share a hash tag (the part in
/// braces), so in a cluster they live in one slot: one `MGET` reads an
/// entry and its signature, one script writes both.
pub(crate) struct Names {
    pub(crate) entry: String,
    pub(crate) sig: String,
    pub(crate) lease: String,
}

impl Names {
    pub(crate) fn of(key: &ModuleKey) -> Names {
        let tag = format!("{PREFIX}{{{key}}}");
        Names {
            entry: format!("{tag}:entry"),
            sig: format!("{tag}:sig"),
            lease: format!("{tag}:lease"),
        }
    }

    /// The module key of an entry's Redis key (`None`: not one of ours).
    pub(crate) fn key_of_entry(name: &[u8]) -> Option<ModuleKey> {
        let name = std::str::from_utf8(name).ok()?;
        let hex = name.strip_prefix(PREFIX)?.strip_prefix('{')?;
        let hex = hex.strip_suffix("}:entry")?;
        ModuleKey::from_hex(hex)
    }
}

/// Why a command did not give an answer.
#[derive(Debug, thiserror::Error)]
pub(crate) enum OpError {
    /// The breaker is open: nothing was asked.
    #[error("the server failed recently; not asked for a while")]
    Skipped,
    /// No connection, or the command timed out or lost its connection.
    #[error("unreachable: {0}")]
    Unreachable(String),
    /// The server answered with an error (out of memory, cluster down, …).
    #[error("the server refused: {0}")]
    Refused(String),
}

/// An open connection.
enum Conn {
    Single(redis::Connection),
    Cluster(Box<redis::cluster::ClusterConnection>),
}

impl Conn {
    fn as_dyn(&mut self) -> &mut dyn ConnectionLike {
        match self {
            Conn::Single(c) => c,
            Conn::Cluster(c) => &mut **c,
        }
    }
}

/// See the module documentation.
pub(crate) struct Server {
    urls: Vec<String>,
    connect_timeout: Duration,
    op_timeout: Duration,
    conn: Mutex<Option<Conn>>,
    pub(crate) breaker: Breaker,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Server({})", self.label())
    }
}

impl Server {
    /// A server for `config`'s address; nothing is connected yet. Fails
    /// when a URL cannot be used at all (a malformed one, `rediss://`
    /// without TLS support built in).
    pub(crate) fn new(config: &RemoteConfig) -> Result<Server, String> {
        for url in &config.urls {
            redis::Client::open(url.as_str()).map_err(|e| format!("{}: {e}", redact(url)))?;
        }
        Ok(Server {
            urls: config.urls.clone(),
            connect_timeout: config.connect_timeout,
            op_timeout: config.op_timeout,
            conn: Mutex::new(None),
            breaker: Breaker::new(config.breaker_cooldown),
        })
    }

    /// The address without passwords, for messages.
    pub(crate) fn label(&self) -> String {
        self.urls
            .iter()
            .map(|u| redact(u))
            .collect::<Vec<_>>()
            .join(",")
    }

    fn lock(&self) -> MutexGuard<'_, Option<Conn>> {
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `f` on the connection (see the module documentation).
    pub(crate) fn run<T>(
        &self,
        f: impl FnOnce(&mut dyn ConnectionLike) -> RedisResult<T>,
    ) -> Result<T, OpError> {
        let permit = self.breaker.allow();
        if permit == Permit::Denied {
            return Err(OpError::Skipped);
        }
        let mut guard = self.lock();
        // It may have opened while this call waited for the connection
        // (another command stalled): skip, unless this is the probe.
        if permit == Permit::Closed && self.breaker.is_open() {
            return Err(OpError::Skipped);
        }
        if guard.is_none() {
            match self.connect() {
                Ok(c) => *guard = Some(c),
                Err(e) => {
                    self.fail(&e.to_string());
                    return Err(OpError::Unreachable(e.to_string()));
                }
            }
        }
        let conn = guard.as_mut().unwrap_or_else(|| unreachable!());
        match f(conn.as_dyn()) {
            Ok(v) => {
                self.breaker.success();
                Ok(v)
            }
            Err(e) if is_connection_fault(&e) => {
                *guard = None;
                self.fail(&e.to_string());
                Err(OpError::Unreachable(e.to_string()))
            }
            Err(e) => Err(OpError::Refused(e.to_string())),
        }
    }

    /// Opens the breaker, reporting it when it was closed.
    fn fail(&self, why: &str) {
        if self.breaker.failure() {
            tracing::warn!(
                "kernelkit fleet tier: {} is not answering ({why}); compiling locally, asking again in a while",
                self.label()
            );
        }
    }

    fn connect(&self) -> RedisResult<Conn> {
        if let [url] = self.urls.as_slice() {
            let client = redis::Client::open(url.as_str())?;
            let mut c = client.get_connection_with_timeout(self.connect_timeout)?;
            c.set_read_timeout(Some(self.op_timeout))?;
            c.set_write_timeout(Some(self.op_timeout))?;
            let info: String = redis::cmd("INFO").arg("cluster").query(&mut c)?;
            if !info.contains("cluster_enabled:1") {
                return Ok(Conn::Single(c));
            }
        }
        self.connect_cluster().map(|c| Conn::Cluster(Box::new(c)))
    }

    fn connect_cluster(&self) -> RedisResult<redis::cluster::ClusterConnection> {
        let client = redis::cluster::ClusterClient::builder(self.urls.iter().map(String::as_str))
            .connection_timeout(self.connect_timeout)
            .response_timeout(self.op_timeout)
            .retries(1)
            .build()?;
        let c = client.get_connection()?;
        c.set_read_timeout(Some(self.op_timeout))?;
        c.set_write_timeout(Some(self.op_timeout))?;
        Ok(c)
    }

    /// A direct connection to each master (one for a single server), for
    /// the commands that walk every key (`SCAN`): the tools' listing,
    /// verification and clearing.
    pub(crate) fn masters(&self) -> RedisResult<Vec<(String, redis::Connection)>> {
        let seed_url = &self.urls[0];
        let seed = redis::Client::open(seed_url.as_str())?;
        let mut c = seed.get_connection_with_timeout(self.connect_timeout)?;
        c.set_read_timeout(Some(self.op_timeout * 4))?;
        let info: String = redis::cmd("INFO").arg("cluster").query(&mut c)?;
        if !info.contains("cluster_enabled:1") {
            return Ok(vec![(redact(seed_url), c)]);
        }
        let nodes: String = redis::cmd("CLUSTER").arg("NODES").query(&mut c)?;
        let mut out = Vec::new();
        for line in nodes.lines() {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (Some(addr), Some(flags)) = (fields.get(1), fields.get(2)) else {
                continue;
            };
            if !flags.split(',').any(|f| f == "master") || flags.contains("fail") {
                continue;
            }
            // `host:port@cport[,hostname]`
            let host_port = addr.split(['@', ',']).next().unwrap_or(addr);
            let url = with_host_port(seed_url, host_port);
            let conn = redis::Client::open(url.as_str())?
                .get_connection_with_timeout(self.connect_timeout)?;
            conn.set_read_timeout(Some(self.op_timeout * 4))?;
            out.push((redact(&url), conn));
        }
        Ok(out)
    }
}

/// Whether an error means the connection is unusable (or the server
/// unreachable or stalled), as opposed to an answer.
fn is_connection_fault(e: &redis::RedisError) -> bool {
    e.is_io_error()
        || e.is_timeout()
        || e.is_connection_dropped()
        || e.is_connection_refusal()
        || e.is_unrecoverable_error()
}

/// `url` with its password replaced by `***`.
pub(crate) fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    match rest.split_once('@') {
        Some((userinfo, host)) if rest.find('/').is_none_or(|s| s > userinfo.len()) => {
            let user = userinfo.split(':').next().unwrap_or("");
            format!("{scheme}://{user}:***@{host}")
        }
        _ => url.to_string(),
    }
}

/// `url` with its `host:port` replaced (scheme, credentials and database
/// kept).
fn with_host_port(url: &str, host_port: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("redis", url));
    let (userinfo, after) = match rest.split_once('@') {
        Some((u, a)) if !u.contains('/') => (Some(u), a),
        _ => (None, rest),
    };
    let tail = after.find('/').map_or("", |i| &after[i..]);
    match userinfo {
        Some(u) => format!("{scheme}://{u}@{host_port}{tail}"),
        None => format!("{scheme}://{host_port}{tail}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_keys_of_one_module_share_a_hash_tag() {
        let key = ModuleKey::derive("cpu", "c++", "f", "x");
        let n = Names::of(&key);
        let tag = |s: &str| s[s.find('{').unwrap()..=s.find('}').unwrap()].to_string();
        assert_eq!(tag(&n.entry), tag(&n.sig));
        assert_eq!(tag(&n.entry), tag(&n.lease));
        assert_eq!(Names::key_of_entry(n.entry.as_bytes()), Some(key));
        assert_eq!(Names::key_of_entry(n.sig.as_bytes()), None);
        assert_eq!(Names::key_of_entry(b"other"), None);
    }

    #[test]
    fn passwords_are_not_shown_and_hosts_are_swapped() {
        assert_eq!(redact("redis://:pw@h:1/0"), "redis://:***@h:1/0");
        assert_eq!(redact("rediss://u:pw@h:1"), "rediss://u:***@h:1");
        assert_eq!(redact("redis://h:1/0"), "redis://h:1/0");
        assert_eq!(
            with_host_port("redis://:pw@a:1/2", "b:3"),
            "redis://:pw@b:3/2"
        );
        assert_eq!(with_host_port("redis://a:1", "b:3"), "redis://b:3");
    }
}
