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
//! memo's *generation*, which every clear of the memo advances. The
//! generation is read before the memo is, so an entry can only be tagged
//! with a generation that was current when its variant was in the memo; a
//! clear makes every older entry a miss. So a thread never runs a variant
//! that another thread could not have got from the memo at the same moment,
//! and "one `Arc` per key at a time" holds as it does for the memo.
//!
//! **Shape.** [`SETS`] sets of [`WAYS`] entries; a memo's entries go to the
//! set its id selects (ids are sequential, so kernels made one after another
//! use different sets), so a thread that cycles over many kernels keeps one
//! or two variants of each, and one kernel called with two signatures in
//! turn keeps both.
//!
//! **Memory.** Each thread holds at most `SETS * WAYS` variants here, which
//! may outlive a clear of their memo until this thread's next calls replace
//! them.

use std::cell::RefCell;
use std::sync::Arc;

use crate::kernel::variant::{pack_key_bytes, KeyBytes, PackedKey, Variant};

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
}

/// Runs `f` on this thread's variant for (`memo`, `generation`, `key`), if
/// it has one. `f` is taken only on a hit. Re-entrant calls (none are
/// expected) simply miss.
#[inline]
pub(crate) fn lookup<F, R>(memo: u64, generation: u64, key: &[u8], f: &mut Option<F>) -> Option<R>
where
    F: FnOnce(&Arc<Variant>) -> R,
{
    find(memo, generation, |entry| entry.key.as_slice() == key, f)
}

/// [`lookup`] for a key in its packed form: one comparison per entry.
#[inline]
pub(crate) fn lookup_packed<F, R>(
    memo: u64,
    generation: u64,
    key: PackedKey,
    f: &mut Option<F>,
) -> Option<R>
where
    F: FnOnce(&Arc<Variant>) -> R,
{
    find(memo, generation, |entry| entry.packed == Some(key), f)
}

#[inline(always)]
fn find<F, R>(
    memo: u64,
    generation: u64,
    same: impl Fn(&Entry) -> bool,
    f: &mut Option<F>,
) -> Option<R>
where
    F: FnOnce(&Arc<Variant>) -> R,
{
    RECENT
        .try_with(|recent| {
            let recent = recent.try_borrow().ok()?;
            let set = &recent[memo as usize % SETS];
            for w in 0..WAYS {
                if set.tags[w] != (memo, generation) {
                    continue;
                }
                if let Some(entry) = &set.entries[w] {
                    if same(entry) {
                        return f.take().map(|f| f(&entry.variant));
                    }
                }
            }
            None
        })
        .ok()
        .flatten()
}

/// Remembers `variant` as this thread's for (`memo`, `generation`, `key`):
/// in the way of its set that holds a stale entry of the same memo and key,
/// or else the set's next way in turn.
pub(crate) fn remember(memo: u64, generation: u64, key: &[u8], variant: &Arc<Variant>) {
    let _ = RECENT.try_with(|recent| {
        let Ok(mut recent) = recent.try_borrow_mut() else {
            return;
        };
        let set = &mut recent[memo as usize % SETS];
        let way = (0..WAYS)
            .find(|&w| {
                set.tags[w].0 == memo
                    && set.entries[w]
                        .as_ref()
                        .is_some_and(|e| e.key.as_slice() == key)
            })
            .unwrap_or_else(|| {
                let w = set.next;
                set.next = (w + 1) % WAYS;
                w
            });
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
        lookup(
            memo,
            generation,
            key,
            &mut Some(|v: &Arc<Variant>| v.clone()),
        )
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
        use crate::kernel::variant::{encode_key, pack_key};
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
        let get_packed = |memo, generation, p| {
            lookup_packed(memo, generation, p, &mut Some(|v: &Arc<Variant>| v.clone()))
        };
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
}
