//! The secrets that sign and verify the fleet tier's entries.
//!
//! A Redis server is shared by every node of a fleet, and whatever it holds
//! would be loaded as code; so every entry is written with a signature, an
//! HMAC-SHA-256 over the module key and the entry's bytes, and nothing
//! whose signature does not verify is used. The secret is the whole
//! content of a file (at least [`MIN_SECRET_BYTES`] bytes, any bytes) that
//! belongs to the current user and that no one else may read (the same
//! ownership rules as the disk store's, plus no read bits for others).
//!
//! For a rotation, several files: the first signs, every one verifies.
//! Each secret is named in the signature by its *key id*, a short hash of
//! the secret (8 bytes of SHA-256), so a reader picks the right secret at
//! once and a signature by an unknown secret is told apart from a forged
//! one.
//!
//! The signature value: `KKSIG1`, the key id (8 bytes), the MAC (32 bytes).

use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

use crate::cache::key::ModuleKey;
use crate::cache::trust;

type HmacSha256 = Hmac<Sha256>;

/// The shortest secret accepted (256 bits).
pub const MIN_SECRET_BYTES: usize = 32;
/// The longest secret file read (a secret is a few dozen bytes; a huge file
/// is a mistake).
const MAX_SECRET_BYTES: u64 = 1 << 16;
/// The first bytes of every signature value.
const SIG_MAGIC: &[u8; 6] = b"KKSIG1";
/// Bytes of a key id.
const ID_BYTES: usize = 8;
/// Bytes of a signature value.
pub(crate) const SIG_BYTES: usize = SIG_MAGIC.len() + ID_BYTES + 32;
/// What the MAC covers before the key and the entry (so that a MAC made
/// for anything else never verifies here).
const DOMAIN: &[u8] = b"kernelkit fleet entry v1\0";

/// A short hash of a secret that names it in signatures and messages.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeyId([u8; ID_BYTES]);

impl KeyId {
    /// The id a signature value names (`None`: not a signature value).
    pub fn from_signature(sig: &[u8]) -> Option<KeyId> {
        if sig.len() != SIG_BYTES || !sig.starts_with(SIG_MAGIC) {
            return None;
        }
        let mut id = [0u8; ID_BYTES];
        id.copy_from_slice(&sig[SIG_MAGIC.len()..SIG_MAGIC.len() + ID_BYTES]);
        Some(KeyId(id))
    }
}

impl fmt::Display for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "KeyId({self})")
    }
}

/// One secret (never printed: its `Debug` shows the id only).
struct Secret {
    id: KeyId,
    bytes: Vec<u8>,
}

/// The secrets of a fleet: the first signs, all verify.
pub struct Keyring {
    secrets: Vec<Secret>,
}

impl fmt::Debug for Keyring {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.secrets.iter().map(|s| s.id))
            .finish()
    }
}

/// Why a key file cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// No key file was named.
    #[error("no key file (set KERNELKIT_REMOTE_KEY_FILE): an unsigned shared cache of code is not offered")]
    None,
    /// The file could not be read.
    #[error("key file {path}: {source}")]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// The system's error.
        source: std::io::Error,
    },
    /// The file belongs to another user, or others may read or write it.
    #[error("key file {path} is refused: {reason}")]
    Untrusted {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The secret is too short (or the file too large to be one).
    #[error("key file {path}: {len} bytes; a secret is {MIN_SECRET_BYTES} to 65536 bytes")]
    Size {
        /// The file.
        path: PathBuf,
        /// Its length.
        len: u64,
    },
}

/// What a signature says about an entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Signed by one of the keyring's secrets, over these bytes and key.
    Good,
    /// There is no signature, or it is not a signature value.
    Unsigned,
    /// Signed by a secret this keyring does not hold.
    UnknownKey(KeyId),
    /// Signed, by a known secret, over other bytes (or forged).
    BadSignature(KeyId),
}

impl Keyring {
    /// Reads every file (the first is the signing secret). Fails on the
    /// first file that cannot be used.
    pub fn load(files: &[PathBuf]) -> Result<Keyring, KeyError> {
        if files.is_empty() {
            return Err(KeyError::None);
        }
        let secrets = files
            .iter()
            .map(|p| read_secret(p))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Keyring::from_secrets(secrets))
    }

    /// A keyring of secrets given directly (tools and tests); each must be
    /// at least [`MIN_SECRET_BYTES`] long.
    pub fn from_bytes(secrets: &[&[u8]]) -> Option<Keyring> {
        if secrets.is_empty() || secrets.iter().any(|s| s.len() < MIN_SECRET_BYTES) {
            return None;
        }
        Some(Keyring::from_secrets(
            secrets.iter().map(|s| s.to_vec()).collect(),
        ))
    }

    fn from_secrets(secrets: Vec<Vec<u8>>) -> Keyring {
        Keyring {
            secrets: secrets
                .into_iter()
                .map(|bytes| Secret {
                    id: key_id(&bytes),
                    bytes,
                })
                .collect(),
        }
    }

    /// The id of the signing secret.
    pub fn signing_id(&self) -> KeyId {
        self.secrets[0].id
    }

    /// The ids of every secret, the signing one first.
    pub fn ids(&self) -> Vec<KeyId> {
        self.secrets.iter().map(|s| s.id).collect()
    }

    /// The signature value of `entry` stored under `key`.
    pub fn sign(&self, key: &ModuleKey, entry: &[u8]) -> Vec<u8> {
        let signer = &self.secrets[0];
        let mut out = Vec::with_capacity(SIG_BYTES);
        out.extend_from_slice(SIG_MAGIC);
        out.extend_from_slice(&signer.id.0);
        out.extend_from_slice(&mac(&signer.bytes, key, entry).finalize().into_bytes());
        out
    }

    /// Checks `signature` against `entry` stored under `key` (in constant
    /// time for the MAC).
    pub fn verify(&self, key: &ModuleKey, entry: &[u8], signature: Option<&[u8]>) -> Verdict {
        let Some((sig, id)) = signature.and_then(|s| Some((s, KeyId::from_signature(s)?))) else {
            return Verdict::Unsigned;
        };
        let tag = &sig[SIG_MAGIC.len() + ID_BYTES..];
        let Some(secret) = self.secrets.iter().find(|s| s.id == id) else {
            return Verdict::UnknownKey(id);
        };
        match mac(&secret.bytes, key, entry).verify_slice(tag) {
            Ok(()) => Verdict::Good,
            Err(_) => Verdict::BadSignature(id),
        }
    }
}

/// The MAC state over the domain, the key and the entry.
fn mac(secret: &[u8], key: &ModuleKey, entry: &[u8]) -> HmacSha256 {
    // HMAC takes keys of any length.
    let mut m = <HmacSha256 as Mac>::new_from_slice(secret).unwrap_or_else(|_| unreachable!());
    m.update(DOMAIN);
    m.update(key.as_bytes());
    m.update(entry);
    m
}

/// The id of a secret: the first bytes of SHA-256 over a label and it.
fn key_id(secret: &[u8]) -> KeyId {
    let mut h = Sha256::new();
    h.update(b"kernelkit key id\0");
    h.update(secret);
    let digest = h.finalize();
    let mut id = [0u8; ID_BYTES];
    id.copy_from_slice(&digest[..ID_BYTES]);
    KeyId(id)
}

/// Reads one secret file, with its checks.
fn read_secret(path: &Path) -> Result<Vec<u8>, KeyError> {
    let unreadable = |source| KeyError::Unreadable {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::open(path).map_err(unreadable)?;
    let meta = file.metadata().map_err(unreadable)?;
    trust::check_secret_file(&meta).map_err(|reason| KeyError::Untrusted {
        path: path.to_path_buf(),
        reason,
    })?;
    let len = meta.len();
    if len < MIN_SECRET_BYTES as u64 || len > MAX_SECRET_BYTES {
        return Err(KeyError::Size {
            path: path.to_path_buf(),
            len,
        });
    }
    let mut bytes = Vec::with_capacity(len as usize);
    file.take(MAX_SECRET_BYTES)
        .read_to_end(&mut bytes)
        .map_err(unreadable)?;
    if bytes.len() < MIN_SECRET_BYTES {
        return Err(KeyError::Size {
            path: path.to_path_buf(),
            len: bytes.len() as u64,
        });
    }
    Ok(bytes)
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn key() -> ModuleKey {
        ModuleKey::derive("cpu", "c++", "f", "void f() {}")
    }

    fn write_key(dir: &Path, name: &str, bytes: &[u8], mode: u32) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        p
    }

    #[test]
    fn a_signature_verifies_only_for_its_key_and_bytes() {
        let ring = Keyring::from_bytes(&[&[1u8; 32]]).unwrap();
        let sig = ring.sign(&key(), b"entry");
        assert_eq!(sig.len(), SIG_BYTES);
        assert_eq!(ring.verify(&key(), b"entry", Some(&sig)), Verdict::Good);
        let id = ring.signing_id();
        assert_eq!(
            ring.verify(&key(), b"entrz", Some(&sig)),
            Verdict::BadSignature(id)
        );
        let other = ModuleKey::derive("cpu", "c++", "g", "void g() {}");
        assert_eq!(
            ring.verify(&other, b"entry", Some(&sig)),
            Verdict::BadSignature(id)
        );
        assert_eq!(ring.verify(&key(), b"entry", None), Verdict::Unsigned);
        assert_eq!(
            ring.verify(&key(), b"entry", Some(&sig[..10])),
            Verdict::Unsigned
        );
        for i in 0..sig.len() {
            let mut bad = sig.clone();
            bad[i] ^= 1;
            assert_ne!(ring.verify(&key(), b"entry", Some(&bad)), Verdict::Good);
        }
    }

    #[test]
    fn a_rotation_signs_with_the_first_and_verifies_with_all() {
        let old = Keyring::from_bytes(&[&[1u8; 32]]).unwrap();
        let new = Keyring::from_bytes(&[&[2u8; 40]]).unwrap();
        let both = Keyring::from_bytes(&[&[2u8; 40], &[1u8; 32]]).unwrap();
        let by_old = old.sign(&key(), b"e");
        let by_both = both.sign(&key(), b"e");
        assert_eq!(both.verify(&key(), b"e", Some(&by_old)), Verdict::Good);
        assert_eq!(new.verify(&key(), b"e", Some(&by_both)), Verdict::Good);
        assert_eq!(
            old.verify(&key(), b"e", Some(&by_both)),
            Verdict::UnknownKey(new.signing_id())
        );
        assert_eq!(both.ids(), vec![new.signing_id(), old.signing_id()]);
        assert_ne!(new.signing_id(), old.signing_id());
    }

    #[test]
    fn key_files_are_checked() {
        let dir = tempfile::tempdir().unwrap();
        let good = write_key(dir.path(), "good", &[9u8; 32], 0o600);
        let ring = Keyring::load(std::slice::from_ref(&good)).unwrap();
        assert_eq!(
            ring.signing_id(),
            Keyring::from_bytes(&[&[9u8; 32]]).unwrap().signing_id()
        );
        let short = write_key(dir.path(), "short", &[9u8; 31], 0o600);
        assert!(matches!(
            Keyring::load(&[short]),
            Err(KeyError::Size { len: 31, .. })
        ));
        let open = write_key(dir.path(), "open", &[9u8; 32], 0o644);
        assert!(matches!(
            Keyring::load(&[good.clone(), open]),
            Err(KeyError::Untrusted { .. })
        ));
        assert!(matches!(
            Keyring::load(&[dir.path().join("absent")]),
            Err(KeyError::Unreadable { .. })
        ));
        assert!(matches!(Keyring::load(&[]), Err(KeyError::None)));
        assert!(Keyring::from_bytes(&[&[0u8; 31]]).is_none());
        assert!(!format!("{ring:?}").contains("0909"), "no secret in Debug");
    }
}
