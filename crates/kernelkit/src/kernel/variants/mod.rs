//! The variant cache of one kernel: key encoding, the memo shared by all
//! clones of the kernel, and each thread's recent variants in front of it,
//! behind one lookup that returns a guard.
//!
//! ```text
//! call's arguments ──► VariantKey (packed in a word, or bytes)
//!                        │
//!                        ▼
//!   recent (this thread: a few lines, no atomics) ──hit──► VariantRef::Recent
//!                        │ miss
//!                        ▼
//!   memo (shared, lock-free reads) ──hit──► VariantRef::Shared (remembered)
//!                        │ miss
//!                        ▼
//!   per-variant checks, generate this variant's part and hash it from
//!   the kernel's hashed prefix ──► memo (CLOCK) ──► VariantRef::Shared
//! ```
//!
//! A `VariantRef` holds no lock, no `RefCell` borrow and no snapshot
//! guard: the call that got it checks, resolves its function and launches
//! with it, in a straight line.
//!
//! - `key`: the encoding (see its documentation).
//! - `memo`: the bounded memo (a byte budget and an entry cap, CLOCK
//!   eviction, lock-free hits).
//! - `recent`: the per-thread cache in front of it (exact: tagged with the
//!   memo's generation).

pub(crate) mod key;
pub mod memo;
#[cfg(not(loom))]
mod recent;
/// Under loom the models check the memo itself: no per-thread cache in
/// front of it.
#[cfg(loom)]
mod recent {
    use super::key::PackedKey;
    use crate::kernel::variant::Variant;
    use std::sync::Arc;

    pub(crate) enum Pin {}
    impl Pin {
        pub(crate) fn variant(&self) -> &Variant {
            match *self {}
        }
        pub(crate) fn to_arc(&self) -> Arc<Variant> {
            match *self {}
        }
    }
    pub(crate) fn lookup(_: u64, _: u64, _: &[u8]) -> Option<Pin> {
        None
    }
    pub(crate) fn lookup_packed(_: u64, _: u64, _: PackedKey) -> Option<Pin> {
        None
    }
    pub(crate) fn remember(_: u64, _: u64, _: &[u8], _: &Arc<Variant>) {}
}

use std::sync::Arc;

use crate::error::Result;
use crate::kernel::variant::Variant;
use key::{KeyBytes, PackedKey};
use memo::VariantMemo;

/// A call's variant key, as the call can give it.
pub(crate) enum VariantKey<'a> {
    /// Packed in a word; `encode` writes its bytes (only on a miss of this
    /// thread's cache).
    Packed(PackedKey, &'a dyn Fn(&mut KeyBytes)),
    /// Encoded.
    Bytes(&'a [u8]),
}

/// A variant found by [`VariantCache::get`]: lent by this thread's cache,
/// or shared from the memo.
pub(crate) enum VariantRef {
    Recent(recent::Pin),
    Shared(Arc<Variant>),
}

impl std::ops::Deref for VariantRef {
    type Target = Variant;
    #[inline]
    fn deref(&self) -> &Variant {
        match self {
            VariantRef::Recent(pin) => pin.variant(),
            VariantRef::Shared(v) => v,
        }
    }
}

impl VariantRef {
    /// The variant as an owned `Arc` (a prepared launch keeps it): the
    /// memo's `Arc` moved out, or a count taken on the pinned one.
    pub(crate) fn into_arc(self) -> Arc<Variant> {
        match self {
            VariantRef::Recent(pin) => pin.to_arc(),
            VariantRef::Shared(v) => v,
        }
    }
}

/// See the module documentation. Shared by every clone of a kernel.
pub(crate) struct VariantCache {
    memo: VariantMemo,
    /// Variants built (one per miss of the memo), for the memo's hit rate.
    built: std::sync::atomic::AtomicU64,
}

impl VariantCache {
    /// An empty cache whose memo keeps within `limits`.
    pub(crate) fn new(limits: crate::config::MemoConfig) -> VariantCache {
        VariantCache {
            memo: VariantMemo::new(limits),
            built: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// An empty cache with the seed's memo (the benchmarks' baseline).
    #[cfg(feature = "bench")]
    pub(crate) fn seed() -> VariantCache {
        VariantCache {
            memo: VariantMemo::seed(),
            built: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// The memo's bounds.
    pub(crate) fn limits(&self) -> crate::config::MemoConfig {
        self.memo.limits()
    }

    /// Bytes the memo holds (see `memo`).
    pub(crate) fn bytes(&self) -> usize {
        self.memo.bytes()
    }

    /// Charges text shared by the kernel's variants to the memo's budget.
    pub(crate) fn charge_shared(&self, bytes: usize) {
        self.memo.charge_shared(bytes)
    }

    /// The variant for `key`: this thread's, the memo's, or, on a miss of
    /// both, the one `build` makes from the encoded key (per-variant checks
    /// included), memoized.
    #[inline]
    pub(crate) fn get(
        &self,
        key: VariantKey<'_>,
        build: impl FnOnce(&[u8]) -> Result<Variant>,
    ) -> Result<VariantRef> {
        let memo = &self.memo;
        // Read before the memo, so that what this call finds is tagged with
        // a generation current while it was memoized (see `recent`).
        let generation = memo.generation();
        let found = match key {
            VariantKey::Packed(packed, _) => recent::lookup_packed(memo.id(), generation, packed),
            VariantKey::Bytes(bytes) => recent::lookup(memo.id(), generation, bytes),
        };
        match found {
            Some(pin) => Ok(VariantRef::Recent(pin)),
            None => self.get_from_memo(key, generation, build),
        }
    }

    /// The memo's part of [`VariantCache::get`], kept out of line: a
    /// repeated call never runs it, and its code would only crowd the
    /// instruction cache of the path that does run.
    #[inline(never)]
    fn get_from_memo(
        &self,
        key: VariantKey<'_>,
        generation: u64,
        build: impl FnOnce(&[u8]) -> Result<Variant>,
    ) -> Result<VariantRef> {
        let mut encoded = KeyBytes::new();
        let bytes = match key {
            VariantKey::Packed(_, encode) => {
                encode(&mut encoded);
                &encoded[..]
            }
            VariantKey::Bytes(bytes) => bytes,
        };
        let memo = &self.memo;
        let variant = match memo.get(bytes) {
            Some(variant) => variant,
            None => memo.get_or_build(bytes, || {
                self.built
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                build(bytes)
            })?,
        };
        recent::remember(memo.id(), generation, bytes, &variant);
        Ok(VariantRef::Shared(variant))
    }

    /// How many variants were built (memo misses) since the cache was made.
    pub(crate) fn built(&self) -> u64 {
        self.built.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// How many variants are memoized.
    pub(crate) fn len(&self) -> usize {
        self.memo.len()
    }

    /// Forgets every memoized variant (this thread's and other threads'
    /// recent ones become misses). The kernel's shared text stays.
    pub(crate) fn clear(&self) {
        self.memo.clear()
    }
}
