//! The tuned choices this thread launched last, in front of each
//! [`Tuning`](super::Tuning)'s own map of them.
//!
//! A warm tuned call should cost what an untuned one does, and an untuned
//! one finds its variant in a per-thread cache (`kernel::variants::recent`)
//! with no atomic read-modify-write. A slot shared by every thread (an
//! `ArcSwap` of the last choice) cannot be read that way: its load
//! publishes a hazard with a sequentially consistent store, a full fence
//! on x86 that waits for the launch's own stores to drain, which costs
//! more time than its instruction count says.
//!
//! **Staying exact.** An entry is tagged with its tuning's unique id (never
//! reused, unlike an address) and the call's signature; a tuning's choice
//! for a signature never changes once made (its maps are only added to),
//! so an entry stays right for as long as it lives.
//!
//! **Memory.** Each thread holds at most [`WAYS`] choices here (each keeps
//! its variant alive), replaced in turn; they may outlive their tuning
//! until this thread's next tuned calls replace them.
//!
//! **Lending.** A hit runs its caller's closure under a shared borrow of
//! the cache: a tuned call made from inside it (a grid or key function
//! calling a tuned kernel) reads the cache again, and only skips keeping
//! its own choice here while the borrow lasts.

use std::cell::RefCell;
use std::sync::Arc;

use super::config::Chosen;

/// Choices kept per thread.
pub(crate) const WAYS: usize = 4;

struct Slot {
    tuning: u64,
    sig: u64,
    chosen: Arc<Chosen>,
}

struct Slots {
    slots: [Option<Slot>; WAYS],
    /// The slot the next new choice takes.
    next: usize,
}

thread_local! {
    static RECENT: RefCell<Slots> = const {
        RefCell::new(Slots {
            slots: [const { None }; WAYS],
            next: 0,
        })
    };
}

/// `f` of this thread's choice for (`tuning`, `sig`), if it has one.
#[inline]
pub(super) fn with<R>(tuning: u64, sig: u64, f: impl FnOnce(&Chosen) -> R) -> Option<R> {
    RECENT
        .try_with(|recent| {
            let recent = recent.try_borrow().ok()?;
            let slot = recent
                .slots
                .iter()
                .flatten()
                .find(|s| s.sig == sig && s.tuning == tuning)?;
            Some(f(&slot.chosen))
        })
        .ok()
        .flatten()
}

/// Keeps `chosen` as this thread's choice for (`tuning`, `sig`) (skipped
/// while a hit's closure runs on this thread, or as the thread ends).
pub(super) fn keep(tuning: u64, sig: u64, chosen: Arc<Chosen>) {
    let _ = RECENT.try_with(|recent| {
        let Ok(mut recent) = recent.try_borrow_mut() else {
            return;
        };
        let same = |s: &Option<Slot>| matches!(s, Some(s) if s.sig == sig && s.tuning == tuning);
        let i = match recent.slots.iter().position(same) {
            Some(i) => i,
            None => {
                let i = recent.next;
                recent.next = (i + 1) % WAYS;
                i
            }
        };
        // The slot's previous choice is dropped after the borrow ends (its
        // variant's drop may do anything a variant's drop does).
        let old = recent.slots[i].replace(Slot {
            tuning,
            sig,
            chosen,
        });
        drop(recent);
        drop(old);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chosen(index: usize) -> Arc<Chosen> {
        Arc::new(Chosen {
            index,
            variant: Arc::new(crate::kernel::variant::Variant::new(
                crate::codegen::Dialect::Cpu,
                "k".to_string(),
                "src".to_string(),
            )),
        })
    }

    #[test]
    fn a_choice_is_found_under_its_tuning_and_signature_only() {
        keep(101, 7, chosen(3));
        assert_eq!(with(101, 7, |c| c.index), Some(3));
        assert_eq!(with(102, 7, |c| c.index), None, "another tuning");
        assert_eq!(with(101, 8, |c| c.index), None, "another signature");
        // Kept again: the same slot, not a second one.
        keep(101, 7, chosen(4));
        assert_eq!(with(101, 7, |c| c.index), Some(4));
    }

    #[test]
    fn the_oldest_choice_gives_way_and_other_threads_see_none() {
        for t in 0..WAYS as u64 {
            keep(200 + t, 1, chosen(t as usize));
        }
        assert_eq!(with(200, 1, |c| c.index), Some(0));
        keep(300, 1, chosen(9));
        assert_eq!(with(200, 1, |c| c.index), None, "the oldest replaced");
        assert_eq!(with(300, 1, |c| c.index), Some(9));
        std::thread::spawn(|| assert_eq!(with(300, 1, |c| c.index), None))
            .join()
            .unwrap();
    }

    #[test]
    fn a_choice_kept_inside_a_hit_is_skipped_not_a_panic() {
        keep(400, 1, chosen(1));
        let inner = with(400, 1, |_| {
            keep(401, 1, chosen(2));
            with(400, 1, |c| c.index)
        });
        assert_eq!(inner, Some(Some(1)), "a nested read is served");
        assert_eq!(with(401, 1, |c| c.index), None, "the nested keep skipped");
    }
}
