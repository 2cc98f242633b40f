//! The variant memo: per kernel, shared by its clones, bounded.
//!
//! Readers take no lock: the map is an immutable snapshot behind
//! [`Snapshot`], replaced whole by writers (copy on write). Inserts are rare —
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
use crate::sync::{lock, Arc, Mutex, Snapshot};

/// How many variants one kernel keeps memoized. When a new variant finds the
/// memo full, the memo is cleared whole: the simplest bound, and no worse
/// than LRU or FIFO for a cyclic working set larger than the cap. Launches
/// already prepared own their variant and are unaffected by a clear.
pub const MAX_CACHED_VARIANTS: usize = 64;

type Map = FxHashMap<Box<[u8]>, Arc<Variant>>;

/// See the module documentation.
pub(crate) struct VariantMemo {
    map: Snapshot<Map>,
    /// Serializes writers (readers never take it).
    writer: Mutex<()>,
}

impl Default for VariantMemo {
    fn default() -> Self {
        VariantMemo {
            map: Snapshot::new(Map::default()),
            writer: Mutex::new(()),
        }
    }
}

impl VariantMemo {
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
            Map::default()
        } else {
            (*current).clone()
        };
        next.insert(key.into(), variant.clone());
        self.map.store(Arc::new(next));
        variant
    }

    /// Number of memoized variants.
    pub(crate) fn len(&self) -> usize {
        self.map.with(|m| m.len())
    }

    /// Drops every memoized variant.
    pub(crate) fn clear(&self) {
        let _writer = lock(&self.writer);
        self.map.store(Arc::new(Map::default()));
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
