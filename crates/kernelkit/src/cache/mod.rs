//! The module resolver under the variant cache: memory → artifact tiers →
//! compile (`resolver`), with the one 128-bit module key ([`key`]), the
//! in-memory module cache with single flight (`kernel_cache`), the tier
//! seam (`tier`) and its implementations: the disk store ([`store`] and
//! its file format [`entry`]; its settings are
//! [`crate::config::CacheConfig`]) and the fleet tier on Redis ([`remote`],
//! which stores the same entries, signed); and the signed bundles that
//! carry store entries from one machine to others ([`bundle`]).
//!
//! Beside them: `loaded` (loaded modules, and where callers keep the
//! functions resolved from them), `artifact_pool` (artifacts shared by the
//! process-wide devices: compiled once per architecture, loaded once per
//! device), `lock` (the file lock that lets one process compile a key
//! while the others wait), `tally` (the store's lifetime counters) and
//! `trust` (whether a store directory or entry file may be trusted).
//!
//! **What this floor may import:** `backend` (to compile and load) and the
//! floors below it; nothing from `device`, `array` or `kernel`.

pub(crate) mod artifact_pool;
pub mod bundle;
pub mod entry;
pub(crate) mod kernel_cache;
pub mod key;
pub(crate) mod loaded;
mod lock;
pub mod remote;
pub(crate) mod resolver;
pub use resolver::CacheState;
pub mod store;
mod tally;
pub(crate) mod tier;
mod trust;
pub mod tuning;
