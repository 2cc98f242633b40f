//! The artifact store's entry parser (`kernelkit::cache::entry`) and store
//! key parser on arbitrary bytes: they read files that another process, an
//! older version or a failing disk may have written, so any bytes must give
//! an entry or an error, never a panic.
//!
//! Arbitrary bytes rarely carry a valid checksum, so half of the inputs are
//! entries written by `entry::encode` from arbitrary fields (dependency
//! lists among them) and then damaged: an intact entry must parse back to
//! what was written, and any change of one byte or any truncation must be
//! refused.

#![no_main]

use std::path::PathBuf;

use arbitrary::Arbitrary;
use kernelkit::cache::entry::{self, Dependencies, FileDigest};
use kernelkit::cache::key::ModuleKey;
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
enum Damage {
    None,
    /// XOR one byte (position taken modulo the length) with a non-zero mask.
    Flip(u32, u8),
    /// Keep only this many bytes (modulo the length).
    Truncate(u32),
    /// Append bytes.
    Append(Vec<u8>),
}

#[derive(Arbitrary, Debug)]
enum Input<'a> {
    Raw(&'a [u8]),
    Hex(&'a str),
    Encoded {
        key: [u8; 16],
        kernel: &'a str,
        backend: &'a str,
        function: &'a str,
        /// Include directories, files (path and hash) and absent paths.
        dependencies: (Vec<&'a str>, Vec<(&'a str, u128)>, Vec<&'a str>),
        payload: &'a [u8],
        damage: Damage,
    },
}

fuzz_target!(|input: Input<'_>| match input {
    Input::Raw(bytes) => {
        if let Ok(e) = entry::parse(bytes) {
            assert_eq!(e.payload.len() as u64, e.header.payload_len);
        }
        let _ = entry::parse_header(bytes);
    }
    Input::Hex(text) => {
        if let Some(key) = ModuleKey::from_hex(text) {
            assert_eq!(ModuleKey::from_hex(&key.to_string()), Some(key));
        }
    }
    Input::Encoded {
        key,
        kernel,
        backend,
        function,
        dependencies: (dirs, files, absent),
        payload,
        damage,
    } => {
        let key = ModuleKey::from_bytes(key);
        let deps = Dependencies {
            include_dirs: dirs.iter().map(PathBuf::from).collect(),
            cwd: dirs.first().map(PathBuf::from).filter(|p| !p.as_os_str().is_empty()),
            files: files
                .iter()
                .map(|(path, hash)| FileDigest {
                    path: PathBuf::from(path),
                    hash: *hash,
                })
                .collect(),
            absent: absent.iter().map(PathBuf::from).collect(),
        };
        let mut bytes = entry::encode(&key, kernel, backend, function, &deps, payload)
            .expect("a small dependency list encodes");
        let intact = entry::parse(&bytes).expect("an encoded entry parses");
        assert_eq!(intact.header.key, key);
        assert_eq!(intact.dependencies, deps);
        assert_eq!(intact.payload, payload);
        assert!(kernel.starts_with(intact.header.kernel.as_str()));
        assert!(backend.starts_with(intact.header.backend.as_str()));
        assert!(function.starts_with(intact.header.function.as_str()));
        assert_eq!(
            entry::parse_header(&bytes).expect("its header parses"),
            intact.header
        );
        let len = bytes.len();
        let changed = match damage {
            Damage::None => false,
            Damage::Flip(at, mask) => {
                bytes[at as usize % len] ^= mask.max(1);
                true
            }
            Damage::Truncate(keep) => {
                bytes.truncate(keep as usize % len);
                true
            }
            Damage::Append(extra) => {
                bytes.extend_from_slice(&extra);
                !extra.is_empty()
            }
        };
        let result = entry::parse(&bytes);
        assert_eq!(result.is_ok(), !changed, "{result:?}");
        let _ = entry::parse_header(&bytes);
    }
});
