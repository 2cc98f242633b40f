//! Bundles on their own, with made-up entries (no compiler): what export
//! takes and leaves, what import accepts, skips and refuses, and that a
//! refused bundle leaves the store untouched.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use super::*;
use crate::backend::deps::{Dependencies, FileDigest};
use crate::cache::entry::{Contents, EntryKind};

fn identity() -> IdentityDigest {
    IdentityDigest::of("cpu", "test compiler")
}

fn key(n: u32) -> ModuleKey {
    ModuleKey::derive("cpu", "test compiler", &format!("f{n}"), "source")
}

fn payload(n: u32) -> Vec<u8> {
    format!("artifact number {n}").into_bytes()
}

fn store_in(dir: &Path) -> ArtifactStore {
    ArtifactStore::create(dir.join("store")).unwrap()
}

fn put_with(store: &ArtifactStore, n: u32, kernel: &str, id: IdentityDigest, deps: &Dependencies) {
    let p = payload(n);
    let function = format!("f{n}");
    store
        .write(
            &key(n),
            &Contents {
                kind: EntryKind::Code,
                target: "native",
                kernel,
                backend: "cpu",
                function: &function,
                identity: id,
                dependencies: deps,
                payload: &p,
            },
        )
        .unwrap();
}

fn put(store: &ArtifactStore, n: u32) {
    put_with(store, n, "kern", identity(), &Dependencies::default());
}

fn signer() -> SecretKey {
    SecretKey::from_seed([42; 32])
}

fn trusted() -> TrustedKeys {
    TrustedKeys::new([signer().public()])
}

/// A bundle of entries 0..n, exported from a store of its own.
fn bundle_of(n: u32) -> Vec<u8> {
    let tmp = tempfile::tempdir().unwrap();
    let store = store_in(tmp.path());
    for i in 0..n {
        put(&store, i);
    }
    let report = export(&store, &ExportFilter::default(), None, &signer()).unwrap();
    assert_eq!(report.entries, n as usize);
    report.bundle
}

/// Files under the store directory other than its bookkeeping (`usage`,
/// counters, lock files): its entries, and any temporary file a write
/// left (an import stages its files before the signature's check ends).
fn entry_files(store: &ArtifactStore) -> Vec<PathBuf> {
    fn walk(dir: &Path, found: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let path = e.path();
            if path.is_dir() {
                walk(&path, found);
            } else if path.extension().is_some_and(|x| x == "kka" || x == "tmp") {
                found.push(path);
            }
        }
    }
    let mut found = Vec::new();
    walk(store.dir(), &mut found);
    found
}

#[test]
fn export_then_import_elsewhere_hits_every_entry_through_the_write_path() {
    let bundle = bundle_of(5);
    let tmp = tempfile::tempdir().unwrap();
    let store = store_in(tmp.path());
    let report = import(&bundle, &trusted(), &[identity()], &store).unwrap();
    assert_eq!(report.imported, 5);
    assert_eq!(report.signer, Some(signer().public()));
    assert!(report.other_compiler.is_empty() && report.stale.is_empty());
    for n in 0..5 {
        assert_eq!(store.get(&key(n)), Some(payload(n)), "entry {n}");
    }
    // The store's own write path: the running total, 0600 files in 0700
    // directories.
    let stats = store.stats().unwrap();
    assert_eq!(stats.entries, 5);
    assert!(!stats.counted, "the running total was kept, not recounted");
    assert_eq!(stats.lifetime.writes, 5);
    for path in entry_files(&store) {
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{}", path.display());
        let dir = std::fs::metadata(path.parent().unwrap()).unwrap();
        assert_eq!(dir.permissions().mode() & 0o777, 0o700);
    }
    // A second import finds them all present.
    let again = import(&bundle, &trusted(), &[identity()], &store).unwrap();
    assert_eq!((again.imported, again.present), (0, 5));
}

#[test]
fn filters_select_by_kernel_and_backend() {
    let tmp = tempfile::tempdir().unwrap();
    let store = store_in(tmp.path());
    put_with(&store, 1, "alpha", identity(), &Dependencies::default());
    put_with(&store, 2, "beta", identity(), &Dependencies::default());
    let only = |kernels: &[&str], backends: &[&str]| {
        let filter = ExportFilter {
            kernels: kernels.iter().map(|s| s.to_string()).collect(),
            backends: backends.iter().map(|s| s.to_string()).collect(),
            kinds: Vec::new(),
        };
        export(&store, &filter, None, &signer()).unwrap().entries
    };
    assert_eq!(only(&[], &[]), 2);
    assert_eq!(only(&["alpha"], &[]), 1);
    assert_eq!(only(&["alpha", "beta"], &["cpu"]), 2);
    assert_eq!(only(&[], &["cuda"]), 0);
}

#[test]
fn entries_of_another_compiler_are_skipped_with_a_count_and_never_stored() {
    let tmp = tempfile::tempdir().unwrap();
    let store = store_in(tmp.path());
    put(&store, 1);
    put_with(
        &store,
        2,
        "kern",
        IdentityDigest::of("cpu", "another compiler"),
        &Dependencies::default(),
    );
    let bundle = export(&store, &ExportFilter::default(), None, &signer())
        .unwrap()
        .bundle;
    let tmp2 = tempfile::tempdir().unwrap();
    let target = store_in(tmp2.path());
    let report = import(&bundle, &trusted(), &[identity()], &target).unwrap();
    assert_eq!(report.imported, 1);
    assert_eq!(report.other_compiler.len(), 1);
    assert_eq!(report.other_compiler[0].key, key(2));
    assert!(target.get(&key(2)).is_none());
    assert!(!target.entry_path(&key(2)).exists());
    // A machine with no matching backend at all imports nothing.
    let tmp3 = tempfile::tempdir().unwrap();
    let none = store_in(tmp3.path());
    let report = import(&bundle, &trusted(), &[], &none).unwrap();
    assert_eq!((report.imported, report.other_compiler.len()), (0, 2));
    assert!(entry_files(&none).is_empty());
}

#[test]
fn dependency_lists_local_to_the_exporter_stay_home_and_others_are_checked_on_import() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home/alice");
    let opt = tmp.path().join("opt/include");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&opt).unwrap();
    let shared_header = opt.join("params.h");
    std::fs::write(&shared_header, "#define P 1\n").unwrap();
    let digest = |path: &Path| FileDigest {
        path: path.to_path_buf(),
        hash: xxhash_rust::xxh3::xxh3_128(&std::fs::read(path).unwrap()),
    };
    let store = store_in(tmp.path());
    // 1: a header under the home directory; 2: a relative include
    // directory; 3: a working directory; 4: a header elsewhere (travels).
    let in_home = home.join("mine.h");
    std::fs::write(&in_home, "#define M 1\n").unwrap();
    let deps = [
        Dependencies {
            files: vec![digest(&in_home)],
            ..Dependencies::default()
        },
        Dependencies {
            include_dirs: vec!["include".into()],
            ..Dependencies::default()
        },
        Dependencies {
            cwd: Some(tmp.path().to_path_buf()),
            ..Dependencies::default()
        },
        Dependencies {
            include_dirs: vec![opt.clone()],
            files: vec![digest(&shared_header)],
            absent: vec![opt.join("shadow.h")],
            ..Dependencies::default()
        },
    ];
    for (n, d) in deps.iter().enumerate() {
        put_with(&store, n as u32 + 1, "kern", identity(), d);
    }
    let report = export(&store, &ExportFilter::default(), Some(&home), &signer()).unwrap();
    assert_eq!(report.entries, 1, "{:?}", report.local);
    let mut local: Vec<ModuleKey> = report.local.iter().map(|s| s.key).collect();
    local.sort_by_key(|k| k.to_string());
    let mut expected = vec![key(1), key(2), key(3)];
    expected.sort_by_key(|k| k.to_string());
    assert_eq!(local, expected);
    let bundle = report.bundle;
    // The header is there, unchanged: imported.
    let target_dir = tempfile::tempdir().unwrap();
    let target = store_in(target_dir.path());
    let ok = import(&bundle, &trusted(), &[identity()], &target).unwrap();
    assert_eq!((ok.imported, ok.stale.len()), (1, 0));
    // The header differs, or a file appeared where the compile found none:
    // skipped with a count.
    for change in ["differs", "appears"] {
        let target_dir = tempfile::tempdir().unwrap();
        let target = store_in(target_dir.path());
        match change {
            "differs" => std::fs::write(&shared_header, "#define P 2\n").unwrap(),
            _ => std::fs::write(opt.join("shadow.h"), "").unwrap(),
        }
        let r = import(&bundle, &trusted(), &[identity()], &target).unwrap();
        assert_eq!((r.imported, r.stale.len()), (0, 1), "{change}");
        assert!(entry_files(&target).is_empty());
        std::fs::write(&shared_header, "#define P 1\n").unwrap();
        let _ = std::fs::remove_file(opt.join("shadow.h"));
    }
}

/// Imports `bundle` into a new store and checks that it was refused with
/// nothing written; returns the error.
fn refused(bundle: &[u8], keys: &TrustedKeys) -> BundleError {
    let tmp = tempfile::tempdir().unwrap();
    let store = store_in(tmp.path());
    let err = import(bundle, keys, &[identity()], &store)
        .err()
        .unwrap_or_else(|| panic!("a bad bundle of {} bytes was imported", bundle.len()));
    assert!(
        entry_files(&store).is_empty(),
        "{err}: something was written"
    );
    assert_eq!(store.stats().unwrap().entries, 0);
    err
}

#[test]
fn every_truncation_is_refused_whole() {
    let bundle = bundle_of(3);
    let tmp = tempfile::tempdir().unwrap();
    let store = store_in(tmp.path());
    for n in 0..bundle.len() {
        let err = import(&bundle[..n], &trusted(), &[identity()], &store).unwrap_err();
        assert!(
            matches!(
                err,
                BundleError::Truncated | BundleError::BadSignature { .. } | BundleError::Unsigned
            ),
            "cut to {n}: {err}"
        );
    }
    assert!(entry_files(&store).is_empty(), "something was written");
    let mut longer = bundle.clone();
    longer.push(0);
    refused(&longer, &trusted());
}

/// Every bit of a bundle, flipped one at a time.
#[test]
fn every_single_bit_flip_is_refused_whole() {
    let bundle = bundle_of(2);
    let n = bundle.len();
    let tmp = tempfile::tempdir().unwrap();
    let store = store_in(tmp.path());
    let mut flips = 0;
    for byte in 0..n {
        for bit in 0..8 {
            let mut b = bundle.clone();
            b[byte] ^= 1 << bit;
            assert!(
                import(&b, &trusted(), &[identity()], &store).is_err(),
                "flip of bit {bit} of byte {byte} went unnoticed"
            );
            flips += 1;
        }
    }
    assert_eq!(flips, 8 * n);
    assert!(entry_files(&store).is_empty(), "something was written");
    assert_eq!(store.stats().unwrap().entries, 0);
}

/// A bundle whose entries parse but whose signature fails: its files were
/// staged while the signature was checked, and none is left.
#[test]
fn a_bad_signature_leaves_no_staged_file() {
    let mut bundle = bundle_of(4);
    let n = bundle.len();
    bundle[n - 1] ^= 1;
    assert!(matches!(
        refused(&bundle, &trusted()),
        BundleError::BadSignature { .. }
    ));
}

#[test]
fn unsigned_foreign_and_untrusted_bundles_are_refused_with_their_reason() {
    let bundle = bundle_of(2);
    // No trusted keys at all.
    assert!(matches!(
        refused(&bundle, &TrustedKeys::default()),
        BundleError::NoTrustedKeys
    ));
    // Signed by a key the node does not trust.
    let other = TrustedKeys::new([SecretKey::from_seed([1; 32]).public()]);
    assert!(matches!(
        refused(&bundle, &other),
        BundleError::UntrustedSigner { .. }
    ));
    // The signature stripped.
    let mut unsigned = bundle.clone();
    let n = unsigned.len();
    unsigned[n - 64..].fill(0);
    assert!(matches!(
        refused(&unsigned, &trusted()),
        BundleError::Unsigned
    ));
    // A node that trusts the signer puts its own (untrusted elsewhere) key
    // in the signer field and re-signs: other nodes refuse it.
    let node = SecretKey::from_seed([9; 32]);
    let mut forged = bundle.clone();
    forged[12..44].copy_from_slice(node.public().as_bytes());
    assert!(matches!(
        refused(&forged, &trusted()),
        BundleError::UntrustedSigner { .. }
    ));
    // The trusted signer's key named, contents changed: the signature fails.
    let mut changed = bundle.clone();
    let last_payload_byte = n - 64 - 17;
    changed[last_payload_byte] ^= 0x40;
    assert!(matches!(
        refused(&changed, &trusted()),
        BundleError::BadSignature { .. }
    ));
    // Not a bundle at all, or another version.
    assert!(matches!(
        refused(b"#!/bin/sh\nrm -rf /\n", &trusted()),
        BundleError::NotABundle
    ));
    // Version 1 (no producer, entries without kind or target) included.
    for old in [1, BUNDLE_FORMAT_VERSION + 1] {
        let mut other = bundle.clone();
        other[8..12].copy_from_slice(&old.to_le_bytes());
        assert!(
            matches!(refused(&other, &trusted()), BundleError::Version { found, .. } if found == old),
            "version {old}"
        );
    }
}

/// A bundle made by hand, signed by the trusted key, of entries with the
/// given names.
fn signed_with_names(names: &[(&str, &str, &str)]) -> Vec<u8> {
    let none = Dependencies::default();
    let entries: Vec<Vec<u8>> = names
        .iter()
        .enumerate()
        .map(|(n, (kernel, backend, function))| {
            let p = payload(n as u32);
            entry::encode(
                &key(n as u32),
                &Contents {
                    kind: EntryKind::Code,
                    target: "native",
                    kernel,
                    backend,
                    function,
                    identity: identity(),
                    dependencies: &none,
                    payload: &p,
                },
            )
            .unwrap()
        })
        .collect();
    format::encode(&entries, "test", &signer())
}

#[test]
fn path_traversal_and_other_foreign_names_refuse_the_bundle_whole() {
    // A good entry first: it must not be imported either.
    for bad in [
        ("../../../../tmp/evil", "cpu", "f"),
        ("k", "cpu", "/etc/passwd"),
        ("k", "../cpu", "f"),
        ("k\0", "cpu", "f"),
        ("", "cpu", "f"),
    ] {
        let bundle = signed_with_names(&[("good", "cpu", "f0"), bad]);
        let err = refused(&bundle, &trusted());
        assert!(
            matches!(err, BundleError::Malformed { index: 1, .. }),
            "{bad:?}: {err}"
        );
    }
    assert!(!Path::new("/tmp/evil").exists());
    // The same bundle with proper names imports.
    let bundle = signed_with_names(&[("good", "cpu", "f0"), ("k", "cpu", "f1")]);
    let tmp = tempfile::tempdir().unwrap();
    let store = store_in(tmp.path());
    assert_eq!(
        import(&bundle, &trusted(), &[identity()], &store)
            .unwrap()
            .imported,
        2
    );
}

#[test]
fn a_key_twice_refuses_the_bundle() {
    let one = bundle_of(1);
    let verified = verify(&one, &trusted()).unwrap();
    let bytes = entry::encode(
        &verified.entries[0].header.key,
        &verified.entries[0].contents(),
    )
    .unwrap();
    let twice = format::encode(&[bytes.clone(), bytes], "test", &signer());
    assert!(matches!(
        refused(&twice, &trusted()),
        BundleError::Malformed { index: 1, .. }
    ));
}

#[test]
fn bundles_round_trip_through_files() {
    let bundle = bundle_of(2);
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("kernels.kkb");
    write(&path, &bundle).unwrap();
    assert_eq!(read(&path, DEFAULT_BUNDLE_MAX_BYTES).unwrap(), bundle);
    assert!(matches!(
        read(&tmp.path().join("missing"), DEFAULT_BUNDLE_MAX_BYTES),
        Err(BundleError::Io { .. })
    ));
}

#[test]
fn a_bundle_over_the_size_limit_is_refused_with_its_size_and_the_limit() {
    let bundle = bundle_of(2);
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("kernels.kkb");
    write(&path, &bundle).unwrap();
    let len = bundle.len() as u64;
    assert_eq!(read(&path, len).unwrap(), bundle, "exactly the limit");
    match read(&path, len - 1) {
        Err(BundleError::TooLarge { bytes, limit, .. }) => {
            assert_eq!((bytes, limit), (len, len - 1));
        }
        other => panic!("a bundle one byte over the limit: {other:?}"),
    }
    let message = read(&path, 10).unwrap_err().to_string();
    assert!(
        message.contains("kernels.kkb")
            && message.contains("10-byte limit")
            && message.contains("KERNELKIT_BUNDLE_MAX_BYTES"),
        "{message}"
    );
    // A sparse file far over the default limit is refused from its length:
    // nothing is read, nothing allocated.
    let huge = tmp.path().join("huge.kkb");
    let f = std::fs::File::create(&huge).unwrap();
    f.set_len(DEFAULT_BUNDLE_MAX_BYTES * 4).unwrap();
    assert!(matches!(
        read(&huge, DEFAULT_BUNDLE_MAX_BYTES),
        Err(BundleError::TooLarge { bytes, .. }) if bytes == DEFAULT_BUNDLE_MAX_BYTES * 4
    ));
}

mod never_panics {
    use super::*;
    use proptest::prelude::*;

    /// A bundle's header naming the trusted signer, then `body`, signed:
    /// what reaches the parser of entries only with a good signature.
    fn signed_body(count: u32, body: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&BUNDLE_FORMAT_VERSION.to_le_bytes());
        out.extend_from_slice(signer().public().as_bytes());
        out.extend_from_slice(&count.to_le_bytes());
        out.extend_from_slice(body);
        let mut message = b"kernelkit bundle signature v1\0".to_vec();
        message.extend_from_slice(&out);
        let signature = signer().sign(&message);
        out.extend_from_slice(&signature);
        out
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_are_refused_without_a_panic(
            bytes in proptest::collection::vec(any::<u8>(), 0..512),
        ) {
            prop_assert!(verify(&bytes, &trusted()).is_err());
        }

        #[test]
        fn arbitrary_signed_contents_never_panic(
            count in 0u32..6,
            body in proptest::collection::vec(any::<u8>(), 0..400),
        ) {
            let _ = verify(&signed_body(count, &body), &trusted());
        }

        #[test]
        fn corrupted_real_bundles_are_refused(
            edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..6),
        ) {
            static ONE: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
            let bundle = ONE.get_or_init(|| bundle_of(1));
            let mut b = bundle.clone();
            for (at, v) in edits {
                let n = b.len();
                b[at % n] = v;
            }
            prop_assume!(&b != bundle);
            prop_assert!(verify(&b, &trusted()).is_err());
        }
    }

    #[test]
    fn a_signed_body_of_real_entries_verifies() {
        // The helper above makes what `format::encode` makes.
        let bundle = bundle_of(2);
        let body = &bundle[48..bundle.len() - 64];
        assert_eq!(signed_body(2, body), bundle);
    }
}

/// A tuning record as the autotuner writes one: its own key, a device
/// model for a target, a payload only it reads, and an identity no
/// compiler of the importer has.
fn put_record(store: &ArtifactStore, n: u32) -> ModuleKey {
    let key = ModuleKey::from_bytes([n as u8; 16]);
    store
        .write(
            &key,
            &Contents {
                kind: EntryKind::TuningRecord,
                target: "NVIDIA H200 / driver 12080",
                kernel: "gemm",
                backend: "cuda",
                function: "custom_kernel_gemm",
                identity: IdentityDigest::of("tuning", "record"),
                dependencies: &Dependencies::default(),
                payload: b"{\"BLOCK\":128}",
            },
        )
        .unwrap();
    key
}

#[test]
fn tuning_records_and_ptx_travel_with_their_kind_target_and_producer() {
    let tmp = tempfile::tempdir().unwrap();
    let source = store_in(tmp.path());
    put(&source, 0);
    let record = put_record(&source, 7);
    let report = export_as(
        &source,
        &ExportFilter::default(),
        None,
        &signer(),
        "kernelkit 9; nvrtc 12.8\n",
    )
    .unwrap();
    assert_eq!(report.entries, 2);
    let verified = verify(&report.bundle, &trusted()).unwrap();
    // Control bytes never reach a reader's terminal.
    assert_eq!(verified.producer, "kernelkit 9; nvrtc 12.8?");
    let kinds: Vec<_> = verified
        .entries
        .iter()
        .map(|e| (e.header.kind, e.header.target.as_str()))
        .collect();
    assert!(kinds.contains(&(EntryKind::TuningRecord, "NVIDIA H200 / driver 12080")));
    assert!(kinds.contains(&(EntryKind::Code, "native")));
    // Imported whatever the importer's compilers: the record is the
    // tuner's to check against its device.
    let dest_dir = tempfile::tempdir().unwrap();
    let dest = store_in(dest_dir.path());
    let other = IdentityDigest::of("cpu", "another compiler");
    let imported = import(&report.bundle, &trusted(), &[other], &dest).unwrap();
    assert_eq!(imported.imported, 1);
    assert_eq!(imported.other_compiler.len(), 1);
    let bytes = dest.entry_bytes(&record).unwrap().unwrap();
    let e = entry::parse(&bytes).unwrap();
    assert_eq!(e.header.kind, EntryKind::TuningRecord);
    assert_eq!(e.payload, b"{\"BLOCK\":128}");
    // A filter by kind takes the records alone.
    let only = ExportFilter {
        kinds: vec![EntryKind::TuningRecord],
        ..ExportFilter::default()
    };
    assert_eq!(export(&source, &only, None, &signer()).unwrap().entries, 1);
}

#[test]
fn a_compiled_entry_with_a_foreign_target_refuses_the_bundle() {
    let none = Dependencies::default();
    for target in ["", "../sm_90", "sm 90", "sm_90\n"] {
        let bytes = entry::encode(
            &key(0),
            &Contents {
                kind: EntryKind::Ptx,
                target,
                kernel: "k",
                backend: "cuda",
                function: "f",
                identity: identity(),
                dependencies: &none,
                payload: b"ptx",
            },
        )
        .unwrap();
        let bundle = format::encode(&[bytes], "test", &signer());
        assert!(
            matches!(
                refused(&bundle, &trusted()),
                BundleError::Malformed { index: 0, .. }
            ),
            "{target:?}"
        );
    }
}
