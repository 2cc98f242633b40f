//! Artifact store figures: the cost of one write into a store of 1,000
//! entries and into one of 100,000 (10,000 with `--quick`, any number with
//! `--store-entries`), sampled in alternation so that the ratio holds while
//! the disk's speed drifts; and `kernelkit cache stats` on the large store
//! as a process, against `cache stats --recount` (a count of every file,
//! which is what `stats` did before the store kept a running total); last,
//! the one write that takes the large store over its limit and evicts it
//! down to the low-water mark (a tenth of its entries), which the writes
//! after it do not pay again until the tenth has been written anew.
//!
//! `cache stats` is timed as users run it: the `kernelkit` command's own
//! executable ([`kernelkit_command`]: the one built beside this one, or
//! `--kernelkit PATH`), not a copy of its code in this process.
//!
//! The entries are generated, not compiled: each is a real entry (the
//! store's file format, `kernelkit::cache::entry::encode`, with a 100-byte
//! payload, about the size of the stores) written straight into
//! the store's files, which `ArtifactStore::recount` then counts. A timed
//! write is `ArtifactStore::write`, the call a device makes after a
//! compile: encode, a temporary file in the entry's subdirectory, sync,
//! rename under the store's lock, the running total, and eviction if the
//! store went over its limit (the default 1 GiB: these stores are far
//! under it, as the were).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use kernelkit::cache::entry::{self, Contents, Dependencies, EntryKind};
use kernelkit::cache::key::{IdentityDigest, ModuleKey};
use kernelkit::cache::store::ArtifactStore;
use serde::Serialize;

use super::measure::{self, Plan};
use super::{progress, report, BenchError};

/// Entries of the small store.
pub(crate) const SMALL: u64 = 1_000;
/// Payload bytes of a generated entry.
const PAYLOAD: usize = 100;

/// The store figures (their JSON keys are `store_*`).
#[derive(Clone, Debug, Serialize)]
pub(crate) struct StoreFigures {
    /// Per store size (entries before the timed writes), µs per write.
    #[serde(rename = "store_write_us", serialize_with = "report::by_count")]
    pub(crate) write_us: Vec<(u64, f64)>,
    /// `kernelkit cache stats` on the large store, ms (spawn to exit).
    #[serde(rename = "store_stats_ms")]
    pub(crate) stats_ms: f64,
    /// `kernelkit cache stats --recount` on the large store, ms.
    #[serde(rename = "store_recount_ms")]
    pub(crate) recount_ms: f64,
    /// The write that took the large store over its limit, ms.
    #[serde(rename = "store_evicting_write_ms")]
    pub(crate) evicting_write_ms: f64,
    /// The entries that write removed.
    #[serde(rename = "store_evicted_entries")]
    pub(crate) evicted: u64,
}

/// Where the stores go and how large the large one is.
pub(crate) struct Setup {
    /// Entries of the large store.
    pub(crate) large: u64,
    /// The directory to build them in (a temporary directory of its own
    /// inside it, removed afterwards); `None`: the system's.
    pub(crate) parent: Option<PathBuf>,
    /// Timed write samples of each store.
    pub(crate) plan: Plan,
    /// Runs of each `cache stats` figure (median).
    pub(crate) stats_runs: usize,
    /// The `kernelkit` executable whose `cache stats` is timed.
    pub(crate) cli: PathBuf,
}

/// The `kernelkit` executable: `given`, else the one in this executable's
/// directory (cargo builds every binary of the workspace into one
/// directory; `cargo build -p kernelkit-cli` puts it there). An error
/// says how to get one rather than timing another program found elsewhere.
pub(crate) fn kernelkit_command(given: Option<PathBuf>) -> Result<PathBuf, BenchError> {
    if let Some(path) = given {
        return Ok(path);
    }
    let exe = std::env::current_exe().map_err(|e| BenchError::Io("this executable", e))?;
    let beside = exe.with_file_name(format!("kernelkit{}", std::env::consts::EXE_SUFFIX));
    if beside.is_file() {
        Ok(beside)
    } else {
        Err(BenchError::Child(format!(
            "the store figures time `kernelkit cache stats`, and there is no {}: \
             build it (`cargo build -p kernelkit-cli`, with --release for a release \
             build of this one) or name one with --kernelkit PATH",
            beside.display()
        )))
    }
}

/// One store of generated entries.
struct Store {
    store: ArtifactStore,
    /// Names the next key; distinct across stores.
    next: u64,
    tag: &'static str,
}

impl Store {
    fn key(&self, n: u64) -> ModuleKey {
        ModuleKey::derive("cpu", "bench store", &format!("{}_{n}", self.tag), "")
    }

    /// The entry file of generated entry `n`, written directly.
    fn plant(&self, n: u64, payload: &[u8]) -> Result<(), BenchError> {
        let key = self.key(n);
        let bytes = encode(&key, self.tag, n, payload)?;
        let path = self.store.entry_path(&key);
        let sub = path.parent().expect("an entry is in a subdirectory");
        if !sub.exists() {
            private_dir(sub)?;
        }
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        options
            .open(&path)
            .and_then(|mut f| f.write_all(&bytes))
            .map_err(|e| BenchError::Io("a generated store entry", e))
    }

    /// One timed write: a new entry through the store's own write.
    fn write(&mut self, payload: &[u8]) -> Result<(), BenchError> {
        let n = self.next;
        self.next += 1;
        let key = self.key(n);
        let function = format!("{}_{n}", self.tag);
        self.store
            .write(
                &key,
                &Contents {
                    kind: EntryKind::Code,
                    target: "native",
                    kernel: self.tag,
                    backend: "cpu",
                    function: &function,
                    identity: IdentityDigest::of("cpu", "bench"),
                    dependencies: &Dependencies::default(),
                    payload,
                },
            )
            .map_err(|e| BenchError::Child(format!("a store write failed: {e}")))
    }
}

fn encode(key: &ModuleKey, tag: &str, n: u64, payload: &[u8]) -> Result<Vec<u8>, BenchError> {
    let function = format!("{tag}_{n}");
    entry::encode(
        key,
        &Contents {
            kind: EntryKind::Code,
            target: "native",
            kernel: tag,
            backend: "cpu",
            function: &function,
            identity: IdentityDigest::of("cpu", "bench"),
            dependencies: &Dependencies::default(),
            payload,
        },
    )
    .map_err(|e| BenchError::Child(format!("cannot encode a generated entry: {e}")))
}

fn private_dir(path: &Path) -> Result<(), BenchError> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder
        .create(path)
        .map_err(|e| BenchError::Io("a store directory", e))
}

/// A store of `entries` generated entries in `dir`, counted.
fn fill(dir: PathBuf, tag: &'static str, entries: u64) -> Result<Store, BenchError> {
    let store = ArtifactStore::create(&dir)
        .map_err(|e| BenchError::Child(format!("cannot create a store: {e}")))?;
    let store = Store {
        store,
        next: entries,
        tag,
    };
    let payload = vec![0x5a; PAYLOAD];
    for n in 0..entries {
        store.plant(n, &payload)?;
    }
    let counted = store
        .store
        .recount()
        .map_err(|e| BenchError::Child(format!("cannot count a store: {e}")))?;
    if counted.entries != entries {
        return Err(BenchError::WrongResult(format!(
            "a store filled with {entries} entries counts {}",
            counted.entries
        )));
    }
    Ok(store)
}

/// Runs `kernelkit cache stats [extra] --dir dir` (`cli`: the `kernelkit`
/// executable); ms, spawn to exit.
fn stats_process(cli: &Path, dir: &Path, extra: &[&str]) -> Result<f64, BenchError> {
    let started = Instant::now();
    let out = Command::new(cli)
        .args(["cache", "stats"])
        .args(extra)
        .arg("--dir")
        .arg(dir)
        .env_remove("KERNELKIT_CACHE_MAX_BYTES")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| BenchError::Io("a `kernelkit cache stats` process", e))?;
    let ms = started.elapsed().as_secs_f64() * 1e3;
    if !out.status.success() {
        return Err(BenchError::Child(format!(
            "`kernelkit cache stats` failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(ms)
}

/// Sets the store's limit to what it holds, then times the write that
/// goes over it; ms, and the entries it removed.
fn evicting_write(store: &mut Store, payload: &[u8]) -> Result<(f64, u64), BenchError> {
    let stats = |s: &ArtifactStore| {
        s.stats()
            .map_err(|e| BenchError::Child(format!("cannot read a store's total: {e}")))
    };
    let before = stats(&store.store)?;
    let dir = store.store.dir().to_path_buf();
    store.store = ArtifactStore::open(&dir)
        .map_err(|e| BenchError::Child(format!("cannot open a store: {e}")))?
        .with_max_bytes(before.bytes);
    let started = Instant::now();
    store.write(payload)?;
    let ms = started.elapsed().as_secs_f64() * 1e3;
    let after = stats(&store.store)?;
    let evicted = (before.entries + 1).saturating_sub(after.entries);
    if evicted == 0 || after.bytes > after.max_bytes {
        return Err(BenchError::WrongResult(format!(
            "a write over the limit left {} of {} bytes ({evicted} entries removed)",
            after.bytes, after.max_bytes
        )));
    }
    Ok((ms, evicted))
}

/// Fills the two stores, times writes into them in alternation, then
/// `cache stats` on the large one.
pub(crate) fn measure(setup: &Setup) -> Result<StoreFigures, BenchError> {
    let mut builder = tempfile::Builder::new();
    builder.prefix("kernelkit-bench-store");
    let root = match &setup.parent {
        Some(parent) => builder.tempdir_in(parent),
        None => builder.tempdir(),
    }
    .map_err(|e| BenchError::Io("a temporary directory for the stores", e))?;
    progress(&format!(
        "generating stores of {SMALL} and {} entries in {}",
        setup.large,
        root.path().display()
    ));
    let mut small = fill(root.path().join("small"), "small", SMALL)?;
    let mut large = fill(root.path().join("large"), "large", setup.large)?;
    let payload = vec![0xa5; PAYLOAD];
    let mut write_large = || large.write(&payload);
    let mut write_small = || small.write(&payload);
    progress("store writes, in alternation");
    let (large_ns, small_ns) = measure::paired(setup.plan, &mut write_large, &mut write_small)?;
    progress("`kernelkit cache stats`, and with --recount");
    let dir = root.path().join("large");
    let stats_ms = measure::repeated(setup.stats_runs, || stats_process(&setup.cli, &dir, &[]))?;
    let recount_ms = measure::repeated(setup.stats_runs, || {
        stats_process(&setup.cli, &dir, &["--recount"])
    })?;
    progress("a write that evicts");
    let (evicting_write_ms, evicted) = evicting_write(&mut large, &payload)?;
    Ok(StoreFigures {
        write_us: vec![(SMALL, small_ns / 1e3), (setup.large, large_ns / 1e3)],
        stats_ms,
        recount_ms,
        evicting_write_ms,
        evicted,
    })
}
