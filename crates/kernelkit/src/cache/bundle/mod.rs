//! Bundles: compiled kernels shipped from a build machine to the nodes
//! that run them, signed, so that a fresh process on a node loads them
//! instead of compiling (`kernelkit cache export` / `import`).
//!
//! - **What a bundle holds.** Selected entries of an artifact store, each
//!   in the store's own file format ([`crate::cache::entry`]: key,
//!   compiler identity digest, names, dependency list, payload, checksum),
//!   in one file signed with Ed25519 ([`keys`]). The layout is in
//!   `format.rs`. A bundle names no files: an entry's place in the
//!   importing store follows from its key.
//! - **Relocatable.** Keys are hashes of the backend, the compiler identity
//!   and the generated source: no path, user or home directory goes into
//!   them from kernelkit (a source that `#include`s a header by its path
//!   carries that path, as the user wrote it). The entries hold no path
//!   either, except in a dependency list, which names the headers a
//!   compile read besides the source (only kernels whose source or header
//!   `#include`s files have one). Export leaves out every entry whose list
//!   names a path under the exporting user's home directory, a relative
//!   path, or a working directory ([`ExportReport::local`]): such a
//!   path means nothing on another machine. The other paths (headers
//!   installed system-wide, `/opt/...`, a project mounted at the same place
//!   in every image) are kept as they are, absolute, and **checked on
//!   import**: an entry whose listed files are not on the importing machine
//!   with the same contents (or where a file now exists that the compile
//!   found absent) is skipped and counted ([`ImportReport::stale`]); it
//!   would never hit there.
//! - **Compiler identity.** Each entry carries the digest of the compiler
//!   configuration that built it ([`IdentityDigest`]). An entry whose digest
//!   is none of the importer's backends' (another C++ compiler or version,
//!   other CPU features, another NVRTC, another GPU architecture, a backend
//!   this machine lacks) is skipped and counted
//!   ([`ImportReport::other_compiler`]), never stored, never loaded.
//! - **Signatures.** A bundle is signed on the build machine with a private
//!   key ([`SecretKey`], `kernelkit cache keygen`) and verified on the
//!   nodes with the public keys they trust ([`TrustedKeys`],
//!   `KERNELKIT_TRUSTED_KEYS`). A bundle that is unsigned, signed by a key
//!   not trusted, damaged anywhere (a flipped bit, a cut) or malformed
//!   inside (a name that is not an identifier, a key twice) is refused
//!   whole with a [`BundleError`], before anything is written: nothing from
//!   it enters the store. Without trusted keys nothing is imported.
//! - **Through the store's write path.** Each accepted entry is written with
//!   [`ArtifactStore::write`], like a compile's: temporary file, rename,
//!   mode `0600` in `0700` directories, the running total, eviction.
//!
//! A store write that fails half-way (a full disk) stops the import with
//! [`BundleError::Store`]; the entries written before it are whole, good
//! entries (the bundle was verified before the first write).

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::cache::entry::{self, Contents, Entry, EntryKind, Header};
use crate::cache::key::{IdentityDigest, ModuleKey};
use crate::cache::store::{ArtifactStore, EntryFault, StagedBatch, StoreError};

mod format;
pub mod keys;
#[cfg(test)]
mod tests;

pub use format::{BUNDLE_FORMAT_VERSION, MAGIC, MAX_PRODUCER_BYTES};
pub use keys::{KeyError, PublicKey, SecretKey, TrustedKeys};

pub use crate::config::DEFAULT_BUNDLE_MAX_BYTES;

/// Why a bundle was refused (whole: nothing from it was imported), or why
/// one could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BundleError {
    /// No public key is trusted (set `KERNELKIT_TRUSTED_KEYS`).
    #[error(
        "no trusted keys: a bundle is imported only when its signer's public key is in the \
         file KERNELKIT_TRUSTED_KEYS names"
    )]
    NoTrustedKeys,
    /// The file is not a bundle.
    #[error("not a kernelkit bundle (bad magic)")]
    NotABundle,
    /// The file is shorter than a bundle's header and signature.
    #[error("truncated: shorter than a bundle's header and signature")]
    Truncated,
    /// Another version of the bundle format.
    #[error("bundle format version {found}, this kernelkit reads {expected}")]
    Version {
        /// The version in the file.
        found: u32,
        /// [`BUNDLE_FORMAT_VERSION`].
        expected: u32,
    },
    /// The bundle carries no signature.
    #[error("the bundle is not signed")]
    Unsigned,
    /// Signed with a key that is not trusted here.
    #[error("signed by key {signer}, which is not among the trusted keys")]
    UntrustedSigner {
        /// The key the bundle names.
        signer: PublicKey,
    },
    /// The signature does not match the contents: damaged (a flipped bit,
    /// a cut, bytes added) or forged.
    #[error("the signature of key {signer} does not match the contents (damaged or forged)")]
    BadSignature {
        /// The key the bundle names.
        signer: PublicKey,
    },
    /// A signed bundle whose contents are not well formed.
    #[error("entry {index} is malformed: {reason}")]
    Malformed {
        /// The entry's position (from 0).
        index: usize,
        /// What is wrong.
        reason: String,
    },
    /// The bundle file could not be read or written.
    #[error("bundle {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The system's error.
        source: std::io::Error,
    },
    /// The file is larger than the limit [`read`] was given (nothing of
    /// it was read past the limit).
    #[error(
        "bundle {path} is over the {limit}-byte limit (at least {bytes} bytes); \
         raise KERNELKIT_BUNDLE_MAX_BYTES to import it"
    )]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size as far as it was seen: the file's length, or the bytes
        /// read before the limit was passed (a file that grew).
        bytes: u64,
        /// The limit.
        limit: u64,
    },
    /// The store could not be listed or written.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// More entries than a bundle can hold.
    #[error("{0} entries selected; a bundle holds at most {max}", max = u32::MAX)]
    TooMany(usize),
}

/// Which entries [`export`] takes. Empty lists take everything.
#[derive(Clone, Debug, Default)]
pub struct ExportFilter {
    /// Only entries of these kernels (by name).
    pub kernels: Vec<String>,
    /// Only entries of these backends (`cpu`, `cuda`).
    pub backends: Vec<String>,
    /// Only entries of these kinds (code, PTX, tuning records).
    pub kinds: Vec<EntryKind>,
}

impl ExportFilter {
    fn takes(&self, header: &Header) -> bool {
        (self.kernels.is_empty() || self.kernels.contains(&header.kernel))
            && (self.backends.is_empty() || self.backends.contains(&header.backend))
            && (self.kinds.is_empty() || self.kinds.contains(&header.kind))
    }

    fn takes_all(&self) -> bool {
        self.kernels.is_empty() && self.backends.is_empty() && self.kinds.is_empty()
    }
}

/// The producer note [`export`] writes: this kernelkit's version.
pub fn default_producer() -> String {
    format!("kernelkit {}", env!("CARGO_PKG_VERSION"))
}

/// One entry left out of a bundle or an import, and why.
#[derive(Clone, Debug)]
pub struct Skipped {
    /// The entry's key.
    pub key: ModuleKey,
    /// Its kernel's name.
    pub kernel: String,
    /// Why it was left out.
    pub reason: String,
}

/// What [`export`] made.
#[derive(Debug)]
pub struct ExportReport {
    /// The signed bundle.
    pub bundle: Vec<u8>,
    /// Entries in it.
    pub entries: usize,
    /// Entries the filter selected whose dependency list names a path that
    /// only means something on this machine (under the home directory,
    /// relative, or a working directory): not exported.
    pub local: Vec<Skipped>,
    /// Entries the filter selected that failed their own checks (damaged,
    /// not trusted, another format version): not exported.
    pub unusable: Vec<Skipped>,
}

/// What [`import`] did.
#[derive(Debug, Default)]
pub struct ImportReport {
    /// The key that signed the bundle.
    pub signer: Option<PublicKey>,
    /// Entries written into the store.
    pub imported: usize,
    /// Entries the store held already (good, same key): left as they were.
    pub present: usize,
    /// Entries built by a compiler configuration none of this machine's
    /// backends has: skipped, never loaded.
    pub other_compiler: Vec<Skipped>,
    /// Entries whose dependency list does not hold on this machine (a
    /// listed header missing or different, an absent one present): skipped.
    pub stale: Vec<Skipped>,
}

/// A bundle whose signature and contents were checked ([`verify`]).
#[derive(Debug)]
pub struct VerifiedBundle<'a> {
    /// The key that signed it (one of the trusted).
    pub signer: PublicKey,
    /// Who made it (`kernelkit 0.1.0; nvrtc 12.8`): the NVRTC that made
    /// its PTX, which the nodes' driver must be at least as new as.
    pub producer: String,
    /// Its entries, each parsed and checksum-verified.
    pub entries: Vec<Entry<'a>>,
}

/// Makes a signed bundle of the entries of `store` that `filter` selects,
/// leaving out those that are damaged or name paths local to this machine
/// (`home`: the user's home directory, see the module documentation).
/// The bundle's producer note is [`default_producer`].
pub fn export(
    store: &ArtifactStore,
    filter: &ExportFilter,
    home: Option<&Path>,
    key: &SecretKey,
) -> Result<ExportReport, BundleError> {
    export_as(store, filter, home, key, &default_producer())
}

/// [`export`] with the producer note `producer` (printable ASCII, at most
/// [`MAX_PRODUCER_BYTES`]; anything else is replaced or cut).
pub fn export_as(
    store: &ArtifactStore,
    filter: &ExportFilter,
    home: Option<&Path>,
    key: &SecretKey,
    producer: &str,
) -> Result<ExportReport, BundleError> {
    let mut entries = Vec::new();
    let mut local = Vec::new();
    let mut unusable = Vec::new();
    let mut listed = store.list()?;
    // Oldest first: a bundle of the same store is the same bytes whatever
    // was used since (ties broken by key).
    listed.sort_by_key(|e| e.key.to_string());
    for info in listed {
        let skipped = |kernel: &str, reason: String| Skipped {
            key: info.key,
            kernel: kernel.to_string(),
            reason,
        };
        let header = match &info.header {
            Ok(h) if filter.takes(h) => h,
            Ok(_) => continue,
            // A header that cannot be read says nothing of what it holds:
            // counted when no filter could have left it out.
            Err(fault) => {
                if filter.takes_all() {
                    unusable.push(skipped("?", fault.to_string()));
                }
                continue;
            }
        };
        let bytes = match store.entry_bytes(&info.key) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => continue, // removed since the listing
            Err(fault) => {
                unusable.push(skipped(&header.kernel, fault.to_string()));
                continue;
            }
        };
        // `entry_bytes` checked these bytes; a failure here is theirs.
        let why = match entry::parse(&bytes) {
            Ok(parsed) => local_path(&parsed, home),
            Err(e) => {
                unusable.push(skipped(
                    &header.kernel,
                    EntryFault::Malformed(e).to_string(),
                ));
                continue;
            }
        };
        if let Some(why) = why {
            local.push(skipped(&header.kernel, why));
            continue;
        }
        entries.push(bytes);
    }
    if entries.len() > u32::MAX as usize {
        return Err(BundleError::TooMany(entries.len()));
    }
    Ok(ExportReport {
        bundle: format::encode(&entries, producer, key),
        entries: entries.len(),
        local,
        unusable,
    })
}

/// Why `entry`'s dependency list cannot travel, if it cannot.
fn local_path(entry: &Entry<'_>, home: Option<&Path>) -> Option<String> {
    let deps = &entry.dependencies;
    if let Some(cwd) = &deps.cwd {
        return Some(format!(
            "its includes were searched from the working directory {}",
            cwd.display()
        ));
    }
    deps.paths().find_map(|p| {
        if p.is_relative() {
            Some(format!("it depends on the relative path {}", p.display()))
        } else if home.is_some_and(|h| p.starts_with(h)) {
            Some(format!(
                "it depends on {}, in the home directory",
                p.display()
            ))
        } else {
            None
        }
    })
}

/// Checks a bundle's signature against `trusted` and parses it, without
/// writing anything. Any failure refuses the bundle whole.
pub fn verify<'a>(
    bundle: &'a [u8],
    trusted: &TrustedKeys,
) -> Result<VerifiedBundle<'a>, BundleError> {
    let decoded = format::decode(bundle, trusted)?;
    Ok(VerifiedBundle {
        signer: decoded.signer,
        producer: decoded.producer,
        entries: decoded.entries,
    })
}

/// What a bundle says it holds, read without checking its signature (for
/// listing: `kernelkit cache inspect`); [`verify`] before trusting any
/// of it. Malformed contents are refused as by [`verify`].
pub fn inspect(bundle: &[u8]) -> Result<VerifiedBundle<'_>, BundleError> {
    let decoded = format::decode_unverified(bundle)?;
    Ok(VerifiedBundle {
        signer: decoded.signer,
        producer: decoded.producer,
        entries: decoded.entries,
    })
}

/// Verifies `bundle` ([`verify`]) and writes into `store` each entry built
/// by one of `identities` (this machine's backends: see
/// `Device::artifact_identity`) whose dependency list holds here, and
/// every tuning record (no compiler made it: the tuner that reads it checks
/// its target against the device).
///
/// The signature's check (a hash of the whole bundle) runs on a thread of
/// its own while the entries are parsed, sorted and their files staged in
/// the store ([`ArtifactStore::stage_batch`]): nothing is published
/// before it passed, and a bundle that fails it leaves no file behind (its
/// staged files are removed) and is refused as [`verify`] refuses it.
pub fn import(
    bundle: &[u8],
    trusted: &TrustedKeys,
    identities: &[IdentityDigest],
    store: &ArtifactStore,
) -> Result<ImportReport, BundleError> {
    let signed = format::signed(bundle, trusted)?;
    std::thread::scope(|scope| {
        let checked = scope.spawn(|| signed.verify());
        let staged = stage(bundle, identities, store);
        if !checked.join().unwrap_or(false) {
            return Err(BundleError::BadSignature {
                signer: signed.signer,
            });
        }
        let (mut report, staged) = staged?;
        report.signer = Some(signed.signer);
        // One batch through the store's write path (see
        // `ArtifactStore::write_batch`).
        report.imported = store.publish_batch(staged)?;
        Ok(report)
    })
}

/// The bundle's entries parsed (its signature is being checked beside),
/// sorted, and those to import staged in `store`.
fn stage(
    bundle: &[u8],
    identities: &[IdentityDigest],
    store: &ArtifactStore,
) -> Result<(ImportReport, StagedBatch), BundleError> {
    let decoded = format::decode_unverified(bundle)?;
    let mut report = ImportReport::default();
    // Each entry's fate, found in parallel (each is a look at the store,
    // and at the files its dependency list names).
    enum Fate<'b> {
        OtherCompiler(Skipped),
        Stale(Skipped),
        Present,
        Accepted(ModuleKey, Contents<'b>),
    }
    use rayon::prelude::*;
    let fates: Vec<Fate<'_>> = decoded
        .entries
        .par_iter()
        .map(|e| {
            let key = e.header.key;
            let skipped = |reason: String| Skipped {
                key,
                kernel: e.header.kernel.clone(),
                reason,
            };
            if e.header.kind.is_loadable() && !identities.contains(&e.header.identity) {
                return Fate::OtherCompiler(skipped(format!(
                    "built by another {} compiler configuration (identity {})",
                    e.header.backend, e.header.identity
                )));
            }
            if let Err(stale) = e.dependencies.check_files() {
                return Fate::Stale(skipped(stale.to_string()));
            }
            if store.holds(&key) {
                return Fate::Present;
            }
            Fate::Accepted(key, e.contents())
        })
        .collect();
    let mut accepted = Vec::with_capacity(fates.len());
    for fate in fates {
        match fate {
            Fate::OtherCompiler(s) => report.other_compiler.push(s),
            Fate::Stale(s) => report.stale.push(s),
            Fate::Present => report.present += 1,
            Fate::Accepted(key, contents) => accepted.push((key, contents)),
        }
    }
    Ok((report, store.stage_batch(&accepted)))
}

/// Reads a bundle file of at most `max_bytes` bytes
/// ([`CacheConfig::bundle_max_bytes`], default
/// [`DEFAULT_BUNDLE_MAX_BYTES`]). A larger one is refused from its length
/// before anything is read, and a file that grows while it is read is
/// refused once it passes the limit: memory held stays within the limit
/// (plus one byte).
///
/// [`CacheConfig::bundle_max_bytes`]: crate::config::CacheConfig::bundle_max_bytes
pub fn read(path: &Path, max_bytes: u64) -> Result<Vec<u8>, BundleError> {
    let io = |source| BundleError::Io {
        path: path.to_path_buf(),
        source,
    };
    let too_large = |bytes| BundleError::TooLarge {
        path: path.to_path_buf(),
        bytes,
        limit: max_bytes,
    };
    let file = std::fs::File::open(path).map_err(io)?;
    let bytes = file.metadata().map_err(io)?.len();
    if bytes > max_bytes {
        return Err(too_large(bytes));
    }
    let mut out = Vec::with_capacity(usize::try_from(bytes).unwrap_or(0));
    file.take(max_bytes.saturating_add(1))
        .read_to_end(&mut out)
        .map_err(io)?;
    if out.len() as u64 > max_bytes {
        return Err(too_large(out.len() as u64));
    }
    Ok(out)
}

/// Writes a bundle file whole (a temporary file beside it, renamed), so a
/// reader never sees part of one; mode `0644`.
pub fn write(path: &Path, bundle: &[u8]) -> Result<(), BundleError> {
    let io = |source| BundleError::Io {
        path: path.to_path_buf(),
        source,
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".kkbundle")
        .tempfile_in(dir)
        .map_err(io)?;
    std::io::Write::write_all(&mut tmp, bundle).map_err(io)?;
    // A bundle holds no secret (it is signed, not encrypted) and is meant
    // to be read by the services of an image: readable by all.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o644))
            .map_err(io)?;
    }
    tmp.as_file().sync_all().map_err(io)?;
    tmp.persist(path).map_err(|e| io(e.error))?;
    Ok(())
}
