//! One connection to the fleet's Redis (a server, or a cluster through its
//! seed nodes), with bounded waits and the circuit breaker.
//!
//! Every command goes through [`Server::run`]: it is skipped at once while
//! the breaker is open; otherwise it takes the connection (waiting for
//! another command that holds it no longer than its own deadline), makes
//! it if there is none (at most the connect timeout), and runs. A command
//! has one deadline, the command timeout (`KERNELKIT_REMOTE_TIMEOUT`) from
//! its start, plus the time a connect took: the wait for the connection
//! and every write and read share it. A command past its deadline, and a
//! connection that failed, open the breaker and drop the connection (the
//! next command reconnects); an error the server answered with (out of
//! memory, a cluster that is down) leaves both as they are. A reply larger
//! than the entry size limit drops the connection (its rest is never read)
//! without opening the breaker: it is one entry's fault.
//!
//! A server or cluster, plain (`redis://`) or TLS (`rediss://`, the
//! `remote-tls` feature), is spoken to through [`wire`](super::wire) (a
//! cluster's routing in [`cluster`](super::cluster)), which holds every
//! command, its TLS records included, to its deadline and refuses a reply
//! over the size limit from its framing. The `redis` crate packs the
//! commands and parses the framed replies; its clients serve only the
//! operator tools' walk over every key ([`Server::masters`]). No async
//! runtime runs inside the library.

use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use redis::{ConnectionAddr, FromRedisValue, RedisResult};

use crate::cache::key::ModuleKey;
use crate::cache::remote::breaker::{Breaker, Permit};
use crate::cache::remote::cluster::{Auth, Cluster, ClusterFault};
use crate::cache::remote::wire::{Bounds, Transport, Wire, WireError};
use crate::config::RemoteConfig;

/// The prefix of every key the tier writes.
pub(crate) const PREFIX: &str = "kernelkit:";

/// What a reply may hold beyond one entry: its signature, the framing, a
/// short `INFO` section.
const REPLY_SLACK: u64 = 64 << 10;

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
    /// No connection, or the command passed its deadline or lost its
    /// connection.
    #[error("unreachable: {0}")]
    Unreachable(String),
    /// The server answered with an error (out of memory, cluster down, …),
    /// or with a value of another type than the command gives.
    #[error("the server refused: {0}")]
    Refused(String),
    /// The reply is over the size limit (refused from its framing; the
    /// connection was dropped).
    #[error("{0}")]
    TooLarge(String),
}

/// How a command on an open connection failed.
enum Fault {
    /// The server answered, with an error or a value of another type.
    Answer(String),
    /// The reply is over the size limit.
    TooLarge(String),
    /// Past the deadline, or the connection failed.
    Connection(String),
}

impl Fault {
    fn of_wire(e: WireError) -> Fault {
        match e {
            WireError::TooLarge { .. } => Fault::TooLarge(e.to_string()),
            WireError::Timeout(_) | WireError::Io(_) | WireError::Protocol(_) => {
                Fault::Connection(e.to_string())
            }
            #[cfg(feature = "remote-tls")]
            WireError::Tls(_) => Fault::Connection(e.to_string()),
        }
    }
}

/// Runs `cmd` on `wire` before `deadline`, converting its reply.
fn wire_query<T: FromRedisValue>(
    wire: &mut Wire,
    cmd: &redis::Cmd,
    deadline: Instant,
) -> Result<T, Fault> {
    let value = wire
        .command(&cmd.get_packed_command(), deadline)
        .map_err(Fault::of_wire)?;
    let value = value
        .extract_error()
        .map_err(|e| Fault::Answer(e.to_string()))?;
    redis::from_redis_value(value).map_err(|e| Fault::Answer(e.to_string()))
}

/// An open connection (plain or TLS alike).
enum Conn {
    /// A server, through the bounded reader.
    Wire(Wire),
    /// A cluster, through the bounded reader.
    Cluster(Box<Cluster>),
}

impl Conn {
    fn query<T: FromRedisValue>(
        &mut self,
        cmd: &redis::Cmd,
        deadline: Instant,
    ) -> Result<T, Fault> {
        match self {
            Conn::Wire(w) => wire_query(w, cmd, deadline),
            Conn::Cluster(c) => c.query(cmd, deadline).map_err(|f| match f {
                ClusterFault::Answer(e) => Fault::Answer(e),
                ClusterFault::TooLarge(e) => Fault::TooLarge(e),
                ClusterFault::Connection(e) => Fault::Connection(e),
            }),
        }
    }
}

/// The connection and whether a command holds it.
struct Slot {
    busy: bool,
    conn: Option<Conn>,
}

/// The connection taken by one command; given back when dropped.
struct Checkout<'a> {
    server: &'a Server,
    conn: Option<Conn>,
}

impl Drop for Checkout<'_> {
    fn drop(&mut self) {
        let mut slot = self.server.lock();
        slot.busy = false;
        slot.conn = self.conn.take();
        drop(slot);
        self.server.freed.notify_one();
    }
}

/// See the module documentation.
pub(crate) struct Server {
    urls: Vec<String>,
    /// `(host, port)` of each URL.
    seeds: Vec<(String, u16)>,
    /// Whether the URLs are `rediss://`.
    tls: bool,
    /// The first URL's credentials (every node takes them).
    auth: Auth,
    /// The first URL's database (a single server's only).
    db: i64,
    /// Made at the first connect (TLS: reads the root certificates).
    transport: OnceLock<Transport>,
    connect_timeout: Duration,
    op_timeout: Duration,
    bounds: Bounds,
    slot: Mutex<Slot>,
    /// Signalled when a command gives the connection back.
    freed: Condvar,
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
    /// without TLS support built in, one marked `#insecure`, seeds that
    /// mix `redis://` and `rediss://`).
    pub(crate) fn new(config: &RemoteConfig) -> Result<Server, String> {
        let mut seeds = Vec::with_capacity(config.urls.len());
        let mut kinds = Vec::with_capacity(config.urls.len());
        let mut first = None;
        for url in &config.urls {
            let client =
                redis::Client::open(url.as_str()).map_err(|e| format!("{}: {e}", redact(url)))?;
            let info = client.get_connection_info().clone();
            match info.addr() {
                ConnectionAddr::Tcp(host, port) => {
                    seeds.push((host.clone(), *port));
                    kinds.push(false);
                }
                ConnectionAddr::TcpTls {
                    host,
                    port,
                    insecure,
                    ..
                } => {
                    if *insecure {
                        return Err(format!(
                            "{}: `#insecure` is not supported: the server's certificate is always verified",
                            redact(url)
                        ));
                    }
                    seeds.push((host.clone(), *port));
                    kinds.push(true);
                }
                _ => return Err(format!("{}: not a TCP address", redact(url))),
            }
            first.get_or_insert(info);
        }
        let Some(first) = first else {
            return Err("no address".into());
        };
        let tls = kinds[0];
        if kinds.iter().any(|&k| k != tls) {
            return Err(format!(
                "{}: the seeds mix `redis://` and `rediss://`",
                config
                    .urls
                    .iter()
                    .map(|u| redact(u))
                    .collect::<Vec<_>>()
                    .join(",")
            ));
        }
        let settings = first.redis_settings();
        Ok(Server {
            urls: config.urls.clone(),
            seeds,
            tls,
            auth: Auth {
                username: settings.username().map(str::to_string),
                password: settings.password().map(str::to_string),
            },
            db: settings.db(),
            transport: OnceLock::new(),
            connect_timeout: config.connect_timeout,
            op_timeout: config.op_timeout,
            bounds: Bounds {
                max_bulk: config.max_entry_bytes,
                max_reply: config.max_entry_bytes.saturating_add(REPLY_SLACK),
            },
            slot: Mutex::new(Slot {
                busy: false,
                conn: None,
            }),
            freed: Condvar::new(),
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

    fn lock(&self) -> MutexGuard<'_, Slot> {
        self.slot.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes the connection (or the right to make it), waiting for the
    /// command that holds it until `deadline` at most.
    fn checkout(&self, deadline: Instant) -> Option<Checkout<'_>> {
        let mut slot = self.lock();
        while slot.busy {
            let left = deadline.checked_duration_since(Instant::now())?;
            if left.is_zero() {
                return None;
            }
            slot = match self.freed.wait_timeout(slot, left) {
                Ok((s, _)) => s,
                Err(p) => p.into_inner().0,
            };
        }
        slot.busy = true;
        let conn = slot.conn.take();
        drop(slot);
        Some(Checkout { server: self, conn })
    }

    /// Runs `cmd` (see the module documentation).
    pub(crate) fn run<T: FromRedisValue>(&self, cmd: &redis::Cmd) -> Result<T, OpError> {
        let permit = self.breaker.allow();
        if permit == Permit::Denied {
            return Err(OpError::Skipped);
        }
        let started = Instant::now();
        let mut deadline = started + self.op_timeout;
        let Some(mut held) = self.checkout(deadline) else {
            let why = format!(
                "another command held the connection past this one's {:.1} s deadline",
                self.op_timeout.as_secs_f64()
            );
            self.fail(&why);
            return Err(OpError::Unreachable(why));
        };
        // It may have opened while this call waited for the connection
        // (another command stalled): skip, unless this is the probe.
        if permit == Permit::Closed && self.breaker.is_open() {
            return Err(OpError::Skipped);
        }
        if held.conn.is_none() {
            let connecting = Instant::now();
            match self.connect(connecting + self.connect_timeout) {
                Ok(c) => held.conn = Some(c),
                Err(e) => {
                    self.fail(&e);
                    return Err(OpError::Unreachable(e));
                }
            }
            deadline += connecting.elapsed();
        }
        let conn = held.conn.as_mut().unwrap_or_else(|| unreachable!());
        match conn.query(cmd, deadline) {
            Ok(v) => {
                self.breaker.success();
                Ok(v)
            }
            Err(Fault::Answer(e)) => Err(OpError::Refused(e)),
            Err(Fault::TooLarge(e)) => {
                held.conn = None;
                Err(OpError::TooLarge(e))
            }
            Err(Fault::Connection(e)) => {
                held.conn = None;
                self.fail(&e);
                Err(OpError::Unreachable(e))
            }
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

    /// How connections are made: plain, or TLS with the system's root
    /// certificates (read once, at the first connect that needs them).
    fn transport(&self) -> Result<Transport, String> {
        if let Some(t) = self.transport.get() {
            return Ok(t.clone());
        }
        let made = if self.tls {
            tls_transport()?
        } else {
            Transport::Plain
        };
        Ok(self.transport.get_or_init(|| made).clone())
    }

    /// A connection (and, for a single server, its `AUTH`, `SELECT` and
    /// the `INFO` that says whether it is a cluster), made before
    /// `deadline`.
    fn connect(&self, deadline: Instant) -> Result<Conn, String> {
        let transport = self.transport()?;
        if let [(host, port)] = self.seeds.as_slice() {
            let mut w = Wire::connect(host, *port, deadline, self.bounds, &transport)
                .map_err(|e| e.to_string())?;
            let say = |f: Fault| match f {
                Fault::Answer(e) | Fault::TooLarge(e) | Fault::Connection(e) => e,
            };
            if let Some(password) = &self.auth.password {
                let mut cmd = redis::cmd("AUTH");
                if let Some(user) = &self.auth.username {
                    cmd.arg(user);
                }
                cmd.arg(password);
                wire_query::<()>(&mut w, &cmd, deadline).map_err(say)?;
            }
            if self.db != 0 {
                let select = redis::cmd("SELECT").arg(self.db).clone();
                wire_query::<()>(&mut w, &select, deadline).map_err(say)?;
            }
            let info: String =
                wire_query(&mut w, redis::cmd("INFO").arg("cluster"), deadline).map_err(say)?;
            if !info.contains("cluster_enabled:1") {
                return Ok(Conn::Wire(w));
            }
        }
        let seeds: Vec<String> = self
            .seeds
            .iter()
            .map(|(host, port)| format!("{host}:{port}"))
            .collect();
        Cluster::connect(&seeds, self.auth.clone(), self.bounds, transport, deadline)
            .map(|c| Conn::Cluster(Box::new(c)))
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

/// The TLS transport, with the system's root certificates.
#[cfg(feature = "remote-tls")]
fn tls_transport() -> Result<Transport, String> {
    crate::cache::remote::tls::client_config().map(Transport::Tls)
}

/// Without the `remote-tls` feature a `rediss://` address does not parse,
/// so no server asks for TLS.
#[cfg(not(feature = "remote-tls"))]
fn tls_transport() -> Result<Transport, String> {
    Err("TLS support is not built in (the `remote-tls` feature)".into())
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

    #[cfg(feature = "remote-tls")]
    #[test]
    fn tls_addresses_are_read_and_unverified_or_mixed_ones_refused() {
        let with = |urls: &[&str]| {
            Server::new(&RemoteConfig {
                urls: urls.iter().map(|u| u.to_string()).collect(),
                ..RemoteConfig::default()
            })
        };
        let s = with(&["rediss://u:pw@h:7001/2"]).unwrap();
        assert!(s.tls);
        assert_eq!(s.seeds, [("h".to_string(), 7001)]);
        assert_eq!(
            (s.auth.username.as_deref(), s.auth.password.as_deref(), s.db),
            (Some("u"), Some("pw"), 2)
        );
        let e = with(&["rediss://h:1/#insecure"]).unwrap_err();
        assert!(e.contains("#insecure"), "{e}");
        let e = with(&["redis://a:1", "rediss://b:2"]).unwrap_err();
        assert!(e.contains("mix"), "{e}");
        assert!(!with(&["redis://a:1", "redis://b:2"]).unwrap().tls);
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
