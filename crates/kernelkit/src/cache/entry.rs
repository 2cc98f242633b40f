//! The artifact file format: one self-checking file per artifact.
//!
//! ```text
//! offset  size  field
//!      0     8  magic  b"KKARTIFC"
//!      8     4  format version (u32 LE, ARTIFACT_FORMAT_VERSION)
//!     12    16  store key
//!     28    16  compiler identity digest ([`IdentityDigest`])
//!     44     8  payload length (u64 LE)
//!     52     4  dependency list length (u32 LE)
//!     56     1  entry kind ([`EntryKind`]: 0 code, 1 PTX, 2 tuning record)
//!     57     2  kernel name length (u16 LE)
//!     59     2  backend name length (u16 LE)
//!     61     2  function name length (u16 LE)
//!     63     2  target length (u16 LE)
//!     65     …  kernel name, backend name, function name, target (UTF-8)
//!      …     …  dependency list (below)
//!      …     …  payload (the compiled artifact)
//!      …    16  checksum: xxh3-128 of every byte before it (u128 LE)
//! ```
//!
//! The dependency list ([`Dependencies`]): the include directories (a
//! `u32` count, then each path), the working directory (one path, empty for
//! none), the files read (a `u32` count, then each path and its 16-byte
//! xxh3-128 hash), the paths found absent (a `u32` count, then each path).
//! A path is a `u32` length and its bytes. The list is at most
//! [`MAX_DEPENDENCY_BYTES`].
//!
//! The names are there for `kernelkit cache list`; they are capped at
//! [`MAX_NAME_BYTES`] so a listing reads only a file's first few KiB
//! ([`parse_header`]). [`parse`] accepts a file only when every field is in
//! bounds, the length adds up exactly, and the checksum matches; it never
//! panics, whatever the bytes.
//!
//! The identity digest names the compiler configuration that built the
//! payload (the backend's whole artifact identity, hashed: see
//! [`IdentityDigest`]). The store key covers it already; it is written
//! out so that an entry that travels without its source (a bundle, a
//! fleet tier) can be checked against the compiler of the machine that
//! receives it, which cannot derive the key.
//!
//! This module is the one serialization of an entry: the disk store, the
//! bundles ([`crate::cache::bundle`]) and any other tier that moves
//! entries as bytes use [`encode`] and [`parse`].
//!
//! The kind says what the payload is: code for one target (a cubin, a
//! shared library), PTX the driver finishes at load, or a tuning record
//! (the autotuner's, opaque here). The target names what the payload is
//! for: `sm_90a`, `compute_90`, `x86-64-v2`, `native`; for a tuning
//! record, the device model and driver it was measured on.
//!
//! Format version 1 had no dependency list, version 2 no identity digest,
//! version 3 and 4 no kind or target; their entries (and those of any other version) are refused with
//! [`EntryError::Version`], which the store treats as a miss.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use xxhash_rust::xxh3::xxh3_128;

pub use crate::backend::deps::{Dependencies, FileDigest, Stale};
use crate::cache::key::{IdentityDigest, ModuleKey, ARTIFACT_FORMAT_VERSION};

/// The first eight bytes of every artifact file.
pub const MAGIC: [u8; 8] = *b"KKARTIFC";

/// Longest name kept in an entry's metadata; longer names are cut (on a
/// character boundary) when written. The names are informational only.
pub const MAX_NAME_BYTES: usize = 1024;

/// The largest dependency list an entry may hold (16 MiB: far more paths
/// than any compile reads).
pub const MAX_DEPENDENCY_BYTES: usize = 16 << 20;

/// Bytes before the names.
const FIXED_HEADER: usize = 65;
/// Where the kind byte is.
const KIND_AT: usize = 56;
/// Bytes of the trailing checksum.
const CHECKSUM: usize = 16;

/// The bytes [`parse_header`] may need: the fixed header and four names.
pub const MAX_HEADER_BYTES: usize = FIXED_HEADER + 4 * MAX_NAME_BYTES;

/// What an entry's payload is. The kind is written in every entry, so a
/// listing (`kernelkit cache inspect`) tells code from PTX from tuning
/// records without reading payloads, and a tier never hands a record to
/// a loader.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EntryKind {
    /// Machine code for exactly one target (a cubin for `sm_90a`, a shared
    /// library for `x86-64-v2`).
    Code,
    /// PTX for a virtual architecture (`compute_90`), which the driver
    /// compiles when it loads it on any GPU of that architecture or later.
    Ptx,
    /// A tuning record: the configuration an autotuner chose for one kernel
    /// on one device model (its payload's encoding is the tuner's own).
    TuningRecord,
}

impl EntryKind {
    /// Every kind, in the order of their codes.
    pub const ALL: [EntryKind; 3] = [EntryKind::Code, EntryKind::Ptx, EntryKind::TuningRecord];

    /// The byte written in the file.
    pub fn code(self) -> u8 {
        match self {
            EntryKind::Code => 0,
            EntryKind::Ptx => 1,
            EntryKind::TuningRecord => 2,
        }
    }

    /// The kind of a byte written by [`EntryKind::code`].
    pub fn from_code(code: u8) -> Option<EntryKind> {
        EntryKind::ALL.into_iter().find(|k| k.code() == code)
    }

    /// `code`, `ptx`, `tuning-record` (for listings and filters).
    pub fn as_str(self) -> &'static str {
        match self {
            EntryKind::Code => "code",
            EntryKind::Ptx => "ptx",
            EntryKind::TuningRecord => "tuning-record",
        }
    }

    /// The kind [`EntryKind::as_str`] names.
    pub fn parse(name: &str) -> Option<EntryKind> {
        EntryKind::ALL.into_iter().find(|k| k.as_str() == name)
    }

    /// Whether a backend loads this payload (code or PTX), rather than a
    /// tuner reading it.
    pub fn is_loadable(self) -> bool {
        matches!(self, EntryKind::Code | EntryKind::Ptx)
    }
}

impl std::fmt::Display for EntryKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What an entry says about itself, apart from its payload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// The format version written in the file.
    pub version: u32,
    /// The key the entry was stored under.
    pub key: ModuleKey,
    /// The compiler configuration that built the payload.
    pub identity: IdentityDigest,
    /// Length of the payload in bytes.
    pub payload_len: u64,
    /// Length of the dependency list in bytes.
    pub dependencies_len: u32,
    /// What the payload is.
    pub kind: EntryKind,
    /// The kernel's name.
    pub kernel: String,
    /// The backend that compiled it (`cpu`, `cuda`).
    pub backend: String,
    /// The generated function's name.
    pub function: String,
    /// What the payload is for: `sm_90a`, `compute_90`, `x86-64-v2`, or a
    /// tuning record's device model and driver.
    pub target: String,
}

/// A parsed, checksum-verified entry; the payload borrows the file's bytes.
#[derive(Debug)]
pub struct Entry<'a> {
    /// The metadata.
    pub header: Header,
    /// What the compile read, to be checked before the payload is used.
    pub dependencies: Dependencies,
    /// The compiled artifact.
    pub payload: &'a [u8],
}

/// Why bytes are not a usable entry.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EntryError {
    /// The file is shorter than its header or than the lengths it declares.
    #[error("truncated: {len} bytes, at least {needed} needed")]
    Truncated {
        /// Bytes present.
        len: u64,
        /// Bytes the header (or its lengths) require.
        needed: u64,
    },
    /// The file does not start with [`MAGIC`].
    #[error("not a kernelkit artifact (bad magic)")]
    Magic,
    /// Written by another version of the format.
    #[error("format version {found}, expected {expected}")]
    Version {
        /// The version in the file.
        found: u32,
        /// [`ARTIFACT_FORMAT_VERSION`].
        expected: u32,
    },
    /// More bytes than the header accounts for.
    #[error("{extra} unexpected bytes after the checksum")]
    TrailingBytes {
        /// How many.
        extra: u64,
    },
    /// A name is over [`MAX_NAME_BYTES`] or not UTF-8.
    #[error("the {field} name is malformed")]
    Name {
        /// `kernel`, `backend`, `function` or `target`.
        field: &'static str,
    },
    /// The kind byte is none of [`EntryKind`]'s.
    #[error("unknown entry kind {found}")]
    Kind {
        /// The byte in the file.
        found: u8,
    },
    /// The checksum does not match the contents.
    #[error("checksum mismatch")]
    Checksum,
    /// The dependency list is longer than [`MAX_DEPENDENCY_BYTES`] or its
    /// fields do not add up (only a faulty writer makes one that passes the
    /// checksum).
    #[error("the dependency list is malformed")]
    Dependencies,
    /// The entry is intact but stored under another key than the one asked
    /// for (reported by the store, which knows the key it asked for).
    #[error("stored under key {found}, expected {expected}")]
    WrongKey {
        /// The key in the file.
        found: ModuleKey,
        /// The key the file name (or lookup) stands for.
        expected: ModuleKey,
    },
}

/// What one entry holds, borrowed: what a compile hands to the tiers, and
/// what [`encode`] writes.
#[derive(Clone, Copy, Debug)]
pub struct Contents<'a> {
    /// What the payload is.
    pub kind: EntryKind,
    /// The kernel's name (kept for `kernelkit cache list`).
    pub kernel: &'a str,
    /// `cpu` or `cuda`.
    pub backend: &'a str,
    /// The generated function's name.
    pub function: &'a str,
    /// What the payload is for (see [`Header::target`]).
    pub target: &'a str,
    /// The compiler configuration that built the payload.
    pub identity: IdentityDigest,
    /// The files the compile read, checked on every later load.
    pub dependencies: &'a Dependencies,
    /// The compiled artifact: shared library bytes, cubin or PTX.
    pub payload: &'a [u8],
}

impl Entry<'_> {
    /// What this entry holds, to write it again (into a store, a bundle).
    pub fn contents(&self) -> Contents<'_> {
        Contents {
            kind: self.header.kind,
            kernel: &self.header.kernel,
            backend: &self.header.backend,
            function: &self.header.function,
            target: &self.header.target,
            identity: self.header.identity,
            dependencies: &self.dependencies,
            payload: self.payload,
        }
    }
}

/// Encodes an entry. Names longer than [`MAX_NAME_BYTES`] are cut. A
/// dependency list over [`MAX_DEPENDENCY_BYTES`] is an error (the entry is
/// then not written: a later process could not check it).
pub fn encode(key: &ModuleKey, contents: &Contents<'_>) -> Result<Vec<u8>, EntryError> {
    let payload = contents.payload;
    let names = [
        contents.kernel,
        contents.backend,
        contents.function,
        contents.target,
    ]
    .map(cut_name);
    let names_len: usize = names.iter().map(|n| n.len()).sum();
    let deps = encode_dependencies(contents.dependencies)?;
    let mut out =
        Vec::with_capacity(FIXED_HEADER + names_len + deps.len() + payload.len() + CHECKSUM);
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&ARTIFACT_FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(key.as_bytes());
    out.extend_from_slice(contents.identity.as_bytes());
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    // `encode_dependencies` keeps the list within u32 range.
    out.extend_from_slice(&(deps.len() as u32).to_le_bytes());
    out.push(contents.kind.code());
    for n in &names {
        // `cut_name` keeps every name within u16 range.
        out.extend_from_slice(&(n.len() as u16).to_le_bytes());
    }
    for n in &names {
        out.extend_from_slice(n.as_bytes());
    }
    out.extend_from_slice(&deps);
    out.extend_from_slice(payload);
    let sum = xxh3_128(&out);
    out.extend_from_slice(&sum.to_le_bytes());
    Ok(out)
}

fn encode_dependencies(d: &Dependencies) -> Result<Vec<u8>, EntryError> {
    let mut out = Vec::new();
    let path = |out: &mut Vec<u8>, p: &Path| {
        let bytes = p.as_os_str().as_bytes();
        out.extend_from_slice(&(bytes.len().min(u32::MAX as usize) as u32).to_le_bytes());
        out.extend_from_slice(bytes);
    };
    let count = |out: &mut Vec<u8>, n: usize| out.extend_from_slice(&(n as u32).to_le_bytes());
    count(&mut out, d.include_dirs.len());
    for dir in &d.include_dirs {
        path(&mut out, dir);
    }
    path(&mut out, d.cwd.as_deref().unwrap_or(Path::new("")));
    count(&mut out, d.files.len());
    for f in &d.files {
        path(&mut out, &f.path);
        out.extend_from_slice(&f.hash.to_le_bytes());
    }
    count(&mut out, d.absent.len());
    for p in &d.absent {
        path(&mut out, p);
    }
    if out.len() > MAX_DEPENDENCY_BYTES {
        return Err(EntryError::Dependencies);
    }
    Ok(out)
}

fn decode_dependencies(bytes: &[u8]) -> Result<Dependencies, EntryError> {
    let mut r = Reader { bytes, at: 0 };
    let bad = || EntryError::Dependencies;
    let u32_ = |r: &mut Reader<'_>| r.array::<4>().map(u32::from_le_bytes).ok_or_else(bad);
    let path = |r: &mut Reader<'_>| -> Result<PathBuf, EntryError> {
        let len = u32_(r)? as usize;
        let raw = r.take(len).ok_or_else(bad)?;
        Ok(PathBuf::from(OsStr::from_bytes(raw)))
    };
    // Each item takes at least its 4-byte length: a count the remaining
    // bytes cannot hold is refused before anything is allocated for it.
    let count = |r: &mut Reader<'_>| -> Result<usize, EntryError> {
        let n = u32_(r)? as usize;
        if n > (r.bytes.len() - r.at) / 4 {
            return Err(bad());
        }
        Ok(n)
    };
    let n = count(&mut r)?;
    let include_dirs = (0..n).map(|_| path(&mut r)).collect::<Result<_, _>>()?;
    let cwd = Some(path(&mut r)?).filter(|p| !p.as_os_str().is_empty());
    let n = count(&mut r)?;
    let files = (0..n)
        .map(|_| {
            let path = path(&mut r)?;
            let hash = u128::from_le_bytes(r.array().ok_or_else(bad)?);
            Ok(FileDigest { path, hash })
        })
        .collect::<Result<_, _>>()?;
    let n = count(&mut r)?;
    let absent = (0..n).map(|_| path(&mut r)).collect::<Result<_, _>>()?;
    if r.at != bytes.len() {
        return Err(bad());
    }
    Ok(Dependencies {
        include_dirs,
        cwd,
        files,
        absent,
    })
}

/// Parses and verifies a whole entry file.
pub fn parse(bytes: &[u8]) -> Result<Entry<'_>, EntryError> {
    let (header, names_end) = parse_prefix(bytes)?;
    let needed = (names_end as u64)
        .checked_add(header.dependencies_len as u64)
        .and_then(|n| n.checked_add(header.payload_len))
        .and_then(|n| n.checked_add(CHECKSUM as u64))
        .ok_or(EntryError::Truncated {
            len: bytes.len() as u64,
            needed: u64::MAX,
        })?;
    let len = bytes.len() as u64;
    if len < needed {
        return Err(EntryError::Truncated { len, needed });
    }
    if len > needed {
        return Err(EntryError::TrailingBytes {
            extra: len - needed,
        });
    }
    // `needed == len` fits in usize from here on.
    let body_end = bytes.len() - CHECKSUM;
    let (body, sum) = bytes.split_at(body_end);
    let mut stored = [0u8; CHECKSUM];
    stored.copy_from_slice(sum);
    if xxh3_128(body) != u128::from_le_bytes(stored) {
        return Err(EntryError::Checksum);
    }
    let (deps, payload) = body[names_end..].split_at(header.dependencies_len as usize);
    Ok(Entry {
        dependencies: decode_dependencies(deps)?,
        header,
        payload,
    })
}

/// Parses the header from the first bytes of a file (up to
/// [`MAX_HEADER_BYTES`] are enough), without the payload or checksum.
/// For listings: it says what an entry claims to be, not that it is intact.
pub fn parse_header(prefix: &[u8]) -> Result<Header, EntryError> {
    parse_prefix(prefix).map(|(h, _)| h)
}

/// The header and the offset where the payload starts.
fn parse_prefix(bytes: &[u8]) -> Result<(Header, usize), EntryError> {
    let truncated = |needed: usize| EntryError::Truncated {
        len: bytes.len() as u64,
        needed: needed as u64,
    };
    if bytes.len() < MAGIC.len() || bytes[..MAGIC.len()] != MAGIC {
        // A short file that is a prefix of the magic is truncated, not foreign.
        return Err(if MAGIC.starts_with(bytes) {
            truncated(FIXED_HEADER + CHECKSUM)
        } else {
            EntryError::Magic
        });
    }
    let mut r = Reader {
        bytes,
        at: MAGIC.len(),
    };
    let version = u32::from_le_bytes(r.array().ok_or_else(|| truncated(FIXED_HEADER))?);
    if version != ARTIFACT_FORMAT_VERSION {
        return Err(EntryError::Version {
            found: version,
            expected: ARTIFACT_FORMAT_VERSION,
        });
    }
    let key = ModuleKey::from_bytes(r.array().ok_or_else(|| truncated(FIXED_HEADER))?);
    let identity = IdentityDigest::from_bytes(r.array().ok_or_else(|| truncated(FIXED_HEADER))?);
    let payload_len = u64::from_le_bytes(r.array().ok_or_else(|| truncated(FIXED_HEADER))?);
    let dependencies_len = u32::from_le_bytes(r.array().ok_or_else(|| truncated(FIXED_HEADER))?);
    if dependencies_len as usize > MAX_DEPENDENCY_BYTES {
        return Err(EntryError::Dependencies);
    }
    debug_assert_eq!(r.at, KIND_AT);
    let [kind] = r.array::<1>().ok_or_else(|| truncated(FIXED_HEADER))?;
    let kind = EntryKind::from_code(kind).ok_or(EntryError::Kind { found: kind })?;
    let mut lens = [0usize; 4];
    for len in &mut lens {
        *len = u16::from_le_bytes(r.array().ok_or_else(|| truncated(FIXED_HEADER))?) as usize;
    }
    let fields = ["kernel", "backend", "function", "target"];
    let mut names: [String; 4] = Default::default();
    for ((name, len), field) in names.iter_mut().zip(lens).zip(fields) {
        if len > MAX_NAME_BYTES {
            return Err(EntryError::Name { field });
        }
        let raw = r
            .take(len)
            .ok_or_else(|| truncated(FIXED_HEADER + lens.iter().sum::<usize>()))?;
        *name = std::str::from_utf8(raw)
            .map_err(|_| EntryError::Name { field })?
            .to_string();
    }
    let [kernel, backend, function, target] = names;
    Ok((
        Header {
            version,
            key,
            identity,
            payload_len,
            dependencies_len,
            kind,
            kernel,
            backend,
            function,
            target,
        },
        r.at,
    ))
}

/// A bounds-checked cursor.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.at.checked_add(n)?;
        let out = self.bytes.get(self.at..end)?;
        self.at = end;
        Some(out)
    }

    fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.take(N)?.try_into().ok()
    }
}

/// `name` cut to at most [`MAX_NAME_BYTES`] on a character boundary.
fn cut_name(name: &str) -> &str {
    if name.len() <= MAX_NAME_BYTES {
        return name;
    }
    let mut end = MAX_NAME_BYTES;
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    &name[..end]
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn key() -> ModuleKey {
        ModuleKey::derive("cpu", "c++ 13", "f", "void f() {}")
    }

    fn deps() -> Dependencies {
        Dependencies {
            include_dirs: vec!["/opt/include".into(), "rel/inc".into()],
            cwd: Some("/home/u/project".into()),
            files: vec![
                FileDigest {
                    path: "/opt/include/params.h".into(),
                    hash: 0x0123_4567_89ab_cdef_fedc_ba98_7654_3210,
                },
                FileDigest {
                    path: "/home/u/project/d\u{e9}j\u{e0} vu.h".into(),
                    hash: 7,
                },
            ],
            absent: vec!["/home/u/project/params.h".into()],
        }
    }

    fn identity() -> IdentityDigest {
        IdentityDigest::of("cpu", "c++ 13")
    }

    fn contents<'a>(
        kernel: &'a str,
        function: &'a str,
        deps: &'a Dependencies,
        payload: &'a [u8],
    ) -> Contents<'a> {
        Contents {
            kind: EntryKind::Code,
            kernel,
            backend: "cpu",
            function,
            target: "x86-64-v2",
            identity: identity(),
            dependencies: deps,
            payload,
        }
    }

    fn sample() -> Vec<u8> {
        let deps = deps();
        encode(
            &key(),
            &contents(
                "add_offset",
                "custom_kernel_add_offset",
                &deps,
                b"\x7fELF payload",
            ),
        )
        .unwrap()
    }

    #[test]
    fn round_trips() {
        let bytes = sample();
        let e = parse(&bytes).unwrap();
        assert_eq!(e.payload, b"\x7fELF payload");
        assert_eq!(e.header.key, key());
        assert_eq!(e.header.identity, identity());
        assert_eq!(e.header.kernel, "add_offset");
        assert_eq!(e.header.backend, "cpu");
        assert_eq!(e.header.function, "custom_kernel_add_offset");
        assert_eq!(e.header.kind, EntryKind::Code);
        assert_eq!(e.header.target, "x86-64-v2");
        assert_eq!(e.dependencies, deps());
        // The header alone (no dependencies, payload or checksum) is enough
        // for a listing.
        let header_len =
            bytes.len() - CHECKSUM - e.payload.len() - e.header.dependencies_len as usize;
        assert_eq!(parse_header(&bytes[..header_len]).unwrap(), e.header);
        assert!(parse_header(&bytes[..header_len - 1]).is_err());
        // No dependencies at all round-trip too.
        let none = Dependencies::default();
        let bare = encode(&key(), &contents("k", "f", &none, b"x")).unwrap();
        assert_eq!(parse(&bare).unwrap().dependencies, Dependencies::default());
        // What a parsed entry holds encodes to the same bytes.
        assert_eq!(encode(&key(), &e.contents()).unwrap(), bytes);
    }

    #[test]
    fn oversized_dependency_lists_are_refused() {
        let huge = Dependencies {
            absent: vec![PathBuf::from("x".repeat(1 << 20)); 17],
            ..Dependencies::default()
        };
        assert_eq!(
            encode(&key(), &contents("k", "f", &huge, b"")).unwrap_err(),
            EntryError::Dependencies
        );
        let mut b = sample();
        b[52..56].copy_from_slice(&(MAX_DEPENDENCY_BYTES as u32 + 1).to_le_bytes());
        assert_eq!(parse_header(&b).unwrap_err(), EntryError::Dependencies);
    }

    #[test]
    fn every_single_byte_flip_is_detected() {
        let bytes = sample();
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0x01;
            assert!(parse(&b).is_err(), "flip at byte {i} went unnoticed");
        }
    }

    #[test]
    fn every_truncation_is_detected() {
        let bytes = sample();
        for n in 0..bytes.len() {
            assert!(
                matches!(parse(&bytes[..n]), Err(EntryError::Truncated { .. })),
                "truncated to {n}: {:?}",
                parse(&bytes[..n]).map(|e| e.header)
            );
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert_eq!(
            parse(&longer).unwrap_err(),
            EntryError::TrailingBytes { extra: 1 }
        );
    }

    #[test]
    fn magic_and_version_are_checked_before_the_checksum() {
        let mut b = sample();
        b[0] = b'X';
        assert_eq!(parse(&b).unwrap_err(), EntryError::Magic);
        let mut b = sample();
        b[8..12].copy_from_slice(&(ARTIFACT_FORMAT_VERSION + 1).to_le_bytes());
        assert_eq!(
            parse(&b).unwrap_err(),
            EntryError::Version {
                found: ARTIFACT_FORMAT_VERSION + 1,
                expected: ARTIFACT_FORMAT_VERSION
            }
        );
    }

    #[test]
    fn long_names_are_cut_on_a_char_boundary() {
        let long = "é".repeat(MAX_NAME_BYTES); // 2 bytes per char
        let deps = deps();
        let bytes = encode(&key(), &contents(&long, "f", &deps, b"")).unwrap();
        let e = parse(&bytes).unwrap();
        assert_eq!(e.header.kernel.len(), MAX_NAME_BYTES);
        assert!(long.starts_with(&e.header.kernel));
    }

    #[test]
    fn every_kind_and_target_round_trips() {
        let none = Dependencies::default();
        for (kind, target) in [
            (EntryKind::Code, "sm_90a"),
            (EntryKind::Ptx, "compute_90"),
            (EntryKind::TuningRecord, "NVIDIA H200 / driver 12080"),
        ] {
            let c = Contents {
                kind,
                target,
                backend: "cuda",
                ..contents("gemm", "custom_kernel_gemm", &none, b"{\"tile\":64}")
            };
            let bytes = encode(&key(), &c).unwrap();
            let e = parse(&bytes).unwrap();
            assert_eq!((e.header.kind, e.header.target.as_str()), (kind, target));
            assert_eq!(e.header.backend, "cuda");
            assert_eq!(e.payload, b"{\"tile\":64}");
            assert_eq!(EntryKind::parse(kind.as_str()), Some(kind));
            assert_eq!(EntryKind::from_code(kind.code()), Some(kind));
        }
        assert!(EntryKind::Code.is_loadable() && EntryKind::Ptx.is_loadable());
        assert!(!EntryKind::TuningRecord.is_loadable());
    }

    #[test]
    fn an_unknown_kind_is_refused() {
        let mut b = sample();
        b[KIND_AT] = 9;
        assert_eq!(parse_header(&b).unwrap_err(), EntryError::Kind { found: 9 });
    }

    #[test]
    fn huge_declared_lengths_do_not_overflow() {
        let mut b = sample();
        b[44..52].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(matches!(parse(&b), Err(EntryError::Truncated { .. })));
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let _ = parse(&bytes);
            let _ = parse_header(&bytes);
        }

        #[test]
        fn arbitrary_corruptions_of_a_real_entry_never_panic(
            edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8),
            cut in any::<usize>(),
        ) {
            let mut b = sample();
            for (at, v) in edits {
                let n = b.len();
                b[at % n] = v;
            }
            let n = b.len();
            b.truncate(cut % (n + 1));
            let _ = parse(&b);
        }
    }
}
