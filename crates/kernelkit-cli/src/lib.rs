//! The file formats of the `kernelkit` command, apart from its commands:
//! spec files ([`spec`]), input data written in JSON ([`data`]), `.npy`
//! files ([`npy`]) and outputs printed as JSON ([`output`]).
//!
//! They are a library of their own so that the fuzz targets in `fuzz/`
//! drive the very readers `kernelkit run` uses. Everything here reads
//! untrusted text and bytes, so its contract is the command's: a reader
//! returns a typed error (one line, naming the field or the input) for
//! any input and never panics, recurses without bound, or allocates from
//! a size it has not checked against the data in hand.

pub mod data;
pub mod npy;
pub mod output;
pub mod spec;
