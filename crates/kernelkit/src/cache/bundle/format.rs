//! The bundle file: store entries, one after another, signed whole.
//!
//! ```text
//! offset  size  field
//!      0     8  magic  b"KKBUNDLE"
//!      8     4  bundle format version (u32 LE, BUNDLE_FORMAT_VERSION)
//!     12    32  the signer's Ed25519 public key
//!     44     4  entry count (u32 LE)
//!     48     2  producer length (u16 LE, at most MAX_PRODUCER_BYTES)
//!     50     …  producer: who made the bundle, printable ASCII
//!               (`kernelkit 0.1.0; nvrtc 12.8`): which NVRTC made its
//!               PTX, so a node's operator can check its driver takes it
//!      …     …  per entry: its length (u64 LE), then the entry in the
//!               store's file format (`cache::entry`, self-checking)
//!      …    64  Ed25519 signature over SIGNING_CONTEXT followed by every
//!               byte before the signature
//! ```
//!
//! [`decode`] checks, in this order, before it looks at any entry: the
//! magic, the version, that the signer is trusted, and the signature. Only
//! a bundle that passes all four is parsed, and a parse error anywhere
//! refuses it whole. An import (`super::import`) runs the signature's
//! check (a hash of the whole bundle) on a thread of its own while it
//! parses the entries ([`decode_unverified`], the parse `cache inspect`
//! uses) and stages their files, and publishes nothing before the check
//! passed; a bad signature is the error even where the parse failed too.
//! The bundle names no files: each entry's place in a store follows from
//! its key alone.
//!
//! Version 1 had no producer, and its entries no kind or target.

use crate::cache::entry::{self, Entry};
use crate::cache::key::ModuleKey;

use super::keys::{PublicKey, SecretKey, TrustedKeys};
use super::BundleError;

/// The first eight bytes of every bundle.
pub const MAGIC: [u8; 8] = *b"KKBUNDLE";
/// Version of the bundle layout (the entries carry their own).
pub const BUNDLE_FORMAT_VERSION: u32 = 2;
/// The longest producer note a bundle carries.
pub const MAX_PRODUCER_BYTES: usize = 512;
/// What the signature covers besides the bundle's bytes: a signature made
/// for anything else (another file format, another version) never passes.
const SIGNING_CONTEXT: &[u8] = b"kernelkit bundle signature v1\0";

/// Bytes before the producer note.
const HEADER: usize = 50;
const SIGNATURE: usize = 64;

/// The signed bytes' message: the context, then `body`.
fn message(body: &[u8]) -> Vec<u8> {
    let mut m = Vec::with_capacity(SIGNING_CONTEXT.len() + body.len());
    m.extend_from_slice(SIGNING_CONTEXT);
    m.extend_from_slice(body);
    m
}

/// `producer` made printable ASCII (anything else becomes `?`) and cut to
/// [`MAX_PRODUCER_BYTES`].
pub(super) fn clean_producer(producer: &str) -> String {
    producer
        .chars()
        .map(|c| {
            if c == ' ' || c.is_ascii_graphic() {
                c
            } else {
                '?'
            }
        })
        .take(MAX_PRODUCER_BYTES)
        .collect()
}

/// A bundle of `entries` (each in the store's file format) made by
/// `producer` (see the module documentation), signed by `key`.
pub(super) fn encode(entries: &[Vec<u8>], producer: &str, key: &SecretKey) -> Vec<u8> {
    let producer = clean_producer(producer);
    let len =
        HEADER + producer.len() + entries.iter().map(|e| 8 + e.len()).sum::<usize>() + SIGNATURE;
    let mut out = Vec::with_capacity(len);
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&BUNDLE_FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(key.public().as_bytes());
    // `export` caps the count at u32::MAX.
    out.extend_from_slice(&(entries.len() as u32).to_le_bytes());
    // `clean_producer` keeps it within MAX_PRODUCER_BYTES.
    out.extend_from_slice(&(producer.len() as u16).to_le_bytes());
    out.extend_from_slice(producer.as_bytes());
    for e in entries {
        out.extend_from_slice(&(e.len() as u64).to_le_bytes());
        out.extend_from_slice(e);
    }
    let signature = key.sign(&message(&out));
    out.extend_from_slice(&signature);
    out
}

/// The signer of a bundle whose signature is checked, and its entries.
pub(super) struct Decoded<'a> {
    pub(super) signer: PublicKey,
    pub(super) producer: String,
    pub(super) entries: Vec<Entry<'a>>,
}

/// A bundle that passed the cheap checks (magic, version, a trusted
/// signer, a signature present), its signature not yet checked.
pub(super) struct Signed<'a> {
    pub(super) signer: PublicKey,
    body: &'a [u8],
    signature: [u8; SIGNATURE],
}

impl Signed<'_> {
    /// Whether the signature is the signer's over the body: a hash of the
    /// whole bundle, most of a check's time.
    pub(super) fn verify(&self) -> bool {
        self.signer.verify(&message(self.body), &self.signature)
    }
}

/// The checks of [`decode`] before the signature's (see the module
/// documentation).
pub(super) fn signed<'a>(
    bytes: &'a [u8],
    trusted: &TrustedKeys,
) -> Result<Signed<'a>, BundleError> {
    if trusted.is_empty() {
        return Err(BundleError::NoTrustedKeys);
    }
    if bytes.len() < MAGIC.len() || bytes[..MAGIC.len()] != MAGIC {
        return Err(if MAGIC.starts_with(bytes) {
            BundleError::Truncated
        } else {
            BundleError::NotABundle
        });
    }
    if bytes.len() < HEADER + SIGNATURE {
        return Err(BundleError::Truncated);
    }
    let version = u32::from_le_bytes(bytes[8..12].try_into().unwrap_or_default());
    if version != BUNDLE_FORMAT_VERSION {
        return Err(BundleError::Version {
            found: version,
            expected: BUNDLE_FORMAT_VERSION,
        });
    }
    let mut signer = [0u8; 32];
    signer.copy_from_slice(&bytes[12..44]);
    let signer = PublicKey(signer);
    let (body, sig) = bytes.split_at(bytes.len() - SIGNATURE);
    let mut signature = [0u8; SIGNATURE];
    signature.copy_from_slice(sig);
    if signature == [0; SIGNATURE] {
        return Err(BundleError::Unsigned);
    }
    if !trusted.contains(&signer) {
        return Err(BundleError::UntrustedSigner { signer });
    }
    Ok(Signed {
        signer,
        body,
        signature,
    })
}

/// Checks and parses a bundle (see the module documentation).
pub(super) fn decode<'a>(
    bytes: &'a [u8],
    trusted: &TrustedKeys,
) -> Result<Decoded<'a>, BundleError> {
    let signed = signed(bytes, trusted)?;
    if !signed.verify() {
        return Err(BundleError::BadSignature {
            signer: signed.signer,
        });
    }
    let (producer, entries) = parse_entries(signed.body)?;
    Ok(Decoded {
        signer: signed.signer,
        producer,
        entries,
    })
}

/// The signer named, the producer and the entries of a bundle, without
/// checking the signature: for listing what a bundle holds
/// (`kernelkit cache inspect`), never for importing.
pub(super) fn decode_unverified(bytes: &[u8]) -> Result<Decoded<'_>, BundleError> {
    if bytes.len() < MAGIC.len() || bytes[..MAGIC.len()] != MAGIC {
        return Err(BundleError::NotABundle);
    }
    if bytes.len() < HEADER + SIGNATURE {
        return Err(BundleError::Truncated);
    }
    let version = u32::from_le_bytes(bytes[8..12].try_into().unwrap_or_default());
    if version != BUNDLE_FORMAT_VERSION {
        return Err(BundleError::Version {
            found: version,
            expected: BUNDLE_FORMAT_VERSION,
        });
    }
    let mut signer = [0u8; 32];
    signer.copy_from_slice(&bytes[12..44]);
    let (producer, entries) = parse_entries(&bytes[..bytes.len() - SIGNATURE])?;
    Ok(Decoded {
        signer: PublicKey(signer),
        producer,
        entries,
    })
}

/// The entries of a body whose signature passed. A trusted signer's
/// kernelkit never writes a body that fails here; it is refused whole all
/// the same.
fn parse_entries(body: &[u8]) -> Result<(String, Vec<Entry<'_>>), BundleError> {
    let malformed = |index: usize, reason: String| BundleError::Malformed { index, reason };
    let count = u32::from_le_bytes(body[44..48].try_into().unwrap_or_default()) as usize;
    let producer_len = u16::from_le_bytes(body[48..50].try_into().unwrap_or_default()) as usize;
    let producer = body
        .get(HEADER..HEADER + producer_len)
        .filter(|p| p.len() <= MAX_PRODUCER_BYTES)
        .and_then(|p| std::str::from_utf8(p).ok())
        .filter(|p| clean_producer(p) == *p)
        .ok_or_else(|| malformed(0, "the producer note is malformed".into()))?
        .to_string();
    let mut at = HEADER + producer_len;
    // Each entry takes at least its 8-byte length.
    if count > (body.len() - at) / 8 {
        return Err(malformed(0, format!("{count} entries cannot fit")));
    }
    let mut entries: Vec<Entry<'_>> = Vec::with_capacity(count);
    let mut seen: Vec<ModuleKey> = Vec::with_capacity(count);
    for index in 0..count {
        let len = body
            .get(at..at + 8)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap_or_default()))
            .ok_or_else(|| malformed(index, "the body ends before the entry".into()))?;
        at += 8;
        let end = usize::try_from(len)
            .ok()
            .and_then(|len| at.checked_add(len))
            .filter(|&end| end <= body.len())
            .ok_or_else(|| malformed(index, format!("{len} bytes do not fit in the body")))?;
        let entry = entry::parse(&body[at..end]).map_err(|e| malformed(index, e.to_string()))?;
        check_names(&entry).map_err(|reason| malformed(index, reason))?;
        if seen.contains(&entry.header.key) {
            return Err(malformed(
                index,
                format!("key {} appears twice", entry.header.key),
            ));
        }
        seen.push(entry.header.key);
        entries.push(entry);
        at = end;
    }
    if at != body.len() {
        return Err(malformed(
            count,
            format!("{} bytes after the last entry", body.len() - at),
        ));
    }
    Ok((producer, entries))
}

/// The names kernelkit writes: identifiers for the kernel and the
/// function, a backend's name. Anything else (a path, `..`, a NUL) did not
/// come from a compile, and the bundle is refused.
fn check_names(entry: &Entry<'_>) -> Result<(), String> {
    let h = &entry.header;
    for (what, name) in [("kernel", &h.kernel), ("function", &h.function)] {
        if !is_identifier(name) {
            return Err(format!(
                "its {what} name {:?} is not an identifier",
                name.chars().take(64).collect::<String>()
            ));
        }
    }
    if !matches!(h.backend.as_str(), "cpu" | "cuda" | "metal") {
        return Err(format!(
            "its backend {:?} is not one kernelkit has",
            h.backend.chars().take(64).collect::<String>()
        ));
    }
    // A compiled artifact's target is an architecture's name; a tuning
    // record's names a device model and driver (words, no control bytes).
    let target_ok = if h.kind.is_loadable() {
        !h.target.is_empty()
            && h.target
                .chars()
                .all(|c| c == '_' || c == '-' || c == '.' || c.is_ascii_alphanumeric())
    } else {
        h.target.chars().all(|c| !c.is_control())
    };
    if !target_ok {
        return Err(format!(
            "its target {:?} is not one kernelkit writes",
            h.target.chars().take(64).collect::<String>()
        ));
    }
    Ok(())
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}
