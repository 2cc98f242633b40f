//! The compile lease: one compile per fleet.
//!
//! A process that misses a key everywhere asks for its lease
//! (`SET <lease> <token> NX PX <lease>`, in one script with a look for the
//! entry). The one that gets it compiles, renewing the lease every third of
//! its lifetime from a thread of its own, and deletes it when done (only if
//! it still holds its own token). The others poll (a few milliseconds
//! apart, growing to [`MAX_POLL`]) until the entry appears, the lease is
//! free (then one of them takes it), or their wait runs out (then they
//! compile too). A compiler that dies stops renewing; its lease expires
//! and a waiter takes over. Each renewal and the release are commands of
//! the server's ([`Server::run`]), held to the same deadline as any other:
//! a stalled server delays neither the compile nor the drop of a lease
//! past it. Writes are idempotent (the same key, the same
//! bytes), so a late writer needs no fencing.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::cache::remote::server::{Names, OpError, Server};

/// The longest pause between two looks while another process compiles.
pub(crate) const MAX_POLL: Duration = Duration::from_millis(25);
/// The first pause.
pub(crate) const FIRST_POLL: Duration = Duration::from_millis(2);

/// 2: an entry other than the one the caller saw is there (its signature,
/// `KEYS[1]`, differs from `ARGV[3]`; entries and signatures are written
/// together); 1: the lease is this caller's now; 0: another holds it.
const CLAIM: &str = "local s = redis.call('get', KEYS[1]) \
    if s and s ~= ARGV[3] then return 2 end \
    if redis.call('set', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end \
    return 0";
const RENEW: &str = "if redis.call('get', KEYS[1]) == ARGV[1] then \
    return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end";
const RELEASE: &str = "if redis.call('get', KEYS[1]) == ARGV[1] then \
    return redis.call('del', KEYS[1]) else return 0 end";

/// One look at a key's lease.
pub(crate) enum Look {
    /// The entry is published.
    Published,
    /// The lease is this caller's.
    Taken,
    /// Another process holds it.
    Held,
}

/// A token no other holder has (process id, time, a counter).
fn new_token() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "{}-{nanos:x}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Looks at `names`' entry and lease, taking the lease with `token` if it
/// is free; `seen` is the signature of the entry the caller could not use
/// (empty: there was none), which does not count as published.
pub(crate) fn look(
    server: &Server,
    names: &Names,
    token: &str,
    lease: Duration,
    seen: &[u8],
) -> Result<Look, OpError> {
    let answer: i64 = server.run(
        redis::cmd("EVAL")
            .arg(CLAIM)
            .arg(2)
            .arg(&names.sig)
            .arg(&names.lease)
            .arg(token)
            .arg(lease.as_millis() as u64)
            .arg(seen),
    )?;
    Ok(match answer {
        2 => Look::Published,
        1 => Look::Taken,
        _ => Look::Held,
    })
}

/// A held lease; dropping it stops the renewals and releases it.
pub(crate) struct Lease {
    server: Arc<Server>,
    name: String,
    token: String,
    stop: Option<mpsc::Sender<()>>,
    renewer: Option<JoinHandle<()>>,
}

impl Lease {
    /// A fresh token for [`look`].
    pub(crate) fn token() -> String {
        new_token()
    }

    /// Starts renewing the lease `token` holds on `names.lease`.
    pub(crate) fn hold(
        server: Arc<Server>,
        names: &Names,
        token: String,
        lease: Duration,
    ) -> Lease {
        let (stop, stopped) = mpsc::channel::<()>();
        let name = names.lease.clone();
        let renewer = {
            let (server, name, token) = (server.clone(), name.clone(), token.clone());
            std::thread::Builder::new()
                .name("kernelkit-lease".into())
                .spawn(move || loop {
                    match stopped.recv_timeout(lease / 3) {
                        Err(RecvTimeoutError::Timeout) => {
                            let renewed: Result<i64, _> = server.run(
                                redis::cmd("EVAL")
                                    .arg(RENEW)
                                    .arg(1)
                                    .arg(&name)
                                    .arg(&token)
                                    .arg(lease.as_millis() as u64),
                            );
                            if let Ok(0) = renewed {
                                tracing::debug!(
                                    "kernelkit fleet tier: lease {name} was lost (expired); another process may compile too"
                                );
                            }
                        }
                        _ => return,
                    }
                })
                .ok()
        };
        Lease {
            server,
            name,
            token,
            stop: Some(stop),
            renewer,
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.renewer.take() {
            let _ = t.join();
        }
        // Failing to release it only makes the waiters wait for its expiry
        // (or until they see the entry).
        let _: Result<i64, _> = self.server.run(
            redis::cmd("EVAL")
                .arg(RELEASE)
                .arg(1)
                .arg(&self.name)
                .arg(&self.token),
        );
    }
}
