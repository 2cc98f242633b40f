//! The store on its own, with made-up payloads (no compiler): every kind of
//! corruption, trust, the layout, the running total, eviction, and the
//! inspection API.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::time::{Duration, SystemTime};

use super::*;
use crate::cache::entry::{Contents, EntryKind};
use crate::cache::key::{IdentityDigest, ARTIFACT_FORMAT_VERSION};
use std::path::PathBuf;

fn new_store() -> (tempfile::TempDir, ArtifactStore) {
    let tmp = tempfile::tempdir().unwrap();
    let store = ArtifactStore::create(tmp.path().join("store")).unwrap();
    (tmp, store)
}

fn key(n: u32) -> ModuleKey {
    ModuleKey::derive("cpu", "test compiler", &format!("f{n}"), "source")
}

fn payload(n: u32) -> Vec<u8> {
    format!("artifact number {n}").into_bytes()
}

fn put(store: &ArtifactStore, n: u32) {
    let none = Dependencies::default();
    store
        .write(
            &key(n),
            &Contents {
                kind: EntryKind::Code,
                target: "native",
                kernel: "kern",
                backend: "cpu",
                function: &format!("f{n}"),
                identity: IdentityDigest::of("cpu", "test compiler"),
                dependencies: &none,
                payload: &payload(n),
            },
        )
        .unwrap();
}

fn hit(store: &ArtifactStore, n: u32) -> bool {
    match store.lookup(&key(n)) {
        Lookup::Hit(found) => {
            assert_eq!(
                found.payload,
                payload(n),
                "a hit returns the payload it stored"
            );
            assert_eq!(found.function, format!("f{n}"), "and its names");
            true
        }
        Lookup::Miss => false,
    }
}

fn stats(store: &ArtifactStore) -> CacheStats {
    let mut s = CacheStats::default();
    store.add_stats(&mut s);
    s
}

fn set_mode(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

#[test]
fn put_then_get_and_a_private_directory() {
    let (_tmp, store) = new_store();
    assert!(!hit(&store, 1));
    put(&store, 1);
    assert!(hit(&store, 1));
    let s = stats(&store);
    assert_eq!((s.disk_writes, s.disk_errors), (1, 0));
    assert_eq!(
        std::fs::metadata(store.dir()).unwrap().mode() & 0o777,
        0o700
    );
    let file = store.entry_path(&key(1));
    assert_eq!(std::fs::metadata(file).unwrap().mode() & 0o777, 0o600);
    // The lifetime counters live in the store itself.
    assert_eq!(store.stats().unwrap().lifetime.writes, 1);
}

thread_local! {
    /// Test hook: the OS error (`errno`) that the next entry open on this
    /// thread fails with.
    pub(super) static OPEN_FAULT: std::cell::Cell<Option<i32>> = const { std::cell::Cell::new(None) };
}

/// Each corruption of an entry is a miss, counted as an error, and the
/// entry is removed; writing it again repairs it.
#[test]
fn every_corruption_is_detected_and_repaired() {
    type Corrupt = fn(&mut Vec<u8>);
    let corruptions: [(&str, Corrupt); 6] = [
        ("flipped payload byte", |b| {
            let n = b.len();
            b[n - 20] ^= 0x40
        }),
        ("flipped header byte", |b| b[20] ^= 0x01),
        ("truncated", |b| b.truncate(b.len() / 2)),
        ("empty", |b| b.clear()),
        ("wrong magic", |b| b[..8].copy_from_slice(b"ELF\0\0\0\0\0")),
        ("appended garbage", |b| b.extend_from_slice(b"xx")),
    ];
    let (_tmp, store) = new_store();
    for (i, (what, corrupt)) in corruptions.iter().enumerate() {
        let n = i as u32;
        put(&store, n);
        let path = store.entry_path(&key(n));
        let mut bytes = std::fs::read(&path).unwrap();
        corrupt(&mut bytes);
        std::fs::write(&path, &bytes).unwrap();
        let errors_before = stats(&store).disk_errors;
        assert!(!hit(&store, n), "{what}: a corrupt entry was used");
        assert_eq!(stats(&store).disk_errors, errors_before + 1, "{what}");
        assert!(!path.exists(), "{what}: the bad entry is removed");
        put(&store, n);
        assert!(hit(&store, n), "{what}: the rewritten entry is used");
    }
}

/// An entry of another format version belongs to another kernelkit: a
/// miss, not an error, and not removed by the lookup; the rewrite replaces
/// it.
#[test]
fn another_format_version_is_a_miss_not_an_error() {
    let (_tmp, store) = new_store();
    put(&store, 1);
    let path = store.entry_path(&key(1));
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[8..12].copy_from_slice(&(ARTIFACT_FORMAT_VERSION - 1).to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();
    assert!(!hit(&store, 1));
    assert_eq!(stats(&store).disk_errors, 0);
    assert!(path.exists());
    let report = store.verify().unwrap();
    assert_eq!(
        (report.good, report.bad.len(), report.other_format),
        (0, 0, 1)
    );
    put(&store, 1);
    assert!(hit(&store, 1));
}

/// A read that fails for a reason that passes (here: no file descriptors
/// left) is counted as an error and leaves the entry in place.
#[test]
fn an_unreadable_entry_is_kept_and_counted() {
    let (_tmp, store) = new_store();
    put(&store, 1);
    OPEN_FAULT.set(Some(libc::EMFILE));
    assert!(!hit(&store, 1));
    assert_eq!(stats(&store).disk_errors, 1);
    assert!(
        store.entry_path(&key(1)).exists(),
        "a good entry was removed"
    );
    assert!(hit(&store, 1), "the next lookup uses it");
    assert_eq!(stats(&store).disk_errors, 1);
}

#[test]
fn an_intact_entry_under_another_key_is_refused() {
    let (_tmp, store) = new_store();
    put(&store, 1);
    layout::create_subdir(store.dir(), &key(2)).unwrap();
    std::fs::copy(store.entry_path(&key(1)), store.entry_path(&key(2))).unwrap();
    assert!(!hit(&store, 2));
    assert_eq!(stats(&store).disk_errors, 1);
    assert!(hit(&store, 1), "the real entry of key 1 is untouched");
}

#[test]
fn a_file_writable_by_others_is_refused_then_replaced() {
    let (_tmp, store) = new_store();
    put(&store, 1);
    let path = store.entry_path(&key(1));
    set_mode(&path, 0o602);
    assert!(!hit(&store, 1));
    assert_eq!(stats(&store).disk_errors, 1);
    put(&store, 1);
    assert_eq!(std::fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
    assert!(hit(&store, 1));
}

#[test]
fn a_directory_writable_by_others_is_refused() {
    let (_tmp, store) = new_store();
    put(&store, 1);
    set_mode(store.dir(), 0o777);
    assert!(
        !hit(&store, 1),
        "entries are not read from an open directory"
    );
    assert!(matches!(
        ArtifactStore::open(store.dir()),
        Err(StoreError::Untrusted { .. })
    ));
    assert!(matches!(
        ArtifactStore::create(store.dir()),
        Err(StoreError::Untrusted { .. })
    ));
}

#[test]
fn a_file_owned_by_another_user_is_refused() {
    if !is_root() {
        println!(
            "skipped: changing a file's owner needs root (this test runs as uid {})",
            rustix::process::geteuid().as_raw()
        );
        return;
    }
    let (_tmp, store) = new_store();
    put(&store, 1);
    let path = store.entry_path(&key(1));
    std::os::unix::fs::chown(&path, Some(65534), Some(65534)).unwrap();
    assert!(!hit(&store, 1));
    assert_eq!(stats(&store).disk_errors, 1);
    put(&store, 1);
    assert_eq!(std::fs::metadata(&path).unwrap().uid(), 0);
    assert!(hit(&store, 1));

    std::os::unix::fs::chown(store.dir(), Some(65534), None).unwrap();
    assert!(!hit(&store, 1), "nor from a directory of another user");
    assert!(matches!(
        ArtifactStore::open(store.dir()),
        Err(StoreError::Untrusted { .. })
    ));
}

#[test]
fn a_symbolic_link_is_not_followed() {
    let (tmp, store) = new_store();
    put(&store, 1);
    let elsewhere = tmp.path().join("elsewhere.kka");
    std::fs::rename(store.entry_path(&key(1)), &elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, store.entry_path(&key(1))).unwrap();
    assert!(!hit(&store, 1));
    assert_eq!(stats(&store).disk_errors, 1);
    assert!(elsewhere.exists(), "the link's target is not touched");
}

#[test]
fn an_unusable_directory_is_an_error_at_creation() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("a-file");
    std::fs::write(&file, b"").unwrap();
    assert!(matches!(
        ArtifactStore::create(file.join("store")),
        Err(StoreError::Io { .. })
    ));
    if is_root() {
        println!("skipped the read-only directory case: root may write to any directory");
        return;
    }
    let ro = tmp.path().join("read-only");
    std::fs::create_dir(&ro).unwrap();
    set_mode(&ro, 0o500);
    let r = ArtifactStore::create(&ro);
    set_mode(&ro, 0o700);
    assert!(matches!(r, Err(StoreError::Io { .. })), "{r:?}");
}

#[test]
fn eviction_removes_the_least_recently_used_first() {
    let (_tmp, store) = new_store();
    let entry_size = {
        put(&store, 0);
        std::fs::metadata(store.entry_path(&key(0))).unwrap().len()
    };
    for n in 1..4 {
        put(&store, n);
    }
    // Make the order of last use explicit: 0 oldest ... 3 newest.
    let base = SystemTime::now() - Duration::from_secs(1000);
    for n in 0..4u32 {
        let f = File::options()
            .write(true)
            .open(store.entry_path(&key(n)))
            .unwrap();
        f.set_modified(base + Duration::from_secs(10 * n as u64))
            .unwrap();
    }
    // A hit makes entry 0 the most recently used.
    assert!(hit(&store, 0));
    // Room for three entries: writing a fifth evicts the two least recent.
    let store = store.with_max_bytes(3 * entry_size + entry_size / 2);
    put(&store, 4);
    let kept: Vec<u32> = (0..5)
        .filter(|n| store.entry_path(&key(*n)).exists())
        .collect();
    assert_eq!(kept, vec![0, 3, 4]);
    assert!(store.stats().unwrap().bytes <= store.max_bytes());
}

#[test]
fn the_entry_just_written_survives_a_limit_smaller_than_itself() {
    let (_tmp, store) = new_store();
    let store = store.with_max_bytes(1);
    put(&store, 1);
    put(&store, 2);
    assert!(!store.entry_path(&key(1)).exists());
    assert!(hit(&store, 2));
}

/// Temporary files of crashed writers are removed when eviction lists
/// their subdirectory, or by a recount; young ones may still be filling.
#[test]
fn stale_temporary_files_are_removed() {
    let (_tmp, store) = new_store();
    let entry_size = {
        put(&store, 0);
        std::fs::metadata(store.entry_path(&key(0))).unwrap().len()
    };
    let temp = |n: u32, tag: &str| {
        let sub = layout::create_subdir(store.dir(), &key(n)).unwrap();
        sub.join(format!(
            "{}{tag}{TEMP_SUFFIX}",
            layout::temp_prefix(&key(n))
        ))
    };
    let (stale, fresh) = (temp(0, "abc"), temp(0, "def"));
    let flat_stale = store.dir().join(format!(".{}.ghi{TEMP_SUFFIX}", key(7)));
    for p in [&stale, &fresh, &flat_stale] {
        std::fs::write(p, b"partial").unwrap();
    }
    for p in [&stale, &flat_stale] {
        File::options()
            .write(true)
            .open(p)
            .unwrap()
            .set_modified(SystemTime::now() - 2 * layout::STALE_TEMP_AGE)
            .unwrap();
    }
    // A write that evicts lists the subdirectories it samples.
    let store = store.with_max_bytes(entry_size);
    put(&store, 1);
    assert!(!stale.exists());
    assert!(fresh.exists(), "a writer may still be filling it");
    assert!(flat_stale.exists(), "eviction lists subdirectories only");
    store.recount().unwrap();
    assert!(!flat_stale.exists());
    assert!(fresh.exists());
}

#[test]
fn list_verify_and_clear() {
    let (_tmp, store) = new_store();
    for n in 0..3 {
        put(&store, n);
    }
    let foreign = store.dir().join("notes.txt");
    std::fs::write(&foreign, b"not ours").unwrap();
    let lock = store.dir().join(format!("{}.lock", key(7)));
    std::fs::write(&lock, b"").unwrap();

    let list = store.list().unwrap();
    assert_eq!(list.len(), 3);
    for e in &list {
        let h = e.header.as_ref().unwrap();
        assert_eq!((h.kernel.as_str(), h.backend.as_str()), ("kern", "cpu"));
        assert_eq!(h.key, e.key);
    }

    let report = store.verify().unwrap();
    assert_eq!((report.good, report.bad.len()), (3, 0));
    let path = store.entry_path(&key(1));
    let mut bytes = std::fs::read(&path).unwrap();
    let n = bytes.len();
    bytes[n - 1] ^= 1;
    std::fs::write(&path, &bytes).unwrap();
    let report = store.verify().unwrap();
    assert_eq!(report.good, 2);
    assert_eq!(report.bad.len(), 1);
    assert_eq!(report.bad[0].key, key(1));
    assert!(matches!(
        report.bad[0].fault,
        EntryFault::Malformed(EntryError::Checksum)
    ));
    assert!(path.exists(), "verify changes nothing");

    let stats = store.stats().unwrap();
    assert_eq!(stats.entries, 3);
    let cleared = store.clear().unwrap();
    assert_eq!(cleared.entries, 3);
    assert_eq!(cleared.bytes, stats.bytes);
    assert_eq!(store.stats().unwrap().entries, 0);
    assert_eq!(store.stats().unwrap().lifetime, Tally::default());
    assert!(!lock.exists());
    assert!(foreign.exists(), "clear leaves files it did not make");
}

#[test]
fn open_does_not_create() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("none");
    assert!(matches!(
        ArtifactStore::open(&dir),
        Err(StoreError::Missing { .. })
    ));
    assert!(!dir.exists());
}

/// An entry that is intact but does not load (a full or `noexec` temporary
/// directory, no memory, a faulted context) is not proven bad: it is
/// counted as an error and kept, so the next process can use it.
#[test]
fn a_load_failure_keeps_the_entry_and_counts_an_error() {
    let (_tmp, store) = new_store();
    put(&store, 1);
    assert!(hit(&store, 1));
    let error = CompileError::Load {
        kernel: "kern".into(),
        function: "f1".into(),
        reason: "cannot create a temporary directory: No space left on device".into(),
    };
    store.record_bad_load(&key(1), &error);
    assert_eq!(stats(&store).disk_errors, 1);
    assert!(
        store.entry_path(&key(1)).exists(),
        "a good entry was removed"
    );
    assert!(hit(&store, 1), "the entry is still used");
    assert_eq!(store.stats().unwrap().lifetime.errors, 1);
}

/// An entry records what its compile read; when a file changed, the entry
/// is a miss (not an error, and not removed: the rewrite replaces it), and
/// the rewritten entry records the new contents.
#[test]
fn an_entry_whose_dependencies_changed_is_a_miss_and_is_rewritten() {
    let (tmp, store) = new_store();
    let params = tmp.path().join("params.h");
    let write = |text: &str| {
        std::fs::write(&params, text).unwrap();
        File::options()
            .write(true)
            .open(&params)
            .unwrap()
            .set_modified(SystemTime::now() - Duration::from_secs(60))
            .unwrap();
    };
    let put_with_deps = || {
        let deps = Dependencies {
            files: crate::backend::deps::digest_files(
                std::slice::from_ref(&params),
                SystemTime::now(),
            )
            .unwrap(),
            ..Dependencies::default()
        };
        store
            .write(
                &key(1),
                &Contents {
                    kind: EntryKind::Code,
                    target: "native",
                    kernel: "kern",
                    backend: "cpu",
                    function: "f1",
                    identity: IdentityDigest::of("cpu", "test compiler"),
                    dependencies: &deps,
                    payload: &payload(1),
                },
            )
            .unwrap();
    };
    write("#define VAL 1.0f\n");
    put_with_deps();
    assert!(hit(&store, 1));
    write("#define VAL 2.0f\n");
    assert!(!hit(&store, 1), "a changed include was not noticed");
    assert_eq!(stats(&store).disk_errors, 0, "out of date is not an error");
    assert!(store.entry_path(&key(1)).exists());
    put_with_deps();
    assert!(hit(&store, 1));
    std::fs::remove_file(&params).unwrap();
    assert!(!hit(&store, 1), "a removed include was not noticed");
    let report = store.verify().unwrap();
    assert_eq!(report.good, 1, "verify checks the entry, not its sources");
}

/// Writes entry `n` straight into the store's files, as a process that
/// does not keep to the store's lock would (or a kernelkit of layout 1,
/// with `flat`), last used `age` ago. Nothing is counted.
fn plant(store: &ArtifactStore, n: u32, flat: bool, age: Duration) -> PathBuf {
    let bytes = entry::encode(
        &key(n),
        &Contents {
            kind: EntryKind::Code,
            target: "native",
            kernel: "kern",
            backend: "cpu",
            function: &format!("f{n}"),
            identity: IdentityDigest::of("cpu", "test compiler"),
            dependencies: &Dependencies::default(),
            payload: &payload(n),
        },
    )
    .unwrap();
    let path = if flat {
        layout::flat_entry_path(store.dir(), &key(n))
    } else {
        layout::create_subdir(store.dir(), &key(n)).unwrap();
        store.entry_path(&key(n))
    };
    std::fs::write(&path, bytes).unwrap();
    set_mode(&path, 0o600);
    File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(SystemTime::now() - age)
        .unwrap();
    path
}

/// Entries and bytes as the running total has them (the total must be
/// usable: nothing to count).
fn running(store: &ArtifactStore) -> (u64, u64) {
    let s = store.stats().unwrap();
    assert!(!s.counted, "the running total was not usable");
    (s.entries, s.bytes)
}

/// Entries and bytes as the files have them.
fn on_disk(store: &ArtifactStore) -> (u64, u64) {
    let listing = layout::scan(store.dir()).unwrap();
    (
        listing.entries.len() as u64,
        listing.entries.iter().map(|e| e.bytes).sum(),
    )
}

#[test]
fn entries_fan_out_into_private_subdirectories_by_key_prefix() {
    let (_tmp, store) = new_store();
    put(&store, 1);
    let path = store.entry_path(&key(1));
    let hex = key(1).to_string();
    assert_eq!(path, store.dir().join(&hex[..2]).join(format!("{hex}.kka")));
    assert!(path.exists());
    let sub = path.parent().unwrap();
    assert_eq!(std::fs::metadata(sub).unwrap().mode() & 0o777, 0o700);
    assert!(
        !layout::flat_entry_path(store.dir(), &key(1)).exists(),
        "nothing is written in the flat place"
    );
}

/// A subdirectory is trusted as the store directory is; a link in its
/// place is not followed.
#[test]
fn an_open_or_linked_subdirectory_is_refused() {
    let (tmp, store) = new_store();
    put(&store, 1);
    let sub = store.entry_path(&key(1)).parent().unwrap().to_path_buf();
    set_mode(&sub, 0o777);
    assert!(
        !hit(&store, 1),
        "an entry was read from an open subdirectory"
    );
    assert_eq!(stats(&store).disk_errors, 1);
    set_mode(&sub, 0o700);
    assert!(hit(&store, 1));
    let elsewhere = tmp.path().join("elsewhere");
    std::fs::rename(&sub, &elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &sub).unwrap();
    assert!(!hit(&store, 1), "a linked subdirectory was followed");
    assert_eq!(stats(&store).disk_errors, 2);
}

/// A store of layout 1 (entries in the directory itself): read in place,
/// counted by `stats` until it has a running total, and moved into the
/// fan-out by the first write, which also starts the running total.
#[test]
fn a_flat_store_is_read_in_place_and_moved_by_the_first_write() {
    let (_tmp, store) = new_store();
    let flat: Vec<PathBuf> = (0..3)
        .map(|n| plant(&store, n, true, Duration::from_secs(60)))
        .collect();
    assert!(hit(&store, 1), "a flat entry is read where it is");
    let before = store.stats().unwrap();
    assert!(
        before.counted,
        "no running total yet: counted from the files"
    );
    assert_eq!(before.entries, 3);
    assert_eq!(store.list().unwrap().len(), 3);
    assert_eq!(store.verify().unwrap().good, 3);

    put(&store, 3);
    for (n, path) in flat.iter().enumerate() {
        assert!(!path.exists(), "flat entry {n} was not moved");
        assert!(store.entry_path(&key(n as u32)).exists());
        assert!(hit(&store, n as u32));
    }
    assert_eq!(running(&store), on_disk(&store));
    assert_eq!(running(&store).0, 4);
    assert_eq!(stats(&store).disk_errors, 0);
}

/// A corrupt flat entry is removed like any other, and the running total
/// (which does not count flat entries) stays right.
#[test]
fn a_corrupt_flat_entry_is_removed_outside_the_total() {
    let (_tmp, store) = new_store();
    put(&store, 0);
    let path = plant(&store, 1, true, Duration::ZERO);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[30] ^= 1;
    std::fs::write(&path, bytes).unwrap();
    assert!(!hit(&store, 1));
    assert!(!path.exists());
    assert_eq!(running(&store), on_disk(&store));
}

/// Every change to the set of entries keeps the running total equal to
/// what is on disk, and `stats` reads the total, not the files: an entry
/// added behind the store's back shows only after a recount.
#[test]
fn the_running_total_follows_every_change_and_stats_does_not_list() {
    let (_tmp, store) = new_store();
    for n in 0..5 {
        put(&store, n);
        assert_eq!(running(&store), on_disk(&store), "after writing {n}");
    }
    // A rewrite of another size replaces the old entry's bytes.
    store
        .write(
            &key(2),
            &Contents {
                kind: EntryKind::Code,
                target: "native",
                kernel: "a longer kernel name",
                backend: "cpu",
                function: "f2",
                identity: IdentityDigest::of("cpu", "test compiler"),
                dependencies: &Dependencies::default(),
                payload: &[1; 500],
            },
        )
        .unwrap();
    assert_eq!(running(&store), on_disk(&store), "after a rewrite");
    assert_eq!(running(&store).0, 5);
    // A corrupt entry removed by a lookup.
    let path = store.entry_path(&key(3));
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[40] ^= 1;
    std::fs::write(&path, bytes).unwrap();
    assert!(!hit(&store, 3));
    assert!(!path.exists());
    assert_eq!(running(&store), on_disk(&store), "after a corrupt entry");
    // Eviction.
    let half = on_disk(&store).1 / 2;
    let store = store.with_max_bytes(half);
    assert!(store.evict().unwrap() > 0);
    assert_eq!(running(&store), on_disk(&store), "after an eviction");
    assert!(running(&store).1 <= low_water(store.max_bytes()));

    let behind = plant(&store, 9, false, Duration::ZERO);
    assert_ne!(running(&store), on_disk(&store), "stats listed the store");
    let recounted = store.recount().unwrap();
    assert!(recounted.counted);
    assert_eq!((recounted.entries, recounted.bytes), on_disk(&store));
    assert_eq!(running(&store), on_disk(&store));
    assert!(behind.exists());

    store.clear().unwrap();
    assert_eq!(running(&store), (0, 0));
    assert_eq!(on_disk(&store), (0, 0));
}

/// A running total that cannot be trusted (damaged, or marked dirty by a
/// process that died while it changed the store) is counted again: `stats`
/// counts without writing, the next write stores the count.
#[test]
fn a_damaged_or_dirty_total_is_recounted() {
    let (_tmp, store) = new_store();
    for n in 0..3 {
        put(&store, n);
    }
    let usage_file = store.dir().join(usage::FILE_NAME);
    let good = std::fs::read(&usage_file).unwrap();
    // An entry added behind the store's back makes the difference between
    // the total and a count visible.
    plant(&store, 8, false, Duration::ZERO);
    let mut flipped = good.clone();
    flipped[17] ^= 1;
    let mut dirty = good.clone();
    dirty[12] |= 1; // the dirty flag, with a checksum that no longer fits
    for (what, bytes) in [("flipped", flipped), ("truncated", good[..20].to_vec())] {
        std::fs::write(&usage_file, &bytes).unwrap();
        let s = store.stats().unwrap();
        assert!(s.counted, "{what}");
        assert_eq!((s.entries, s.bytes), on_disk(&store), "{what}");
        assert_eq!(std::fs::read(&usage_file).unwrap(), bytes, "stats wrote");
    }
    std::fs::write(&usage_file, &dirty).unwrap();
    put(&store, 4);
    assert_eq!(running(&store), on_disk(&store));
    assert_eq!(running(&store).0, 5);
}

/// Eviction runs only when a write takes the total over the limit, and
/// then brings it down to the low-water mark, so the next writes find
/// room.
#[test]
fn eviction_runs_past_the_limit_and_falls_to_the_low_water_mark() {
    let (_tmp, store) = new_store();
    // Keys 10..34: names of one length, entries of one size.
    let entry_size = {
        put(&store, 10);
        std::fs::metadata(store.entry_path(&key(10))).unwrap().len()
    };
    // Room for 20 entries; the low-water mark holds 18.
    let store = store.with_max_bytes(20 * entry_size);
    let mut counts = Vec::new();
    for n in 11..34 {
        put(&store, n);
        counts.push(running(&store).0);
    }
    // Up to 20 entries fit; the write of the 21st evicts 3, down to 18;
    // the next two fill the room again without evicting; the one after
    // evicts again.
    let want: Vec<u64> = (2..=20).chain([18, 19, 20, 18]).collect();
    assert_eq!(counts, want);
    assert_eq!(running(&store), on_disk(&store));
}

/// A store of 2000 entries with known ages loses about a tenth to one
/// eviction: never the younger half, never an entry just read.
#[test]
fn sampled_eviction_spares_young_and_hot_entries() {
    let (_tmp, store) = new_store();
    const N: u32 = 2000;
    for n in 0..N {
        // Entry n was last used N - n seconds ago: 0 is the oldest.
        plant(&store, n, false, Duration::from_secs(u64::from(N - n) + 10));
    }
    store.recount().unwrap();
    let hot = [0u32, 1, 5, 17, 100];
    for n in hot {
        assert!(hit(&store, n));
    }
    let (entries, bytes) = running(&store);
    assert_eq!(entries, u64::from(N));
    let store = store.with_max_bytes(bytes - 1);
    let removed = store.evict().unwrap();
    let (left, left_bytes) = running(&store);
    assert!(left_bytes <= low_water(store.max_bytes()));
    assert_eq!(removed as u64, entries - left);
    assert!(
        (200..=230).contains(&removed),
        "{removed} removed: down to the low-water mark and no further"
    );
    for n in hot {
        assert!(store.entry_path(&key(n)).exists(), "hot entry {n} evicted");
    }
    let young_lost: Vec<u32> = (N / 2..N)
        .filter(|n| !store.entry_path(&key(*n)).exists())
        .collect();
    assert!(
        young_lost.is_empty(),
        "young entries evicted: {young_lost:?}"
    );
    assert_eq!(running(&store), on_disk(&store));
}

/// Eviction also fixes a total that counts entries deleted behind the
/// store's back: when it runs out of entries to remove, it counts them.
#[test]
fn eviction_recounts_a_total_that_counts_vanished_entries() {
    let (_tmp, store) = new_store();
    for n in 0..6 {
        put(&store, n);
    }
    let (_, bytes) = running(&store);
    for n in 0..6 {
        std::fs::remove_file(store.entry_path(&key(n))).unwrap();
    }
    let store = store.with_max_bytes(bytes / 2);
    put(&store, 7);
    assert_eq!(running(&store), on_disk(&store));
    assert_eq!(running(&store).0, 1);
    assert!(hit(&store, 7));
}

#[test]
fn a_staged_batch_holds_no_file_open_and_publishes_whole() {
    // A batch's temporary files are closed once written: held open until
    // published, a large batch would grow the descriptor table (each growth
    // of a threaded process's table waits for an RCU grace period on
    // Linux) and could run out of descriptors.
    let (_tmp, store) = new_store();
    let none = Dependencies::default();
    let (functions, payloads): (Vec<String>, Vec<Vec<u8>>) =
        (0..300).map(|n| (format!("f{n}"), payload(n))).unzip();
    let entries: Vec<(ModuleKey, Contents<'_>)> = (0..300u32)
        .map(|n| {
            let i = n as usize;
            (
                key(n),
                Contents {
                    kind: EntryKind::Code,
                    target: "native",
                    kernel: "kern",
                    backend: "cpu",
                    function: &functions[i],
                    identity: IdentityDigest::of("cpu", "test compiler"),
                    dependencies: &none,
                    payload: &payloads[i],
                },
            )
        })
        .collect();
    let open_files = || std::fs::read_dir("/proc/self/fd").map(|d| d.count()).ok();
    let before = open_files();
    let staged = store.stage_batch(&entries);
    let after = open_files();
    assert_eq!(staged.len(), 300);
    if let (Some(before), Some(after)) = (before, after) {
        // Other tests of this process may hold a few files meanwhile.
        assert!(
            after < before + 100,
            "staging 300 entries left {} more descriptors open",
            after.saturating_sub(before)
        );
    }
    for n in 0..300 {
        assert!(!hit(&store, n), "nothing is published before publish_batch");
    }
    assert_eq!(store.publish_batch(staged).unwrap(), 300);
    for n in 0..300 {
        assert!(hit(&store, n), "entry {n} published");
    }
}
