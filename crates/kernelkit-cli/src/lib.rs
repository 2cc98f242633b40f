//! The outputs of `kernelkit run` printed as JSON ([`output`]).
//!
//! A library of its own so that the `spec_data` fuzz target in `fuzz/`
//! drives the very printer `kernelkit run` uses, beside the spec file
//! readers it drives in the library (`kernelkit::spec_file`). The printer
//! writes untrusted data, so its contract is the command's: it never
//! panics, recurses without bound, or writes more than
//! [`output::text_bound`] says.

pub mod output;
