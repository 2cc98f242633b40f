//! The variant memo: per kernel, shared by its clones, bounded.
//!
//! Readers take no lock: the map is an immutable snapshot behind
//! `Snapshot`, replaced whole by writers (copy on write). Inserts are rare —
//! one per distinct variant, at most [`MAX_CACHED_VARIANTS`] before the map is
//! cleared — so copying a map of at most 64 entries on insert costs nothing
//! that matters, while every hit stays free of shared writes to a lock word.
//!
//! Variants are built outside any lock; two threads that race to build the
//! same key both build, and the first insert wins (the loser returns the
//! winner's entry, so every caller sees one `Arc` per key at a time).

use rustc_hash::FxHashMap;

use crate::error::Result;
use crate::kernel::variant::Variant;
use std::sync::Arc;

use crate::sync::{self, lock, Mutex, Snapshot};

/// How many variants one kernel keeps memoized. When a new variant finds the
/// memo full, the memo is cleared whole: the simplest bound, and no worse
/// than LRU or FIFO for a cyclic working set larger than the cap. Launches
/// already prepared own their variant and are unaffected by a clear.
pub const MAX_CACHED_VARIANTS: usize = 64;

/// Variants are immutable once built, so the map holds them in plain
/// `std` `Arc`s even under `loom`: what the models check is the protocol
/// around the map (the snapshot and the writer lock), which uses the
/// swappable primitives of [`crate::sync`].
type Map = FxHashMap<Box<[u8]>, Arc<Variant>>;

/// See the module documentation.
pub(crate) struct VariantMemo {
    map: Snapshot<Map>,
    /// Serializes writers (readers never take it).
    writer: Mutex<()>,
    /// Unique among the memos of this process (never reused), for caches
    /// in front of the memo (`kernel::recent`).
    id: u64,
    /// Advanced by every clear, before the cleared map is published.
    generation: std::sync::atomic::AtomicU64,
}

impl Default for VariantMemo {
    fn default() -> Self {
        static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        VariantMemo {
            map: Snapshot::new(Map::default()),
            writer: Mutex::new(()),
            id: NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            generation: std::sync::atomic::AtomicU64::new(0),
        }
    }
}

impl VariantMemo {
    /// This memo's id, for caches in front of it.
    #[inline]
    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// How many times the memo has been cleared. A variant found in the
    /// memo after reading generation `g` was in the memo while the
    /// generation was `g` (clears advance it before they publish).
    #[inline]
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(std::sync::atomic::Ordering::Acquire)
    }

    fn advance_generation(&self) {
        self.generation
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
    }

    /// The variant for `key`, if memoized. Takes no lock and allocates nothing.
    #[inline]
    pub(crate) fn get(&self, key: &[u8]) -> Option<Arc<Variant>> {
        self.map.with(|m| m.get(key).cloned())
    }

    /// The variant for `key`, building it with `build` on a miss.
    pub(crate) fn get_or_build(
        &self,
        key: &[u8],
        build: impl FnOnce() -> Result<Variant>,
    ) -> Result<Arc<Variant>> {
        if let Some(v) = self.get(key) {
            return Ok(v);
        }
        let built = Arc::new(build()?);
        Ok(self.insert(key, built))
    }

    /// Inserts unless another thread got there first; returns the entry
    /// that is in the memo afterwards.
    fn insert(&self, key: &[u8], variant: Arc<Variant>) -> Arc<Variant> {
        let _writer = lock(&self.writer);
        let current = self.map.load_full();
        if let Some(existing) = current.get(key) {
            return existing.clone();
        }
        let mut next = if current.len() >= MAX_CACHED_VARIANTS {
            self.advance_generation();
            Map::default()
        } else {
            (*current).clone()
        };
        next.insert(key.into(), variant.clone());
        self.map.store(sync::Arc::new(next));
        variant
    }

    /// Number of memoized variants.
    pub(crate) fn len(&self) -> usize {
        self.map.with(|m| m.len())
    }

    /// Drops every memoized variant.
    pub(crate) fn clear(&self) {
        let _writer = lock(&self.writer);
        self.advance_generation();
        self.map.store(sync::Arc::new(Map::default()));
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::codegen::Dialect;

    fn variant(n: usize) -> Variant {
        Variant::new(Dialect::Cpu, format!("k{n}"), format!("src{n}"))
    }

    #[test]
    fn bounded_clear_all() {
        let memo = VariantMemo::default();
        let mut weak = Vec::new();
        for n in 0..200usize {
            let v = memo
                .get_or_build(&n.to_le_bytes(), || Ok(variant(n)))
                .unwrap();
            weak.push(Arc::downgrade(&v));
            assert!(memo.len() <= MAX_CACHED_VARIANTS);
        }
        let alive = weak.iter().filter(|w| w.upgrade().is_some()).count();
        assert!(alive <= MAX_CACHED_VARIANTS, "{alive} alive");
        // 200 = 3 * 64 + 8: the last clear left 8 entries.
        assert_eq!(memo.len(), 200 % MAX_CACHED_VARIANTS);
    }

    #[test]
    fn first_insert_wins() {
        let memo = VariantMemo::default();
        let a = memo.get_or_build(b"k", || Ok(variant(1))).unwrap();
        let b = memo.insert(b"k", Arc::new(variant(2)));
        assert!(Arc::ptr_eq(&a, &b));
    }
}

/// Model-checked with `loom` (`RUSTFLAGS="--cfg loom" cargo test --lib loom_`).
#[cfg(all(test, loom))]
mod loom_models {
    use super::*;
    use crate::codegen::Dialect;
    use loom::thread;

    fn variant(n: usize) -> Variant {
        Variant::new(Dialect::Cpu, format!("k{n}"), format!("src{n}"))
    }

    /// Two threads build the same key at once: both get the one `Arc` that
    /// is in the memo (the first insert wins, the loser's build is dropped).
    #[test]
    fn loom_same_key_gives_one_arc() {
        sync::model(None, || {
            let memo = sync::Arc::new(VariantMemo::default());
            let other = memo.clone();
            let t = thread::spawn(move || other.get_or_build(b"k", || Ok(variant(1))).unwrap());
            let mine = memo.get_or_build(b"k", || Ok(variant(2))).unwrap();
            let theirs = t.join().unwrap();
            assert!(Arc::ptr_eq(&mine, &theirs));
            assert!(Arc::ptr_eq(&memo.get(b"k").unwrap(), &mine));
            assert_eq!(memo.len(), 1);
        });
    }

    /// The memo is full; one thread's new key clears it whole while another
    /// thread takes a variant out and keeps it (as a prepared launch does).
    /// The kept variant stays whole, the memo stays bounded, and the new
    /// key is in it afterwards.
    #[test]
    fn loom_clear_all_while_a_variant_is_held() {
        sync::model(None, || {
            let memo = sync::Arc::new(VariantMemo::default());
            for n in 0..MAX_CACHED_VARIANTS - 1 {
                memo.get_or_build(&n.to_le_bytes(), || Ok(variant(n)))
                    .unwrap();
            }
            let held = memo.get_or_build(b"held", || Ok(variant(1000))).unwrap();
            assert_eq!(memo.len(), MAX_CACHED_VARIANTS);

            let other = memo.clone();
            let t = thread::spawn(move || {
                // May see the full memo (a hit) or the cleared one (a rebuild).
                let v = other.get_or_build(b"held", || Ok(variant(1000))).unwrap();
                assert_eq!(v.name(), "k1000");
                v
            });
            let fresh = memo.get_or_build(b"new", || Ok(variant(2000))).unwrap();
            let launched = t.join().unwrap();

            assert_eq!(held.name(), "k1000");
            assert_eq!(held.source(), "src1000");
            assert_eq!(launched.source(), "src1000");
            assert!(memo.len() <= 2, "cleared whole: {}", memo.len());
            assert!(Arc::ptr_eq(&memo.get(b"new").unwrap(), &fresh));
            if let Some(v) = memo.get(b"held") {
                assert!(Arc::ptr_eq(&v, &launched));
            }
        });
    }

    /// An explicit clear races with a build of a new key: the builder gets a
    /// whole variant, and the memo holds either nothing or exactly that one.
    #[test]
    fn loom_clear_races_with_a_build() {
        sync::model(None, || {
            let memo = sync::Arc::new(VariantMemo::default());
            let other = memo.clone();
            let t = thread::spawn(move || other.clear());
            let v = memo.get_or_build(b"k", || Ok(variant(7))).unwrap();
            t.join().unwrap();
            assert_eq!(v.name(), "k7");
            match memo.get(b"k") {
                Some(m) => assert!(Arc::ptr_eq(&m, &v)),
                None => assert_eq!(memo.len(), 0),
            }
        });
    }
}
