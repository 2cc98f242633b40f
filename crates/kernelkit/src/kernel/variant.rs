//! Variants: one kernel specialised for one call's dtypes, pass modes and
//! template arguments, with its generated name and source.

use std::sync::{Arc, OnceLock};

use crate::backend::{CompileJob, Function};
use crate::codegen::Dialect;
use crate::device::Device;
use crate::device::DeviceId;
use crate::error::CompileError;

/// One kernel specialised for one call signature.
///
/// Built once per key (the memo), then shared by every launch through an
/// `Arc`: a launch prepared before its memo entry was cleared still owns its
/// source and runs.
pub struct Variant {
    pub(crate) dialect: Dialect,
    pub(crate) name: Arc<str>,
    pub(crate) source: Arc<str>,
    pub(crate) source_hash: u64,
    /// The function for the first device this variant ran on, so that a hit
    /// on that device takes no lock at all. Other devices go through their
    /// kernel cache.
    pub(crate) function: OnceLock<(DeviceId, Function)>,
}

impl std::fmt::Debug for Variant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Variant")
            .field("dialect", &self.dialect)
            .field("name", &self.name)
            .field("source_hash", &format_args!("{:016x}", self.source_hash))
            .finish_non_exhaustive()
    }
}

impl Variant {
    pub(crate) fn new(dialect: Dialect, name: String, source: String) -> Variant {
        let source_hash = xxhash_rust::xxh3::xxh3_64(source.as_bytes());
        Variant {
            dialect,
            name: name.into(),
            source: source.into(),
            source_hash,
            function: OnceLock::new(),
        }
    }

    /// The generated function name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The generated source.
    pub fn source(&self) -> &str {
        &self.source
    }
    /// The source, shared: it lives as long as any launch holds it.
    pub fn shared_source(&self) -> &Arc<str> {
        &self.source
    }
    /// The hash of the source (xxh3-64), computed once: the hash in the
    /// library key MLX formats for a variant. kernelkit's own caches key
    /// modules by the 128-bit [`ModuleKey`](crate::cache::key::ModuleKey).
    pub fn source_hash(&self) -> u64 {
        self.source_hash
    }
    /// The dialect the source is written in.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }
    /// What a backend compiles of this variant, for kernel `kernel`.
    pub(crate) fn job<'a>(&'a self, kernel: &'a str) -> CompileJob<'a> {
        CompileJob {
            kernel,
            function: &self.name,
            source: &self.source,
            shared_source: &self.source,
        }
    }

    /// This variant's function on `device`, for kernel `kernel`: the one it
    /// kept for its first device (no lock), or the device's, resolved once
    /// and kept if it is the first.
    #[inline]
    pub(crate) fn function_on<'v>(
        &'v self,
        device: &Device,
        kernel: &'v str,
    ) -> Result<std::borrow::Cow<'v, Function>, CompileError> {
        let f = device.function(|| self.job(kernel), self.function.get())?;
        if let std::borrow::Cow::Owned(f) = &f {
            let _ = self.function.set((device.id(), f.clone()));
        }
        Ok(f)
    }
}
