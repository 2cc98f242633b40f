//! Ed25519 keys for bundles: the build machine's private key, the public
//! keys the nodes trust, and their text files.
//!
//! The cryptography is `ed25519-dalek`'s; this module only names keys and
//! reads and writes them:
//!
//! - a private key file holds one line, `kernelkit-ed25519-secret <64 hex
//!   digits>` (the 32-byte seed), and is written with mode `0600`;
//! - a public key is one line, `kernelkit-ed25519 <64 hex digits>
//!   [comment]`; a trusted keys file (`KERNELKIT_TRUSTED_KEYS`) holds any
//!   number of them, with blank lines and `#` comments.
//!
//! A node holds only public keys: it can check a bundle, never make one
//! that another node would accept.

use std::fmt;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};

/// The word before a public key's hex digits.
pub const PUBLIC_TAG: &str = "kernelkit-ed25519";
/// The word before a private key's hex digits.
pub const SECRET_TAG: &str = "kernelkit-ed25519-secret";

/// A key file that cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// The file could not be read or written.
    #[error("key file {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The system's error.
        source: io::Error,
    },
    /// A line is not a key of the expected kind.
    #[error("key file {path}, line {line}: {reason}")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// The line (from 1).
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// The private key file may be read by others.
    #[error(
        "private key file {path} may be read by group or others (mode {mode:o}); chmod 600 it"
    )]
    Exposed {
        /// The file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// The system's random source failed (keygen).
    #[error("no random bytes for a new key: {0}")]
    Random(String),
}

/// A public key that signed or may sign bundles.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct PublicKey(pub(super) [u8; 32]);

impl PublicKey {
    /// The key's 32 bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// The key's line in a public key or trusted keys file (without a
    /// comment).
    pub fn to_line(&self) -> String {
        format!("{PUBLIC_TAG} {}", hex(&self.0))
    }

    /// Parses one public key line (`kernelkit-ed25519 HEX [comment]`).
    pub fn from_line(line: &str) -> Result<PublicKey, String> {
        let mut words = line.split_whitespace();
        if words.next() != Some(PUBLIC_TAG) {
            return Err(format!("a public key line starts with `{PUBLIC_TAG}`"));
        }
        let digits = words.next().ok_or("no key after the tag")?;
        let bytes = unhex::<32>(digits).ok_or("the key is not 64 hex digits")?;
        // A point that is not on the curve can verify nothing: refuse it
        // when the file is read, not when a bundle is.
        VerifyingKey::from_bytes(&bytes).map_err(|_| "not an Ed25519 public key")?;
        Ok(PublicKey(bytes))
    }

    /// Checks `signature` over `message` with this key (strict: no
    /// malleable or small-order forms). Another user of these keys (a
    /// fleet tier that signs entries) must sign messages that start with
    /// a context of its own, as bundles do, so that a signature made for
    /// one use never passes for another.
    pub fn verify(&self, message: &[u8], signature: &[u8; 64]) -> bool {
        let Ok(key) = VerifyingKey::from_bytes(&self.0) else {
            return false;
        };
        key.verify_strict(message, &Signature::from_bytes(signature))
            .is_ok()
    }
}

/// The first 16 hex digits: enough to tell keys apart in messages.
impl fmt::Display for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", &hex(&self.0)[..16])
    }
}

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PublicKey({})", hex(&self.0))
    }
}

/// The build machine's private key. Its bytes are wiped when it is
/// dropped (`ed25519-dalek`'s `zeroize`) and never printed.
pub struct SecretKey(SigningKey);

impl fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SecretKey(public {})", self.public())
    }
}

impl SecretKey {
    /// A new key from the operating system's random source.
    pub fn generate() -> Result<SecretKey, KeyError> {
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed).map_err(|e| KeyError::Random(e.to_string()))?;
        let key = SecretKey(SigningKey::from_bytes(&seed));
        seed.fill(0);
        Ok(key)
    }

    /// The key whose 32-byte seed is `seed` (for tests and tools that
    /// keep keys elsewhere).
    pub fn from_seed(seed: [u8; 32]) -> SecretKey {
        SecretKey(SigningKey::from_bytes(&seed))
    }

    /// The matching public key.
    pub fn public(&self) -> PublicKey {
        PublicKey(self.0.verifying_key().to_bytes())
    }

    /// Signs `message` (see [`PublicKey::verify`] for the context a
    /// message must start with).
    pub fn sign(&self, message: &[u8]) -> [u8; 64] {
        self.0.sign(message).to_bytes()
    }

    /// Reads a private key file; refuses one that group or others may read.
    pub fn read(path: &Path) -> Result<SecretKey, KeyError> {
        let io = |source| KeyError::Io {
            path: path.to_path_buf(),
            source,
        };
        let meta = std::fs::metadata(path).map_err(io)?;
        if let Some(mode) = crate::cache::trust::exposed_mode(&meta) {
            return Err(KeyError::Exposed {
                path: path.to_path_buf(),
                mode,
            });
        }
        let text = std::fs::read_to_string(path).map_err(io)?;
        let malformed = |line: usize, reason: &str| KeyError::Malformed {
            path: path.to_path_buf(),
            line,
            reason: reason.to_string(),
        };
        let (n, line) = text
            .lines()
            .enumerate()
            .find(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
            .ok_or_else(|| malformed(1, "the file holds no key"))?;
        let mut words = line.split_whitespace();
        if words.next() != Some(SECRET_TAG) {
            return Err(malformed(
                n + 1,
                &format!("a private key line starts with `{SECRET_TAG}`"),
            ));
        }
        let seed = words
            .next()
            .and_then(unhex::<32>)
            .ok_or_else(|| malformed(n + 1, "the key is not 64 hex digits"))?;
        Ok(SecretKey::from_seed(seed))
    }

    /// Writes the private key to `path` (created with mode `0600`; an
    /// existing file is not replaced) and the public key to `public_path`.
    pub fn write(&self, path: &Path, public_path: &Path, comment: &str) -> Result<(), KeyError> {
        let io = |p: &Path| {
            let p = p.to_path_buf();
            move |source| KeyError::Io { path: p, source }
        };
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let mut file = options.open(path).map_err(io(path))?;
        let line = format!("{SECRET_TAG} {}\n", hex(self.0.as_bytes()));
        file.write_all(line.as_bytes())
            .and_then(|_| file.sync_all())
            .map_err(io(path))?;
        let public = format!("{} {}\n", self.public().to_line(), comment.trim());
        std::fs::write(public_path, public).map_err(io(public_path))
    }
}

/// The public keys a node accepts bundles from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TrustedKeys(Vec<PublicKey>);

impl TrustedKeys {
    /// Trusts exactly `keys`.
    pub fn new(keys: impl IntoIterator<Item = PublicKey>) -> TrustedKeys {
        TrustedKeys(keys.into_iter().collect())
    }

    /// Reads a trusted keys file: one public key a line; blank lines and
    /// lines starting with `#` are skipped; any other line that is not a
    /// key is an error (a typo must not silently trust nothing, or less).
    pub fn read(path: &Path) -> Result<TrustedKeys, KeyError> {
        let text = std::fs::read_to_string(path).map_err(|source| KeyError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let mut keys = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let t = line.trim();
            if t.is_empty() || t.starts_with('#') {
                continue;
            }
            let key = PublicKey::from_line(t).map_err(|reason| KeyError::Malformed {
                path: path.to_path_buf(),
                line: n + 1,
                reason,
            })?;
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
        Ok(TrustedKeys(keys))
    }

    /// Whether `key` is trusted.
    pub fn contains(&self, key: &PublicKey) -> bool {
        self.0.contains(key)
    }

    /// How many keys are trusted.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether no key is trusted (then no bundle is imported).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Exactly `2 * N` hex digits (either case).
fn unhex<const N: usize>(text: &str) -> Option<[u8; N]> {
    let digits = text.as_bytes();
    if digits.len() != 2 * N {
        return None;
    }
    let nibble = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let mut out = [0u8; N];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = nibble(digits[2 * i])? << 4 | nibble(digits[2 * i + 1])?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_through_their_files() {
        let dir = tempfile::tempdir().unwrap();
        let key = SecretKey::from_seed([7; 32]);
        let (secret, public) = (dir.path().join("k"), dir.path().join("k.pub"));
        key.write(&secret, &public, "build machine").unwrap();
        let back = SecretKey::read(&secret).unwrap();
        assert_eq!(back.public(), key.public());
        let trusted = TrustedKeys::read(&public).unwrap();
        assert!(trusted.contains(&key.public()));
        assert_eq!(trusted.len(), 1);
        // An existing key is never replaced.
        assert!(key.write(&secret, &public, "").is_err());
        // Signatures verify with the public key only.
        let sig = key.sign(b"message");
        assert!(key.public().verify(b"message", &sig));
        assert!(!key.public().verify(b"messagf", &sig));
        assert!(!SecretKey::from_seed([8; 32])
            .public()
            .verify(b"message", &sig));
    }

    #[test]
    #[cfg(unix)]
    fn a_private_key_others_may_read_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("k");
        SecretKey::from_seed([1; 32])
            .write(&secret, &dir.path().join("k.pub"), "")
            .unwrap();
        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(matches!(
            SecretKey::read(&secret),
            Err(KeyError::Exposed { mode: 0o644, .. })
        ));
    }

    #[test]
    fn trusted_key_files_refuse_anything_but_keys() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trusted");
        let a = SecretKey::from_seed([1; 32]).public();
        let b = SecretKey::from_seed([2; 32]).public();
        std::fs::write(
            &path,
            format!("# fleet keys\n\n{} ci\n  {}\n", a.to_line(), b.to_line()),
        )
        .unwrap();
        let keys = TrustedKeys::read(&path).unwrap();
        assert!(keys.contains(&a) && keys.contains(&b));
        for bad in [
            "ssh-ed25519 AAAA",
            "kernelkit-ed25519 1234",
            "kernelkit-ed25519-secret 0101010101010101010101010101010101010101010101010101010101010101",
        ] {
            std::fs::write(&path, format!("{}\n{bad}\n", a.to_line())).unwrap();
            assert!(
                matches!(TrustedKeys::read(&path), Err(KeyError::Malformed { line: 2, .. })),
                "{bad}"
            );
        }
    }
}
