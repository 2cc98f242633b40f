//! Store keys: the name of an artifact in the store.
//!
//! A key is a 128-bit xxh3 hash over everything that changes the compiled
//! binary and is known before compiling: kernelkit's artifact format
//! version, the backend, the backend's artifact identity (compiler identity
//! and version, flags, target architecture or CPU features), the generated
//! function name and the full generated source, headers included — the
//! source through its 128-bit xxh3 hash, which a variant computes from its
//! kernel's hashed prefix without building the text (see
//! `codegen::parts`), so a key costs a hash of a few dozen bytes. It is
//! never computed over compiler output, so a process can find an artifact
//! without compiling. What a header `#include`s is not known before the
//! compile; each entry carries that list, checked on load (see
//! [`crate::cache::entry`]).
//!
//! The module key of the kernel cache (`{name}_{hash}_{options}`) is not
//! used: its 64-bit source hash and short option hashes are fine for one
//! process's memory, but a store shared by every process of a machine over
//! months needs a key whose collisions can be ignored.

use std::fmt;

use xxhash_rust::xxh3::{xxh3_128, Xxh3};

/// Version of the artifact file format and of the key derivation. Bump it
/// whenever either changes: old entries then stop matching any key and age
/// out of the store by least-recent use. Version 2 added the dependency
/// list, version 3 the compiler identity digest (see
/// [`crate::cache::entry`]), version 4 derives the key from the source's
/// hash instead of its text ([`ModuleKey::derive_hashed`]), version 5
/// adds each entry's kind and target (code, PTX or tuning record; `sm_90a`,
/// `compute_90`, `x86-64-v2`).
pub const ARTIFACT_FORMAT_VERSION: u32 = 5;

/// The 128-bit content key of one artifact.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ModuleKey([u8; 16]);

impl ModuleKey {
    /// The key of the artifact a backend builds from `source`.
    ///
    /// Each field is written with its length first, so no two different
    /// field lists hash the same bytes.
    pub fn derive(backend: &str, identity: &str, function: &str, source: &str) -> ModuleKey {
        ModuleKey::derive_hashed(backend, identity, function, xxh3_128(source.as_bytes()))
    }

    /// [`ModuleKey::derive`] from the xxh3-128 hash of the source, which
    /// the caller has (a variant computes it from its kernel's hashed
    /// prefix and its own part): the same key, with no pass over the text.
    pub fn derive_hashed(
        backend: &str,
        identity: &str,
        function: &str,
        source_hash: u128,
    ) -> ModuleKey {
        let mut h = Xxh3::new();
        h.update(b"kernelkit artifact\0");
        h.update(&ARTIFACT_FORMAT_VERSION.to_le_bytes());
        for field in [backend, identity, function] {
            h.update(&(field.len() as u64).to_le_bytes());
            h.update(field.as_bytes());
        }
        h.update(&source_hash.to_le_bytes());
        ModuleKey(h.digest128().to_le_bytes())
    }

    /// A key from its raw bytes.
    pub fn from_bytes(bytes: [u8; 16]) -> ModuleKey {
        ModuleKey(bytes)
    }

    /// The raw bytes.
    pub fn as_bytes(&self) -> &[u8; 16] {
        &self.0
    }

    /// Parses exactly 32 lowercase hex digits (the form entry file names use);
    /// anything else is `None`, so a file name that is not a key is never
    /// mistaken for an entry.
    pub fn from_hex(hex: &str) -> Option<ModuleKey> {
        let digits = hex.as_bytes();
        if digits.len() != 32 {
            return None;
        }
        let nibble = |c: u8| match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            _ => None,
        };
        let mut out = [0u8; 16];
        for (i, byte) in out.iter_mut().enumerate() {
            *byte = nibble(digits[2 * i])? << 4 | nibble(digits[2 * i + 1])?;
        }
        Some(ModuleKey(out))
    }
}

/// A 128-bit digest of one backend's artifact identity: the compiler, its
/// version, its flags and the target (the `identity` that
/// [`ModuleKey::derive`] hashes into every key).
///
/// Written into each entry so that an entry moved without its source (in
/// a bundle) can be checked against the compiler of the machine that
/// receives it: an entry whose digest is not one of this machine's
/// backends' was built by another compiler, for another target, and is
/// never loaded here. The digest holds no path of its own making: the
/// identity is the compiler's `--version`, flags and CPU features (CPU)
/// or NVRTC's version, target and options (CUDA).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct IdentityDigest([u8; 16]);

impl IdentityDigest {
    /// The digest of `backend`'s artifact identity `identity`.
    pub fn of(backend: &str, identity: &str) -> IdentityDigest {
        let mut h = Xxh3::new();
        h.update(b"kernelkit identity\0");
        for field in [backend, identity] {
            h.update(&(field.len() as u64).to_le_bytes());
            h.update(field.as_bytes());
        }
        IdentityDigest(h.digest128().to_le_bytes())
    }

    /// A digest from its raw bytes.
    pub fn from_bytes(bytes: [u8; 16]) -> IdentityDigest {
        IdentityDigest(bytes)
    }

    /// The raw bytes.
    pub fn as_bytes(&self) -> &[u8; 16] {
        &self.0
    }
}

/// 32 lowercase hex digits.
impl fmt::Display for IdentityDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in &self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for IdentityDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "IdentityDigest({self})")
    }
}

/// 32 lowercase hex digits.
impl fmt::Display for ModuleKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in &self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for ModuleKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ModuleKey({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trips_and_rejects_other_names() {
        let key = ModuleKey::derive("cpu", "g++ 13", "f", "src");
        let hex = key.to_string();
        assert_eq!(hex.len(), 32);
        assert_eq!(ModuleKey::from_hex(&hex), Some(key));
        assert_eq!(ModuleKey::from_hex(&hex.to_uppercase()), None);
        assert_eq!(ModuleKey::from_hex(&hex[1..]), None);
        assert_eq!(ModuleKey::from_hex("../../etc/passwd"), None);
        assert_eq!(ModuleKey::from_hex(&format!("{}g", &hex[1..])), None);
    }

    /// Keys name files that live across kernelkit versions: a change to the
    /// derivation must come with a new `ARTIFACT_FORMAT_VERSION`, which is
    /// what this pinned value is there to remind of.
    #[test]
    fn derivation_is_stable() {
        let key = ModuleKey::derive("cpu", "g++ 13", "f", "src");
        assert_eq!(key.to_string(), "a499b42d288a20d72aeef949952eb702");
    }

    #[test]
    fn every_field_changes_the_key() {
        let base = ModuleKey::derive("cpu", "g++ 13", "f", "src");
        assert_ne!(base, ModuleKey::derive("cuda", "g++ 13", "f", "src"));
        assert_ne!(base, ModuleKey::derive("cpu", "g++ 14", "f", "src"));
        assert_ne!(base, ModuleKey::derive("cpu", "g++ 13", "g", "src"));
        assert_ne!(base, ModuleKey::derive("cpu", "g++ 13", "f", "src "));
        // Lengths are part of the hash: moving a byte between fields matters.
        assert_ne!(
            ModuleKey::derive("cpu", "ab", "c", "s"),
            ModuleKey::derive("cpu", "a", "bc", "s")
        );
        assert_eq!(base, ModuleKey::derive("cpu", "g++ 13", "f", "src"));
        assert_eq!(
            base,
            ModuleKey::derive_hashed("cpu", "g++ 13", "f", xxh3_128(b"src"))
        );
    }
}
