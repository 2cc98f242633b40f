//! Arbitrary bytes through the artifact store's entry parser: it reads files
//! that another process (or a disk error) may have written, so any bytes
//! must give an entry or an error, never a panic.
//!
//! Builds only with `--features store`, against
//! `kernelkit::cache::store::parse_entry(&[u8]) -> Result<_, _>`.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let _ = kernelkit::cache::store::parse_entry(bytes);
});
