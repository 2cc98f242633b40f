//! The variant memo: per kernel, shared by its clones, bounded by bytes and
//! by entries, evicting with CLOCK (second chance).
//!
//! **Reads take no lock.** The entries live in shards picked by the key's
//! hash; each shard is an immutable list behind a `Snapshot`, replaced
//! whole by writers (copy on write). A hit loads one shard, compares
//! hashes, then the key (inline in the entry), clones the variant's `Arc`
//! and sets the variant's *referenced* bit if it is clear (a plain store,
//! only the first time after the clock hand cleared it; a hit of a
//! thread's recent variants, in front of the memo, sets it too). The shard count grows with the entry
//! cap (about 8 entries a shard when full), so a writer copies a few
//! entries per change, never the whole memo.
//!
//! **Writers** (a miss that built a variant, a clear) are serialized by one
//! lock, which readers never take. Variants are built outside it; two
//! threads that race to build the same key both build, and the first insert
//! wins (the loser returns the winner's entry, so every caller sees one
//! `Arc` per key at a time).
//!
//! **Eviction: CLOCK.** The writer keeps the entries in a ring in insertion
//! order. When a new variant would take the memo past its entry cap or its
//! byte budget (see [`MemoConfig`]), the hand takes the oldest entry: if it
//! was used since the hand last passed (its bit is set), the bit is cleared
//! and the entry goes to the back of the ring; else it is evicted. Hot
//! variants, touched between two passes of the hand, stay; a long tail of
//! variants used once passes through. (An LRU list would need a write
//! under a lock on every hit; CLOCK needs one relaxed store per entry per
//! pass of the hand. `BENCHMARKS.md` has the Zipf hit rates.) The new
//! variant is always kept, whatever its size.
//!
//! **Bytes.** An entry is charged its variant's own bytes (name, its part of
//! the source, the struct) and the entry's; the text the kernel's variants
//! share (prelude, header, body: `codegen::parts`) is charged once, by the
//! kernel, when it builds it (`VariantMemo::charge_shared`).
//!
//! **Generation.** Every change that removes entries (an eviction, a clear)
//! advances the memo's generation *after* publishing the removal; caches in
//! front of the memo tag what they copy with the generation they read
//! before reading the memo (`recent`), so a removed variant is never
//! answered from them again.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::config::MemoConfig;
use crate::error::Result;
use crate::kernel::variant::Variant;
use crate::kernel::variants::key::KeyBytes;
use crate::sync::{self, lock, AtomicU64, AtomicUsize, Mutex, Snapshot};

/// The seed's bound, kept for the benchmarks' baseline: 64 variants per
/// kernel, the memo cleared whole when a new one finds it full.
#[cfg(feature = "bench")]
pub const SEED_MAX_VARIANTS: usize = 64;

/// Most shards of one memo.
const MAX_SHARDS: usize = 256;

/// One memoized variant. Variants are immutable once built (but for their
/// referenced bit, `Variant::touch`, which every hit sets, the memo's and
/// each thread's recent cache's, and the clock hand clears), so entries
/// hold them in plain `std` `Arc`s even under `loom`: what the models check
/// is the protocol around the shards (the snapshots, the writer lock and
/// the referenced bits), which use the swappable primitives of
/// [`crate::sync`].
struct Entry {
    hash: u64,
    /// Inline when it fits (most keys): a hit reads no other block.
    key: KeyBytes,
    variant: Arc<Variant>,
    /// What the entry is charged.
    bytes: usize,
}

/// A shard: its entries with their hashes, compared before any key.
type Shard = Vec<(u64, Arc<Entry>)>;

/// How the memo makes room.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Policy {
    /// CLOCK within the [`MemoConfig`] bounds.
    Clock,
    /// The seed's: cleared whole when a new variant finds this many.
    #[cfg(feature = "bench")]
    ClearAllAt(usize),
}

/// What only writers touch, under the writer lock.
#[derive(Default)]
struct Writer {
    /// Every entry, oldest first: the clock's ring.
    ring: VecDeque<Arc<Entry>>,
    /// Bytes charged to the entries.
    bytes: usize,
}

/// See the module documentation.
pub(crate) struct VariantMemo {
    shards: Box<[Snapshot<Shard>]>,
    /// Serializes writers (readers never take it).
    writer: Mutex<Writer>,
    limits: MemoConfig,
    policy: Policy,
    /// Unique among the memos of this process (never reused), for caches
    /// in front of the memo (`kernel::recent`).
    id: u64,
    /// Advanced after every removal is published.
    generation: AtomicU64,
    /// Entries, and bytes charged (entries and shared text), for readers.
    len: AtomicUsize,
    bytes: AtomicUsize,
    /// Bytes of the shared text, charged by the kernel.
    shared_bytes: AtomicUsize,
}

impl Default for VariantMemo {
    fn default() -> Self {
        VariantMemo::new(MemoConfig::default())
    }
}

/// The hash of a key that picks its shard and is compared first.
#[inline]
fn key_hash(key: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(key)
}

impl VariantMemo {
    /// An empty memo within `limits`.
    pub(crate) fn new(limits: MemoConfig) -> VariantMemo {
        VariantMemo::with_policy(limits.max_entries(limits.max_entries), Policy::Clock)
    }

    /// The seed's memo: at most [`SEED_MAX_VARIANTS`], cleared whole when
    /// full, no byte budget (the benchmarks' baseline).
    #[cfg(feature = "bench")]
    pub(crate) fn seed() -> VariantMemo {
        VariantMemo::with_policy(
            MemoConfig::default()
                .max_entries(SEED_MAX_VARIANTS)
                .max_bytes(usize::MAX),
            Policy::ClearAllAt(SEED_MAX_VARIANTS),
        )
    }

    fn with_policy(limits: MemoConfig, policy: Policy) -> VariantMemo {
        static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let shards = (limits.max_entries / 8)
            .clamp(1, MAX_SHARDS)
            .next_power_of_two();
        let empty = sync::Arc::new(Shard::new());
        VariantMemo {
            shards: (0..shards)
                .map(|_| Snapshot::from_arc(empty.clone()))
                .collect(),
            writer: Mutex::new(Writer::default()),
            limits,
            policy,
            id: NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            generation: AtomicU64::new(0),
            len: AtomicUsize::new(0),
            bytes: AtomicUsize::new(0),
            shared_bytes: AtomicUsize::new(0),
        }
    }

    /// The bounds this memo keeps.
    pub(crate) fn limits(&self) -> MemoConfig {
        self.limits
    }

    /// This memo's id, for caches in front of it.
    #[inline]
    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// How many times entries were removed. A variant found in the memo
    /// after reading generation `g` is not removed before the generation
    /// passes `g` (removals advance it after they publish).
    #[inline]
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    fn advance_generation(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
    }

    #[inline]
    fn shard(&self, hash: u64) -> &Snapshot<Shard> {
        // The low bits: xxh3's are as good as its high ones.
        &self.shards[hash as usize & (self.shards.len() - 1)]
    }

    /// The variant for `key`, if memoized. Takes no lock and allocates nothing.
    #[inline]
    pub(crate) fn get(&self, key: &[u8]) -> Option<Arc<Variant>> {
        let hash = key_hash(key);
        self.shard(hash).with(|shard| {
            shard.iter().find_map(|(h, e)| {
                (*h == hash && *e.key == *key).then(|| {
                    e.variant.touch();
                    e.variant.clone()
                })
            })
        })
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

    /// Charges `bytes` of text shared by this memo's variants (the kernel
    /// built a shared part): counted against the budget until the memo is
    /// dropped.
    pub(crate) fn charge_shared(&self, bytes: usize) {
        let _writer = lock(&self.writer);
        self.shared_bytes.fetch_add(bytes, Ordering::Relaxed);
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Inserts unless another thread got there first; returns the entry
    /// that is in the memo afterwards. Makes room first (see the module
    /// documentation), publishing each shard it changes.
    fn insert(&self, key: &[u8], variant: Arc<Variant>) -> Arc<Variant> {
        let mut w = lock(&self.writer);
        let hash = key_hash(key);
        let current = self.shard(hash).load_full();
        if let Some((_, existing)) = current.iter().find(|(h, e)| *h == hash && *e.key == *key) {
            existing.variant.touch();
            return existing.variant.clone();
        }
        drop(current);
        let spilled = if key.len() > std::mem::size_of::<KeyBytes>() - 8 {
            key.len()
        } else {
            0
        };
        let bytes = variant.own_bytes()
            + spilled
            + std::mem::size_of::<Entry>()
            + 16 // the entry's Arc counts
            + std::mem::size_of::<(u64, Arc<Entry>)>()
            + std::mem::size_of::<Arc<Entry>>(); // its ring slot
        let shared = self.shared_bytes.load(Ordering::Relaxed);
        let mut removed = false;
        match self.policy {
            Policy::Clock => {
                while !w.ring.is_empty()
                    && (w.ring.len() >= self.limits.max_entries
                        || shared + w.bytes + bytes > self.limits.max_bytes)
                {
                    let Some(oldest) = w.ring.pop_front() else {
                        break;
                    };
                    if oldest.variant.take_reference() {
                        w.ring.push_back(oldest);
                        continue;
                    }
                    self.unpublish(&oldest);
                    w.bytes -= oldest.bytes;
                    removed = true;
                }
            }
            #[cfg(feature = "bench")]
            Policy::ClearAllAt(n) => {
                if w.ring.len() >= n {
                    self.unpublish_all();
                    w.ring.clear();
                    w.bytes = 0;
                    removed = true;
                }
            }
        }
        let entry = Arc::new(Entry {
            hash,
            key: KeyBytes::from_slice(key),
            variant: variant.clone(),
            bytes,
        });
        let shard = self.shard(hash);
        let mut next = Shard::clone(&shard.load_full());
        next.push((hash, entry.clone()));
        shard.store(sync::Arc::new(next));
        w.ring.push_back(entry);
        w.bytes += bytes;
        self.publish_counts(&w);
        if removed {
            self.advance_generation();
        }
        variant
    }

    /// Takes `entry` out of its shard (the writer lock held).
    fn unpublish(&self, entry: &Arc<Entry>) {
        let shard = self.shard(entry.hash);
        let current = shard.load_full();
        let next: Shard = current
            .iter()
            .filter(|(_, e)| !Arc::ptr_eq(e, entry))
            .cloned()
            .collect();
        shard.store(sync::Arc::new(next));
    }

    /// Empties every shard (the writer lock held).
    fn unpublish_all(&self) {
        let empty = sync::Arc::new(Shard::new());
        for shard in self.shards.iter() {
            shard.store(empty.clone());
        }
    }

    /// Publishes the entry count and bytes for readers.
    fn publish_counts(&self, w: &Writer) {
        self.len.store(w.ring.len(), Ordering::Relaxed);
        self.bytes.store(
            w.bytes + self.shared_bytes.load(Ordering::Relaxed),
            Ordering::Relaxed,
        );
    }

    /// Number of memoized variants.
    pub(crate) fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }

    /// Bytes charged: the shared text and every entry (an estimate of heap
    /// bytes, see the module documentation).
    pub(crate) fn bytes(&self) -> usize {
        self.bytes.load(Ordering::Relaxed)
    }

    /// Drops every memoized variant (the shared text stays charged: the
    /// kernel keeps it).
    pub(crate) fn clear(&self) {
        let mut w = lock(&self.writer);
        self.unpublish_all();
        w.ring.clear();
        w.bytes = 0;
        self.publish_counts(&w);
        self.advance_generation();
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::codegen::Dialect;

    fn variant(n: usize) -> Variant {
        Variant::new(Dialect::Cpu, format!("k{n}"), format!("src{n}"))
    }

    fn key(n: usize) -> [u8; 8] {
        n.to_le_bytes()
    }

    #[test]
    fn bounded_by_entries_evicting_the_unreferenced() {
        let memo = VariantMemo::new(MemoConfig::default().max_entries(64));
        let mut weak = Vec::new();
        for n in 0..200usize {
            let v = memo.get_or_build(&key(n), || Ok(variant(n))).unwrap();
            weak.push(Arc::downgrade(&v));
            assert!(memo.len() <= 64);
            // A hot variant, used between every two inserts.
            memo.get_or_build(b"hot", || Ok(variant(1000))).unwrap();
        }
        let alive = weak.iter().filter(|w| w.upgrade().is_some()).count();
        assert!(alive < 64, "{alive} alive");
        assert_eq!(memo.len(), 64);
        assert!(
            memo.get(b"hot").is_some(),
            "the hot variant survives every pass of the hand"
        );
        // The newest ones are there; the oldest were evicted.
        assert!(memo.get(&key(199)).is_some());
        assert!(memo.get(&key(0)).is_none());
    }

    #[test]
    fn bounded_by_bytes_with_the_shared_text_charged_once() {
        let one = {
            // As large as the last ten of the loop below (two-digit names).
            let memo = VariantMemo::default();
            memo.get_or_build(&key(50), || Ok(variant(50))).unwrap();
            memo.bytes()
        };
        let memo = VariantMemo::new(MemoConfig::default().max_bytes(1000 + 10 * one));
        memo.charge_shared(1000);
        for n in 0..100usize {
            memo.get_or_build(&key(n), || Ok(variant(n))).unwrap();
            assert!(memo.bytes() <= 1000 + 10 * one, "{}", memo.bytes());
        }
        assert_eq!(memo.len(), 10);
        // A budget below one variant still keeps the newest.
        let tiny = VariantMemo::new(MemoConfig::default().max_bytes(1));
        for n in 0..5usize {
            let v = tiny.get_or_build(&key(n), || Ok(variant(n))).unwrap();
            assert!(Arc::ptr_eq(&tiny.get(&key(n)).unwrap(), &v));
            assert_eq!(tiny.len(), 1);
        }
    }

    #[test]
    fn first_insert_wins() {
        let memo = VariantMemo::default();
        let a = memo.get_or_build(b"k", || Ok(variant(1))).unwrap();
        let b = memo.insert(b"k", Arc::new(variant(2)));
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(memo.len(), 1);
    }

    #[test]
    fn removals_advance_the_generation_and_inserts_do_not() {
        let memo = VariantMemo::new(MemoConfig::default().max_entries(2));
        let g = memo.generation();
        memo.get_or_build(&key(0), || Ok(variant(0))).unwrap();
        memo.get_or_build(&key(1), || Ok(variant(1))).unwrap();
        assert_eq!(memo.generation(), g);
        memo.get_or_build(&key(2), || Ok(variant(2))).unwrap();
        assert_eq!(memo.generation(), g + 1, "an eviction");
        memo.clear();
        assert_eq!(memo.generation(), g + 2);
        assert_eq!(memo.len(), 0);
    }

    #[test]
    fn many_shards_hold_many_entries() {
        let memo = VariantMemo::new(MemoConfig::default().max_entries(4096));
        assert_eq!(memo.shards.len(), 512usize.min(MAX_SHARDS));
        for n in 0..3000usize {
            memo.get_or_build(&key(n), || Ok(variant(n))).unwrap();
        }
        assert_eq!(memo.len(), 3000);
        for n in 0..3000usize {
            assert_eq!(memo.get(&key(n)).unwrap().name(), format!("k{n}"));
        }
    }

    #[cfg(feature = "bench")]
    #[test]
    fn the_seed_policy_clears_all_at_64() {
        let memo = VariantMemo::seed();
        for n in 0..200usize {
            memo.get_or_build(&key(n), || Ok(variant(n))).unwrap();
            assert!(memo.len() <= SEED_MAX_VARIANTS);
        }
        // 200 = 3 * 64 + 8: the last clear left 8 entries.
        assert_eq!(memo.len(), 200 % SEED_MAX_VARIANTS);
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

    fn small(entries: usize) -> VariantMemo {
        VariantMemo::new(MemoConfig::default().max_entries(entries))
    }

    /// Two threads build the same key at once: both get the one `Arc` that
    /// is in the memo (the first insert wins, the loser's build is dropped).
    #[test]
    fn loom_same_key_gives_one_arc() {
        sync::model(None, || {
            let memo = sync::Arc::new(small(4));
            let other = memo.clone();
            let t = thread::spawn(move || other.get_or_build(b"k", || Ok(variant(1))).unwrap());
            let mine = memo.get_or_build(b"k", || Ok(variant(2))).unwrap();
            let theirs = t.join().unwrap();
            assert!(Arc::ptr_eq(&mine, &theirs));
            assert!(Arc::ptr_eq(&memo.get(b"k").unwrap(), &mine));
            assert_eq!(memo.len(), 1);
        });
    }

    /// The memo is full (two entries); one thread's new key makes the hand
    /// evict while another thread hits an entry and keeps its variant (as a
    /// prepared launch does). The kept variant stays whole, the memo stays
    /// bounded, the new key is in it afterwards, an entry referenced before
    /// the hand came survives, and the generation moved iff an entry left.
    #[test]
    fn loom_eviction_while_a_variant_is_held() {
        sync::model(None, || {
            let memo = sync::Arc::new(small(2));
            memo.get_or_build(b"a", || Ok(variant(1))).unwrap();
            let held = memo.get_or_build(b"held", || Ok(variant(1000))).unwrap();
            let before = memo.generation();

            let other = memo.clone();
            let t = thread::spawn(move || {
                // A hit (then `held` is referenced) or, if the hand took
                // it first, a rebuild.
                let v = other.get_or_build(b"held", || Ok(variant(1000))).unwrap();
                assert_eq!(v.name(), "k1000");
                v
            });
            let fresh = memo.get_or_build(b"new", || Ok(variant(2000))).unwrap();
            let launched = t.join().unwrap();

            assert_eq!(held.name(), "k1000");
            assert_eq!(held.source(), "src1000");
            assert_eq!(launched.source(), "src1000");
            assert!(memo.len() <= 2, "bounded: {}", memo.len());
            assert!(Arc::ptr_eq(&memo.get(b"new").unwrap(), &fresh));
            if let Some(v) = memo.get(b"held") {
                assert!(Arc::ptr_eq(&v, &launched));
            }
            assert!(memo.generation() > before, "an entry was evicted");
        });
    }

    /// A reader's referenced bit races with the hand: whatever the order,
    /// the entry is either kept (the bit was seen) or gone from every shard
    /// (then a later get misses and rebuilds one whole variant).
    #[test]
    fn loom_touch_races_with_the_hand() {
        sync::model(None, || {
            let memo = sync::Arc::new(small(1));
            let first = memo.get_or_build(b"a", || Ok(variant(1))).unwrap();
            let other = memo.clone();
            let t = thread::spawn(move || other.get(b"a"));
            memo.get_or_build(b"b", || Ok(variant(2))).unwrap();
            if let Some(v) = t.join().unwrap() {
                assert!(Arc::ptr_eq(&v, &first));
            }
            assert_eq!(memo.len(), 1, "the cap holds");
            let again = memo.get_or_build(b"a", || Ok(variant(3))).unwrap();
            assert!(again.name() == "k1" || again.name() == "k3");
        });
    }

    /// An explicit clear races with a build of a new key: the builder gets a
    /// whole variant, and the memo holds either nothing or exactly that one.
    #[test]
    fn loom_clear_races_with_a_build() {
        sync::model(None, || {
            let memo = sync::Arc::new(small(4));
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
