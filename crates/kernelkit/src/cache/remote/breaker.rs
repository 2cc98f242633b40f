//! The circuit breaker: after a connection fails or a command times out,
//! the tier stops asking the server for a while (calls compile locally
//! without waiting on it), then lets one call try again.
//!
//! States: *closed* (`open_until == 0`: every call asks), *open* (`now <
//! open_until`: none does), *half-open* (the cooldown is over: the first
//! call to [`Breaker::allow`] moves `open_until` one cooldown ahead and
//! asks; its success closes the breaker, its failure keeps it open).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// What [`Breaker::allow`] says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Permit {
    /// Closed: ask.
    Closed,
    /// Half-open: this call is the one that tries again.
    Probe,
    /// Open: do not ask.
    Denied,
}

/// See the module documentation.
#[derive(Debug)]
pub(crate) struct Breaker {
    /// Milliseconds since `epoch` until which nothing is asked; 0: closed.
    open_until: AtomicU64,
    cooldown: Duration,
    epoch: Instant,
}

impl Breaker {
    pub(crate) fn new(cooldown: Duration) -> Breaker {
        Breaker {
            open_until: AtomicU64::new(0),
            cooldown,
            epoch: Instant::now(),
        }
    }

    fn now_ms(&self) -> u64 {
        // +1: a breaker opened in the first millisecond is not "closed".
        self.epoch.elapsed().as_millis() as u64 + 1
    }

    /// Whether this call may ask the server, and how.
    pub(crate) fn allow(&self) -> Permit {
        let until = self.open_until.load(Ordering::Acquire);
        if until == 0 {
            return Permit::Closed;
        }
        let now = self.now_ms();
        if now < until {
            return Permit::Denied;
        }
        // Half-open: one caller wins the probe.
        let next = now + self.cooldown.as_millis() as u64;
        match self
            .open_until
            .compare_exchange(until, next, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => Permit::Probe,
            Err(_) => Permit::Denied,
        }
    }

    /// Whether the breaker is open now (for messages and tools).
    pub(crate) fn is_open(&self) -> bool {
        let until = self.open_until.load(Ordering::Acquire);
        until != 0 && self.now_ms() < until
    }

    /// The server answered.
    pub(crate) fn success(&self) {
        if self.open_until.load(Ordering::Relaxed) != 0 {
            self.open_until.store(0, Ordering::Release);
        }
    }

    /// The server could not be reached or did not answer in time. Returns
    /// whether this opened a closed breaker (to report it once).
    pub(crate) fn failure(&self) -> bool {
        let next = self.now_ms() + self.cooldown.as_millis() as u64;
        self.open_until.swap(next, Ordering::AcqRel) == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_opens_it_and_one_probe_follows_the_cooldown() {
        let b = Breaker::new(Duration::from_millis(30));
        assert_eq!((b.allow(), b.allow()), (Permit::Closed, Permit::Closed));
        assert!(b.failure(), "closed -> open");
        assert!(!b.failure(), "already open");
        assert_eq!(b.allow(), Permit::Denied);
        assert!(b.is_open());
        std::thread::sleep(Duration::from_millis(40));
        assert_eq!(b.allow(), Permit::Probe);
        assert_eq!(b.allow(), Permit::Denied, "only one probe");
        b.success();
        assert_eq!(b.allow(), Permit::Closed);
        assert!(!b.is_open());
    }
}
