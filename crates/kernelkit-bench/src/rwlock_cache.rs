//! The baseline of the contention figure: MLX's kernel cache scheme.
//!
//! MLX keeps one `std::shared_mutex`-guarded map per device from the
//! library key `{kernel name}_{source hash}_{options}`, a string formatted
//! on every call, to the compiled library. A hit takes the shared lock; a
//! miss takes the exclusive lock and compiles while holding it, so every
//! other caller, hit or miss, waits for that compile.
//!
//! Here the same scheme sits in front of a kernelkit launch: the call is
//! prepared (the variant memo, as MLX has since the seed), its key is
//! formatted, the map is read under the shared lock, and the launch runs. On
//! a miss the launch runs under the exclusive lock, which compiles the
//! kernel, and the variant is recorded. Compared with kernelkit's own call,
//! the baseline adds exactly MLX's per-call work: the formatted key, the
//! shared lock and the string-keyed lookup.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};

use kernelkit::{Call, Outputs, Variant};

use super::BenchError;

/// See the module documentation.
pub(crate) struct RwLockCache {
    map: RwLock<HashMap<String, Arc<Variant>>>,
    options: String,
}

impl RwLockCache {
    /// An empty cache; `options` plays the compile-options part of the key.
    pub(crate) fn new(options: String) -> RwLockCache {
        RwLockCache {
            map: RwLock::new(HashMap::new()),
            options,
        }
    }

    /// MLX's library key of a variant: `{name}_{source hash}_{options}`,
    /// formatted on every call as MLX does.
    fn key(&self, variant: &Variant) -> String {
        format!(
            "{}_{:x}_{}",
            variant.name(),
            variant.source_hash(),
            self.options
        )
    }

    /// Prepares and runs `call` through the cache.
    pub(crate) fn launch(&self, call: Call<'_>) -> Result<Outputs, BenchError> {
        let launch = call.prepare()?;
        let key = self.key(launch.variant());
        let hit = self
            .map
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&key)
            .cloned();
        if hit.is_none() {
            let mut map = self.map.write().unwrap_or_else(PoisonError::into_inner);
            if let Entry::Vacant(slot) = map.entry(key) {
                // Compiles (through kernelkit) with the exclusive lock held,
                // as MLX does.
                let out = launch.run()?;
                slot.insert(launch.variant().clone());
                return Ok(out);
            }
        }
        Ok(launch.run()?)
    }

    /// The lookup alone, as MLX makes it on a hit: the variant (memoized),
    /// the formatted key and the shared lock; no launch. The call's kernel
    /// must be in the cache already.
    pub(crate) fn lookup(
        &self,
        call: Call<'_>,
        device: &kernelkit::Device,
    ) -> Result<(), BenchError> {
        let variant = call.variant_on(device)?;
        let key = self.key(&variant);
        let map = self.map.read().unwrap_or_else(PoisonError::into_inner);
        std::hint::black_box(map.get(&key));
        Ok(())
    }

    /// Number of kernels the cache holds.
    pub(crate) fn len(&self) -> usize {
        self.map
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}
