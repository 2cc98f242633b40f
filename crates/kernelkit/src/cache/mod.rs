//! The two caches under the variant memo: the per-device kernel cache of
//! loaded modules (memory) and the artifact store (disk, shared between
//! processes), with the store's key, file format and settings.

pub mod config;
pub mod entry;
pub(crate) mod kernel_cache;
pub mod key;
mod lock;
pub mod store;
mod tally;
mod trust;
