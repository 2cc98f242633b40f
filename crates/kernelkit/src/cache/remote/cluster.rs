//! A Redis Cluster spoken to through [`wire`](super::wire), so that its
//! commands keep the same deadline and size bounds as a single server's.
//!
//! The tier's commands each name keys of one hash slot (one module's keys
//! share a hash tag), so routing is simple: the slot of the first key
//! (CRC16 of its hash tag, modulo 16384), the master that `CLUSTER SLOTS`
//! says serves it, and one connection per master, made when first needed.
//! A `MOVED` answer reloads the slot map from the node that sent it and
//! retries there; an `ASK` retries once at the node it names, after
//! `ASKING`. All of it within the command's one deadline. The nodes are
//! spoken to as the seeds are: plain TCP, or TLS (`rediss://`), each
//! node's certificate checked against the name or address the slot map
//! gives for it.

use std::collections::HashMap;
use std::time::Instant;

use redis::{FromRedisValue, Value};

use crate::cache::remote::wire::{Bounds, Transport, Wire, WireError};

/// The number of hash slots of a Redis Cluster.
const SLOTS: u16 = 16384;

/// How many redirections one command follows.
const MAX_REDIRECTS: usize = 3;

/// CRC16-CCITT (XMODEM: polynomial 0x1021, initial value 0), the checksum
/// Redis Cluster hashes keys with.
fn crc16(bytes: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &b in bytes {
        crc ^= u16::from(b) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

/// The hash slot of `key`: of its hash tag (the text between the first
/// `{` and the next `}`, when not empty), else of the whole key.
pub(crate) fn slot_of(key: &[u8]) -> u16 {
    let tagged = key.iter().position(|&b| b == b'{').and_then(|open| {
        let rest = &key[open + 1..];
        let close = rest.iter().position(|&b| b == b'}')?;
        Some(&rest[..close]).filter(|t| !t.is_empty())
    });
    crc16(tagged.unwrap_or(key)) % SLOTS
}

/// The first key a command names: the argument after the name, or after
/// the script and the key count for `EVAL`. `None`: a command of no key.
fn first_key(cmd: &redis::Cmd) -> Option<Vec<u8>> {
    let args: Vec<&[u8]> = cmd
        .args_iter()
        .filter_map(|a| match a {
            redis::Arg::Simple(b) => Some(b),
            _ => None,
        })
        .collect();
    let name = args.first()?.to_ascii_uppercase();
    let at = if name == b"EVAL" || name == b"EVALSHA" {
        3
    } else {
        1
    };
    args.get(at).map(|k| k.to_vec())
}

/// How a cluster command failed (see `server::Fault`, which this maps to).
pub(crate) enum ClusterFault {
    /// An answer: an error of the server's, or a value of another type.
    Answer(String),
    /// A reply over the size bound.
    TooLarge(String),
    /// Past the deadline, a connection that failed, no node for a slot.
    Connection(String),
}

/// Credentials every node of the cluster takes.
#[derive(Clone)]
pub(crate) struct Auth {
    pub(crate) username: Option<String>,
    pub(crate) password: Option<String>,
}

/// See the module documentation.
pub(crate) struct Cluster {
    auth: Auth,
    bounds: Bounds,
    /// Every node is spoken to as the seeds are (plain or TLS).
    transport: Transport,
    /// `(first slot, last slot, "host:port" of its master)`.
    slots: Vec<(u16, u16, String)>,
    nodes: HashMap<String, Wire>,
}

fn wire_fault(e: WireError) -> ClusterFault {
    match e {
        WireError::TooLarge { .. } => ClusterFault::TooLarge(e.to_string()),
        _ => ClusterFault::Connection(e.to_string()),
    }
}

/// Opens a connection to `addr` (`host:port`) and authenticates it.
fn open(
    addr: &str,
    auth: &Auth,
    bounds: Bounds,
    transport: &Transport,
    deadline: Instant,
) -> Result<Wire, ClusterFault> {
    let (host, port) = addr
        .rsplit_once(':')
        .and_then(|(h, p)| Some((h, p.parse::<u16>().ok()?)))
        .ok_or_else(|| ClusterFault::Connection(format!("`{addr}` is not host:port")))?;
    let mut w = Wire::connect(host, port, deadline, bounds, transport).map_err(wire_fault)?;
    if let Some(password) = &auth.password {
        let mut cmd = redis::cmd("AUTH");
        if let Some(user) = &auth.username {
            cmd.arg(user);
        }
        cmd.arg(password);
        let _: Value = answer(&mut w, &cmd, deadline)?;
    }
    Ok(w)
}

/// Runs `cmd` on `w`, converting its reply (server errors are answers).
fn answer<T: FromRedisValue>(
    w: &mut Wire,
    cmd: &redis::Cmd,
    deadline: Instant,
) -> Result<T, ClusterFault> {
    let value = w
        .command(&cmd.get_packed_command(), deadline)
        .map_err(wire_fault)?;
    let value = value
        .extract_error()
        .map_err(|e| ClusterFault::Answer(e.to_string()))?;
    redis::from_redis_value(value).map_err(|e| ClusterFault::Answer(e.to_string()))
}

/// The slot map `CLUSTER SLOTS` gives on `w`.
fn load_slots(w: &mut Wire, deadline: Instant) -> Result<Vec<(u16, u16, String)>, ClusterFault> {
    let ranges: Vec<Value> = answer(w, redis::cmd("CLUSTER").arg("SLOTS"), deadline)?;
    let mut slots = Vec::with_capacity(ranges.len());
    for range in ranges {
        // [first, last, [host, port, ...], replicas...]
        let (first, last, master): (u16, u16, Vec<Value>) = match range {
            Value::Array(items) if items.len() >= 3 => {
                let mut it = items.into_iter();
                let parse = |v: Option<Value>| -> Option<i64> { redis::from_redis_value(v?).ok() };
                let first = parse(it.next()).and_then(|v| u16::try_from(v).ok());
                let last = parse(it.next()).and_then(|v| u16::try_from(v).ok());
                let master = it.next().and_then(|v| redis::from_redis_value(v).ok());
                match (first, last, master) {
                    (Some(f), Some(l), Some(m)) => (f, l, m),
                    _ => continue,
                }
            }
            _ => continue,
        };
        let mut m = master.into_iter();
        let host: Option<String> = m.next().and_then(|v| redis::from_redis_value(v).ok());
        let port: Option<i64> = m.next().and_then(|v| redis::from_redis_value(v).ok());
        if let (Some(host), Some(port)) = (host, port) {
            slots.push((first, last, format!("{host}:{port}")));
        }
    }
    if slots.is_empty() {
        return Err(ClusterFault::Connection(
            "CLUSTER SLOTS names no master".into(),
        ));
    }
    Ok(slots)
}

impl Cluster {
    /// Connects to the first of `seeds` (`host:port`) that answers and
    /// loads the slot map from it, before `deadline`.
    pub(crate) fn connect(
        seeds: &[String],
        auth: Auth,
        bounds: Bounds,
        transport: Transport,
        deadline: Instant,
    ) -> Result<Cluster, String> {
        let mut why = String::from("no seed node");
        for seed in seeds {
            let loaded = open(seed, &auth, bounds, &transport, deadline).and_then(|mut w| {
                let slots = load_slots(&mut w, deadline)?;
                Ok((w, slots))
            });
            match loaded {
                Ok((w, slots)) => {
                    let mut nodes = HashMap::new();
                    nodes.insert(seed.clone(), w);
                    return Ok(Cluster {
                        auth,
                        bounds,
                        transport,
                        slots,
                        nodes,
                    });
                }
                Err(ClusterFault::Answer(e) | ClusterFault::TooLarge(e))
                | Err(ClusterFault::Connection(e)) => why = format!("{seed}: {e}"),
            }
        }
        Err(why)
    }

    fn master_of(&self, slot: u16) -> Option<String> {
        self.slots
            .iter()
            .find(|(first, last, _)| (*first..=*last).contains(&slot))
            .map(|(_, _, addr)| addr.clone())
    }

    /// The connection to `addr`, made if there is none.
    fn node(&mut self, addr: &str, deadline: Instant) -> Result<&mut Wire, ClusterFault> {
        if !self.nodes.contains_key(addr) {
            let w = open(addr, &self.auth, self.bounds, &self.transport, deadline)?;
            self.nodes.insert(addr.to_string(), w);
        }
        Ok(self.nodes.get_mut(addr).unwrap_or_else(|| unreachable!()))
    }

    /// Runs `cmd` on the master of its key's slot, following redirections,
    /// before `deadline`. A connection that failed is dropped (the next
    /// command to that node reconnects).
    pub(crate) fn query<T: FromRedisValue>(
        &mut self,
        cmd: &redis::Cmd,
        deadline: Instant,
    ) -> Result<T, ClusterFault> {
        let mut addr = match first_key(cmd) {
            Some(key) => self.master_of(slot_of(&key)),
            None => self.slots.first().map(|(_, _, a)| a.clone()),
        }
        .ok_or_else(|| ClusterFault::Connection("no master serves the key's slot".into()))?;
        let packed = cmd.get_packed_command();
        let mut asking = false;
        for _ in 0..=MAX_REDIRECTS {
            let w = self.node(&addr, deadline)?;
            let sent = (|| {
                if asking {
                    let _: Value = answer(w, &redis::cmd("ASKING"), deadline)?;
                }
                w.command(&packed, deadline).map_err(wire_fault)
            })();
            let value = match sent {
                Ok(v) => v,
                Err(f) => {
                    if !matches!(f, ClusterFault::Answer(_)) {
                        self.nodes.remove(&addr);
                    }
                    return Err(f);
                }
            };
            let redirect = match &value {
                Value::ServerError(e) if e.code() == "MOVED" || e.code() == "ASK" => e
                    .details()
                    .and_then(|d| d.split_whitespace().nth(1))
                    .map(|to| (e.code() == "ASK", to.to_string())),
                _ => None,
            };
            match redirect {
                None => {
                    let value = value
                        .extract_error()
                        .map_err(|e| ClusterFault::Answer(e.to_string()))?;
                    return redis::from_redis_value(value)
                        .map_err(|e| ClusterFault::Answer(e.to_string()));
                }
                Some((ask, to)) => {
                    if !ask {
                        let w = self.node(&to, deadline)?;
                        match load_slots(w, deadline) {
                            Ok(slots) => self.slots = slots,
                            Err(f) => {
                                self.nodes.remove(&to);
                                return Err(f);
                            }
                        }
                    }
                    asking = ask;
                    addr = to;
                }
            }
        }
        Err(ClusterFault::Connection(format!(
            "more than {MAX_REDIRECTS} redirections"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_follow_the_cluster_specification() {
        // The specification's check value of CRC16/XMODEM.
        assert_eq!(crc16(b"123456789"), 0x31c3);
        // Keys with one hash tag share a slot; an empty tag is no tag.
        assert_eq!(slot_of(b"{user1000}.following"), slot_of(b"user1000"));
        assert_eq!(slot_of(b"a{x}b"), slot_of(b"c{x}d"));
        assert_eq!(slot_of(b"foo{}{bar}"), crc16(b"foo{}{bar}") % SLOTS);
        assert_eq!(slot_of(b"foo{{bar}}zap"), crc16(b"{bar") % SLOTS);
    }

    #[test]
    fn the_first_key_is_found_for_the_tiers_commands() {
        assert_eq!(
            first_key(redis::cmd("MGET").arg("k1").arg("k2")),
            Some(b"k1".to_vec())
        );
        assert_eq!(
            first_key(redis::cmd("EVAL").arg("return 1").arg(1).arg("k")),
            Some(b"k".to_vec())
        );
        assert_eq!(first_key(&redis::cmd("PING")), None);
    }
}
