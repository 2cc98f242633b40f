//! The variants this thread used last, in front of the memo.
//!
//! A memo hit is already lock-free, but it still reads the memo's shared
//! snapshot: a hazard slot taken and released with atomic operations, the
//! hash map's control bytes, a bucket and the key it points to, one cache
//! line after another. On a GPU host where every launch evicts much of the
//! caches (see `launch_probe`), each of those lines is a miss per call. This
//! per-thread cache answers a repeated call from a few lines this thread
//! owns, with no atomic read-modify-write.
//!
//! **Staying exact.** An entry is tagged with its memo's unique id and the
//! memo's *generation*, which every removal from the memo (an eviction, a
//! clear) advances after it is published. The generation is read before
//! the memo is, so an entry is tagged with a generation that was current
//! while its variant was in the memo, and a removal makes every older entry
//! a miss. So a thread never runs a variant that another thread could not
//! have got from the memo at the same moment, and "one `Arc` per key at a
//! time" holds as it does for the memo. A hit here marks its variant used
//! for the memo's clock (`Variant::touch`), as a memo hit does.
//!
//! **Shape.** [`SETS`] sets of [`WAYS`] entries; a memo's entries go to the
//! set its id selects (ids are sequential, so kernels made one after another
//! use different sets), so a thread that cycles over many kernels keeps one
//! or two variants of each, and one kernel called with two signatures in
//! turn keeps both.
//!
//! **Memory.** Each thread holds at most `SETS * WAYS` variants here, which
//! may outlive their eviction from the memo until this thread's next calls
//! replace them.
//!
//! **Lending.** A hit lends its variant as a [`Pin`]: no reference count
//! moves and no borrow of the cache is held while the call runs (a launch
//! never runs inside a `RefCell` borrow). While a pin lives its entry is
//! not replaced; a pin is created and dropped within one call on one thread
//! (it is neither `Send` nor `Sync`), so at most a call's worth of entries
//! are ever pinned.

use std::cell::{Cell, RefCell};
use std::marker::PhantomData;
use std::sync::Arc;

use super::key::{pack_key_bytes, KeyBytes, PackedKey};
use crate::kernel::variant::Variant;

/// Sets per thread.
pub(crate) const SETS: usize = 8;
/// Entries per set.
pub(crate) const WAYS: usize = 2;

struct Entry {
    key: KeyBytes,
    /// The key packed in a word, when it has that form.
    packed: Option<PackedKey>,
    variant: Arc<Variant>,
}

struct Set {
    /// (memo id, generation) per way, compared before any key.
    tags: [(u64, u64); WAYS],
    entries: [Option<Entry>; WAYS],
    /// The way the next new entry takes.
    next: usize,
}

thread_local! {
    static RECENT: RefCell<[Set; SETS]> = const {
        RefCell::new(
            [const {
                Set {
                    tags: [(0, 0); WAYS],
                    entries: [const { None }; WAYS],
                    next: 0,
                }
            }; SETS],
        )
    };
    /// Live pins per entry (`set * WAYS + way`): an entry with pins is not
    /// replaced. Apart from `RECENT`, so that pinning needs no borrow of it;
    /// plain `Cell`s with no destructor, reachable until the thread ends.
    static PINS: [Cell<u32>; SETS * WAYS] = const { [const { Cell::new(0) }; SETS * WAYS] };
}

/// A variant lent by this thread's cache: see the module documentation.
pub(crate) struct Pin {
    variant: *const Variant,
    slot: usize,
    /// Neither `Send` nor `Sync`: the pin count is this thread's.
    _thread: PhantomData<*const ()>,
}

impl Pin {
    #[inline]
    pub(crate) fn variant(&self) -> &Variant {
        // SAFETY: `variant` points into the heap block of the `Arc` held by
        // entry `slot` of this thread's cache, which is not replaced while
        // the pin lives (see `remember`) and not dropped before the thread
        // ends (the pin, being neither `Send` nor `Sync`, cannot outlive
        // this thread's calls).
        unsafe { &*self.variant }
    }

    /// The variant as an owned `Arc` (a count taken on the shared block).
    pub(crate) fn to_arc(&self) -> Arc<Variant> {
        // SAFETY: `variant` came from `Arc::as_ptr` of an `Arc` that is
        // alive (see `variant`); the count taken here is the new `Arc`'s.
        unsafe {
            Arc::increment_strong_count(self.variant);
            Arc::from_raw(self.variant)
        }
    }
}

impl Drop for Pin {
    #[inline]
    fn drop(&mut self) {
        let _ = PINS.try_with(|pins| {
            let pin = &pins[self.slot];
            pin.set(pin.get() - 1);
        });
    }
}

/// This thread's variant for (`memo`, `generation`, `key`), if it has one.
/// Re-entrant use (none is expected) simply misses.
#[inline]
pub(crate) fn lookup(memo: u64, generation: u64, key: &[u8]) -> Option<Pin> {
    find(memo, generation, |entry| entry.key.as_slice() == key)
}

/// [`lookup`] for a key in its packed form: one comparison per entry.
#[inline]
pub(crate) fn lookup_packed(memo: u64, generation: u64, key: PackedKey) -> Option<Pin> {
    find(memo, generation, |entry| entry.packed == Some(key))
}

#[inline(always)]
fn find(memo: u64, generation: u64, same: impl Fn(&Entry) -> bool) -> Option<Pin> {
    RECENT
        .try_with(|recent| {
            let recent = recent.try_borrow().ok()?;
            let s = memo as usize % SETS;
            let set = &recent[s];
            for w in 0..WAYS {
                if set.tags[w] != (memo, generation) {
                    continue;
                }
                if let Some(entry) = &set.entries[w] {
                    if same(entry) {
                        // A hit for the memo's clock too.
                        entry.variant.touch();
                        return Some(pin(s * WAYS + w, &entry.variant));
                    }
                }
            }
            None
        })
        .ok()
        .flatten()
}

/// Pins entry `slot`, which holds `variant`.
#[inline(always)]
fn pin(slot: usize, variant: &Arc<Variant>) -> Pin {
    let _ = PINS.try_with(|pins| {
        let pin = &pins[slot];
        pin.set(pin.get() + 1);
    });
    Pin {
        variant: Arc::as_ptr(variant),
        slot,
        _thread: PhantomData,
    }
}

/// Remembers `variant` as this thread's for (`memo`, `generation`, `key`):
/// in the way of its set that holds a stale entry of the same memo and key,
/// or else the set's next way in turn; never in a pinned way (then it is
/// not remembered).
pub(crate) fn remember(memo: u64, generation: u64, key: &[u8], variant: &Arc<Variant>) {
    let _ = RECENT.try_with(|recent| {
        let Ok(mut recent) = recent.try_borrow_mut() else {
            return;
        };
        let s = memo as usize % SETS;
        let set = &mut recent[s];
        let pinned = |w: usize| {
            PINS.try_with(|pins| pins[s * WAYS + w].get() > 0)
                .unwrap_or(true)
        };
        let way = (0..WAYS)
            .find(|&w| {
                set.tags[w].0 == memo
                    && set.entries[w]
                        .as_ref()
                        .is_some_and(|e| e.key.as_slice() == key)
            })
            .or_else(|| {
                (0..WAYS)
                    .map(|i| (set.next + i) % WAYS)
                    .find(|&w| !pinned(w))
            });
        let Some(way) = way.filter(|&w| !pinned(w)) else {
            return;
        };
        set.next = (way + 1) % WAYS;
        set.tags[way] = (memo, generation);
        set.entries[way] = Some(Entry {
            key: KeyBytes::from_slice(key),
            packed: pack_key_bytes(key),
            variant: variant.clone(),
        });
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codegen::Dialect;

    fn variant(n: usize) -> Arc<Variant> {
        Arc::new(Variant::new(
            Dialect::Cpu,
            format!("k{n}"),
            format!("src{n}"),
        ))
    }

    fn get(memo: u64, generation: u64, key: &[u8]) -> Option<Arc<Variant>> {
        lookup(memo, generation, key).map(|pin| pin.to_arc())
    }

    #[test]
    fn hits_only_the_same_memo_generation_and_key() {
        let a = variant(1);
        remember(901, 3, b"ka", &a);
        assert!(Arc::ptr_eq(&get(901, 3, b"ka").unwrap(), &a));
        assert!(
            get(901, 4, b"ka").is_none(),
            "a cleared memo's entry is stale"
        );
        assert!(get(902, 3, b"ka").is_none(), "another memo");
        assert!(get(901, 3, b"kb").is_none(), "another key");
    }

    #[test]
    fn packed_keys_find_the_entry_of_their_bytes() {
        use crate::codegen::variant::{InputDesc, PassMode, VariantDesc};
        use crate::dtype::DType;
        use crate::kernel::variants::key::{encode_key, pack_key};
        let inputs = [InputDesc {
            dtype: DType::F32,
            mode: PassMode::Device,
        }];
        let desc = VariantDesc {
            inputs: &inputs,
            outputs: &[DType::F32],
            template: &[],
        };
        let mut key = KeyBytes::new();
        encode_key(Dialect::Cuda, &desc, &mut key);
        let packed = pack_key(
            Dialect::Cuda,
            inputs.iter().copied(),
            [DType::F32].into_iter(),
            &[],
        )
        .unwrap();
        let v = variant(7);
        remember(931, 2, &key, &v);
        let get_packed =
            |memo, generation, p| lookup_packed(memo, generation, p).map(|pin| pin.to_arc());
        assert!(Arc::ptr_eq(&get_packed(931, 2, packed).unwrap(), &v));
        assert!(get_packed(931, 3, packed).is_none(), "stale generation");
        assert!(get_packed(931, 2, packed + 1).is_none(), "another key");
        // A key without a packed form is found by its bytes only.
        remember(932, 0, b"raw", &v);
        assert!(get(932, 0, b"raw").is_some());
        assert!(get_packed(932, 0, 0).is_none());
    }

    #[test]
    fn a_newer_generation_replaces_the_stale_entry_in_place() {
        let (old, new) = (variant(1), variant(2));
        remember(911, 0, b"k", &old);
        let other = variant(10);
        remember(911, 0, b"j", &other);
        remember(911, 1, b"k", &new);
        assert!(Arc::ptr_eq(&get(911, 1, b"k").unwrap(), &new));
        // The other way of the set was not evicted by the refresh.
        assert!(Arc::ptr_eq(&get(911, 0, b"j").unwrap(), &other));
        // Only the new Arc is held for that key.
        assert_eq!(Arc::strong_count(&old), 1);
    }

    #[test]
    fn holds_at_most_ways_variants_per_memo_and_sets_times_ways_in_all() {
        let all: Vec<_> = (0..3 * WAYS).map(variant).collect();
        for (n, v) in all.iter().enumerate() {
            remember(921, 0, &[n as u8], v);
        }
        let held = all.iter().filter(|v| Arc::strong_count(v) > 1).count();
        assert_eq!(held, WAYS);
        // The most recent ones.
        for (n, v) in all.iter().enumerate().skip(2 * WAYS) {
            assert!(Arc::ptr_eq(&get(921, 0, &[n as u8]).unwrap(), v));
        }
        // Consecutive memo ids use every set.
        let many: Vec<_> = (0..4 * SETS * WAYS).map(variant).collect();
        for (n, v) in many.iter().enumerate() {
            remember(1000 + n as u64, 0, b"k", v);
        }
        let held = many.iter().filter(|v| Arc::strong_count(v) > 1).count();
        assert_eq!(held, SETS * WAYS);
    }

    #[test]
    fn a_pinned_entry_is_not_replaced_and_lends_its_variant() {
        let a = variant(1);
        remember(941, 0, b"a", &a);
        let pin = lookup(941, 0, b"a").unwrap();
        // Fill the set with other keys: the pinned way stays.
        for n in 0..4 * WAYS {
            remember(941, 0, &[b'x', n as u8], &variant(100 + n));
        }
        assert_eq!(pin.variant().name(), "k1");
        assert!(
            get(941, 0, b"a").is_some(),
            "the pinned entry is still there"
        );
        // A second pin of the same entry, then both released.
        let again = lookup(941, 0, b"a").unwrap();
        drop(pin);
        assert!(Arc::ptr_eq(&again.to_arc(), &a));
        drop(again);
        for n in 0..2 * WAYS {
            remember(941, 0, &[b'y', n as u8], &variant(200 + n));
        }
        assert!(get(941, 0, b"a").is_none(), "unpinned, it was replaced");
        assert_eq!(Arc::strong_count(&a), 1);
    }
}
