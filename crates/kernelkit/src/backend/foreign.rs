//! Memory that another library owns: what keeps it alive ([`ForeignOwner`]),
//! whether a scope may still use it ([`Lease`]), and, on CUDA, the hook
//! that lets the owner's own bookkeeping see each launch
//! ([`ForeignAccess`]: cudarc's events).
//!
//! Foreign memory is never a thread's spare, never enters a stream's block
//! cache and is never freed by kernelkit: releasing it drops its owner (an
//! `Arc` of anything, or a deleter called once), after ordering the
//! launches of other streams that used it before the home stream's next
//! work (CUDA).

use std::any::Any;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

#[cfg(feature = "cuda")]
use crate::error::Result;

/// What keeps foreign memory alive while kernelkit uses it. kernelkit
/// drops it (or calls the deleter, once) when its last array of the memory
/// goes; after that it never touches the memory again. An owner dropped
/// without having held memory (a constructor that failed) does not call
/// its deleter.
pub struct ForeignOwner(Kind);

enum Kind {
    None,
    #[allow(dead_code)] // Held for its `Drop`.
    Keep(Box<dyn Any + Send + Sync>),
    /// `FnOnce` is not `Sync`: the mutex makes the owner shareable (it is
    /// only taken once, on release).
    Deleter(Mutex<Option<Box<dyn FnOnce() + Send>>>),
}

impl ForeignOwner {
    /// No owner: the memory is borrowed, and something else (a scope, the
    /// caller's contract) keeps it alive while kernelkit may use it.
    pub fn none() -> ForeignOwner {
        ForeignOwner(Kind::None)
    }

    /// An owner that keeps `value` (an `Arc` of the owning object, a `Vec`,
    /// a guard) until kernelkit's last array of the memory goes.
    pub fn keep(value: impl Any + Send + Sync) -> ForeignOwner {
        ForeignOwner(Kind::Keep(Box::new(value)))
    }

    /// An owner that calls `deleter` exactly once when kernelkit's last
    /// array of the memory goes (a `DLManagedTensor`'s deleter, a `free`).
    pub fn deleter(deleter: impl FnOnce() + Send + 'static) -> ForeignOwner {
        ForeignOwner(Kind::Deleter(Mutex::new(Some(Box::new(deleter)))))
    }

    /// Drops the owner or runs the deleter (once).
    pub(crate) fn release(&mut self) {
        match std::mem::replace(&mut self.0, Kind::None) {
            Kind::Deleter(d) => {
                if let Some(f) = d.into_inner().unwrap_or_else(|p| p.into_inner()) {
                    f()
                }
            }
            other => drop(other),
        }
    }
}

impl std::fmt::Debug for ForeignOwner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self.0 {
            Kind::None => "ForeignOwner::none()",
            Kind::Keep(_) => "ForeignOwner::keep(..)",
            Kind::Deleter(_) => "ForeignOwner::deleter(..)",
        })
    }
}

/// The permission to use borrowed memory, revoked when its borrow ends.
///
/// Every use (a launch, a copy) *enters* the lease and *leaves* it when the
/// use is queued (CUDA) or done (CPU); [`Lease::revoke`] refuses new uses
/// and waits for those in progress. Uses never block each other (a count,
/// not a lock), so one array given twice to a call, or a use from inside
/// another, cannot deadlock.
#[derive(Debug, Default)]
pub struct Lease {
    /// Uses in progress, and [`REVOKED`].
    state: AtomicUsize,
}

/// The bit of [`Lease::state`] that says the borrow has ended.
const REVOKED: usize = 1 << (usize::BITS - 1);

impl Lease {
    /// Starts a use: false once the lease is revoked.
    #[inline]
    pub(crate) fn enter(&self) -> bool {
        let before = self.state.fetch_add(1, Ordering::Acquire);
        if before & REVOKED != 0 {
            self.leave();
            return false;
        }
        true
    }

    /// Ends a use that [`Lease::enter`] started.
    #[inline]
    pub(crate) fn leave(&self) {
        self.state.fetch_sub(1, Ordering::Release);
    }

    /// Whether the borrow has ended.
    pub(crate) fn revoked(&self) -> bool {
        self.state.load(Ordering::Acquire) & REVOKED != 0
    }

    /// Ends the borrow: refuses every later use, and returns once the uses
    /// in progress have left.
    pub(crate) fn revoke(&self) {
        self.state.fetch_or(REVOKED, Ordering::AcqRel);
        let mut spins = 0u32;
        while self.state.load(Ordering::Acquire) & !REVOKED != 0 {
            spins += 1;
            if spins < 64 {
                std::hint::spin_loop();
            } else if spins < 1024 {
                std::thread::yield_now();
            } else {
                std::thread::sleep(std::time::Duration::from_micros(50));
            }
        }
    }
}

/// The owner's view of each launch that uses its memory, for owners that
/// track the work on their memory themselves (cudarc's read and write
/// events): [`ForeignAccess::around`] runs the launch between the owner's
/// "before" (wait for earlier writes) and "after" (record this use).
#[cfg(feature = "cuda")]
pub trait ForeignAccess: Send + Sync {
    /// Runs `launch`, which queues work reading (or, with `write`, writing)
    /// the memory on `stream`, the owner's bookkeeping around it.
    fn around(
        &self,
        stream: &Arc<cudarc::driver::CudaStream>,
        write: bool,
        launch: &mut dyn FnMut() -> Result<()>,
    ) -> Result<()>;
}

/// Foreign memory as a backend's [`Owner`](super::Owner) holds it.
pub(crate) struct ForeignMem {
    pub(crate) owner: ForeignOwner,
    /// Set for borrowed memory: uses must enter it.
    pub(crate) lease: Option<Arc<Lease>>,
    /// Kernels may not write it (an input only).
    pub(crate) read_only: bool,
    /// The owner's per-launch bookkeeping (cudarc), if it keeps any.
    #[cfg(feature = "cuda")]
    pub(crate) access: Option<Box<dyn ForeignAccess>>,
    /// Streams other than the home one that used the memory (CUDA):
    /// ordered before the home stream's next work when the memory goes.
    #[cfg(feature = "cuda")]
    pub(crate) used: Mutex<Vec<Arc<super::cuda::CudaStream>>>,
    /// The stream recorded last (its address; a fast check, no lock).
    #[cfg(feature = "cuda")]
    last_used: AtomicUsize,
}

impl ForeignMem {
    /// Foreign memory kept by `owner`.
    pub(crate) fn new(owner: ForeignOwner, lease: Option<Arc<Lease>>, read_only: bool) -> Self {
        ForeignMem {
            owner,
            lease,
            read_only,
            #[cfg(feature = "cuda")]
            access: None,
            #[cfg(feature = "cuda")]
            used: Mutex::new(Vec::new()),
            #[cfg(feature = "cuda")]
            last_used: AtomicUsize::new(0),
        }
    }

    /// Whether a use must go through the lease or the owner's hook (a
    /// borrowed view, cudarc memory); raw foreign memory is used as
    /// kernelkit's own is.
    #[inline]
    pub(crate) fn needs_care(&self) -> bool {
        #[cfg(feature = "cuda")]
        if self.access.is_some() {
            return true;
        }
        self.lease.is_some()
    }

    /// Gives the memory back to its owner (see the module documentation).
    /// Out of line: dropping kernelkit's own memory shares its match arm.
    #[cold]
    #[inline(never)]
    pub(crate) fn release(&mut self, home: &super::StreamHandle) {
        #[cfg(feature = "cuda")]
        {
            let used = std::mem::take(self.used.get_mut().unwrap_or_else(|p| p.into_inner()));
            if let (false, Some(home)) = (used.is_empty(), home.cuda()) {
                super::cuda::order_after(home, used);
            }
        }
        let _ = home;
        self.owner.release();
    }

    /// Records that work on `stream` uses the memory (CUDA). Out of line:
    /// a launch's marshalling of kernelkit's own memory shares its match.
    #[cfg(feature = "cuda")]
    #[cold]
    #[inline(never)]
    pub(crate) fn used_on(&self, stream: &Arc<super::cuda::CudaStream>) {
        let key = Arc::as_ptr(stream) as usize;
        if self.last_used.load(Ordering::Relaxed) == key {
            return;
        }
        self.last_used.store(key, Ordering::Relaxed);
        let mut used = self.used.lock().unwrap_or_else(|p| p.into_inner());
        if !used.iter().any(|s| Arc::ptr_eq(s, stream)) {
            used.push(stream.clone());
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU32;

    #[test]
    fn a_deleter_runs_once() {
        let count = Arc::new(AtomicU32::new(0));
        let c = count.clone();
        let mut owner = ForeignOwner::deleter(move || {
            c.fetch_add(1, Ordering::SeqCst);
        });
        owner.release();
        owner.release();
        drop(owner);
        assert_eq!(count.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_revoked_lease_refuses_uses_and_waits_for_those_in_progress() {
        let lease = Arc::new(Lease::default());
        assert!(lease.enter());
        let l = lease.clone();
        let done = Arc::new(AtomicU32::new(0));
        let d = done.clone();
        let revoker = std::thread::spawn(move || {
            l.revoke();
            d.load(Ordering::SeqCst)
        });
        std::thread::sleep(std::time::Duration::from_millis(20));
        done.store(1, Ordering::SeqCst);
        lease.leave();
        assert_eq!(revoker.join().unwrap(), 1, "revoke waited for the use");
        assert!(lease.revoked());
        assert!(!lease.enter());
    }
}
