//! The two caches under the variant memo: the per-device kernel cache of
//! loaded modules (memory) and the artifact store (disk, shared between
//! processes).

pub(crate) mod kernel_cache;
pub mod store;
