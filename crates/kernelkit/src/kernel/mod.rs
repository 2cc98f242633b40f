//! Kernels: a validated spec plus a variant memo shared by every clone.

pub mod call;
pub mod memo;
pub mod outputs;
#[cfg(not(loom))]
mod recent;
/// Under loom the models check the memo itself: no per-thread cache in
/// front of it.
#[cfg(loom)]
mod recent {
    use super::variant::{PackedKey, Variant};
    use std::sync::Arc;

    pub(crate) fn lookup<F, R>(_: u64, _: u64, _: &[u8], _: &mut Option<F>) -> Option<R> {
        None
    }
    pub(crate) fn lookup_packed<F, R>(
        _: u64,
        _: u64,
        _: PackedKey,
        _: &mut Option<F>,
    ) -> Option<R> {
        None
    }
    pub(crate) fn remember(_: u64, _: u64, _: &[u8], _: &Arc<Variant>) {}
}
pub mod spec;
pub mod template;
pub mod variant;

use std::sync::Arc;

use smallvec::SmallVec;

use crate::codegen::{self, BodyLanguage, Dialect, Generated};
use crate::error::{CallError, Result};
use call::Call;
use memo::VariantMemo;
use spec::KernelSpec;
use variant::{encode_key, KeyBytes, PackedKey, Variant, VariantDesc};

struct KernelShared {
    spec: KernelSpec,
    /// Hash of everything in the spec that feeds the source; with the
    /// variant key it names CPU and CUDA variants uniquely.
    fingerprint: u64,
    memo: VariantMemo,
}

/// A custom kernel: a body written inline, its input and output names, and
/// how it is compiled. Cheap to clone, `Send + Sync`; all clones share one
/// memo of generated variants.
#[derive(Clone)]
pub struct Kernel(Arc<KernelShared>);

impl std::fmt::Debug for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kernel")
            .field("name", &self.0.spec.name)
            .field("inputs", &self.0.spec.input_names)
            .field("outputs", &self.0.spec.output_names)
            .finish_non_exhaustive()
    }
}

/// Builds a [`Kernel`]; see [`Kernel::builder`].
#[derive(Clone, Debug)]
pub struct KernelBuilder {
    name: String,
    inputs: Vec<String>,
    outputs: Vec<String>,
    source: String,
    header: String,
    ensure_row_contiguous: bool,
    atomic_outputs: bool,
    language: BodyLanguage,
}

impl KernelBuilder {
    /// Input names, in call order. Each is a C identifier; the body reads
    /// `NAME[i]` and may use `NAME_shape`, `NAME_strides`, `NAME_ndim`.
    pub fn inputs<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.inputs = names.into_iter().map(Into::into).collect();
        self
    }
    /// Output names, in call order (at least one).
    pub fn outputs<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.outputs = names.into_iter().map(Into::into).collect();
        self
    }
    /// The body of the kernel function.
    pub fn source(mut self, body: impl Into<String>) -> Self {
        self.source = body.into();
        self
    }
    /// Code placed before the function (includes, helpers).
    pub fn header(mut self, header: impl Into<String>) -> Self {
        self.header = header.into();
        self
    }
    /// Copy strided inputs to row-contiguous ones before each call (default
    /// true, as in MLX).
    pub fn ensure_row_contiguous(mut self, yes: bool) -> Self {
        self.ensure_row_contiguous = yes;
        self
    }
    /// Declare outputs atomic (`atomic<T>*`), for `atomic_fetch_add_explicit`
    /// and friends (default false).
    pub fn atomic_outputs(mut self, yes: bool) -> Self {
        self.atomic_outputs = yes;
        self
    }
    /// The language of the body and header (default
    /// [`BodyLanguage::Metal`], as MLX's `metal_kernel`;
    /// [`BodyLanguage::Cuda`] for CUDA C++, as MLX's `cuda_kernel`, which
    /// runs on CUDA devices only).
    pub fn language(mut self, language: BodyLanguage) -> Self {
        self.language = language;
        self
    }
    /// Validates the names and scans the body once.
    pub fn build(self) -> Result<Kernel> {
        let mut spec = KernelSpec::new(
            self.name,
            self.inputs,
            self.outputs,
            self.source,
            self.header,
            self.ensure_row_contiguous,
            self.atomic_outputs,
        )?;
        spec.language = self.language;
        Ok(Kernel::from_spec(spec))
    }
}

impl Kernel {
    /// Starts a kernel named `name` (it appears in every generated function
    /// name and in every error about this kernel).
    pub fn builder(name: impl Into<String>) -> KernelBuilder {
        KernelBuilder {
            name: name.into(),
            inputs: Vec::new(),
            outputs: Vec::new(),
            source: String::new(),
            header: String::new(),
            ensure_row_contiguous: true,
            atomic_outputs: false,
            language: BodyLanguage::Metal,
        }
    }

    /// A kernel from an already validated spec.
    pub fn from_spec(spec: KernelSpec) -> Kernel {
        let fingerprint = fingerprint(&spec);
        Kernel(Arc::new(KernelShared {
            spec,
            fingerprint,
            memo: VariantMemo::default(),
        }))
    }

    /// The validated spec.
    pub fn spec(&self) -> &KernelSpec {
        &self.0.spec
    }

    /// The kernel's name.
    pub fn name(&self) -> &str {
        &self.0.spec.name
    }

    /// Starts a call with these inputs.
    #[inline(always)]
    pub fn call<'a, I>(&'a self, inputs: I) -> Call<'a>
    where
        I: IntoIterator<Item = &'a crate::Array>,
    {
        // Pushed one by one, not collected: `collect` goes through the
        // vector's generic `extend`, a call and more code per call.
        let mut arrays = SmallVec::new();
        for a in inputs {
            arrays.push(a);
        }
        Call::new(self, arrays)
    }

    /// How many variants are memoized now (at most
    /// [`MAX_CACHED_VARIANTS`](memo::MAX_CACHED_VARIANTS)).
    pub fn memoized_variants(&self) -> usize {
        self.0.memo.len()
    }

    /// Forgets every memoized variant. Launches already prepared keep theirs.
    pub fn clear_memo(&self) {
        self.0.memo.clear()
    }

    /// True when both handles share one memo.
    pub fn shares_memo_with(&self, other: &Kernel) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// Generates a variant's name and source without the memo (what every
    /// call cost before the memo; also the inspection path).
    pub fn generate(&self, dialect: Dialect, desc: &VariantDesc<'_>) -> Generated {
        let mut key = KeyBytes::new();
        encode_key(dialect, desc, &mut key);
        codegen::generate(dialect, &self.0.spec, desc, self.variant_id(&key))
    }

    /// The memoized variant for `desc` in `dialect`; on a miss, runs the
    /// once-per-variant `check` and generates it.
    pub(crate) fn variant_checked(
        &self,
        dialect: Dialect,
        desc: &VariantDesc<'_>,
        check: impl FnOnce() -> Result<()>,
    ) -> Result<Arc<Variant>> {
        self.with_variant(dialect, desc, check, |variant| Ok(variant.clone()))
    }

    /// Runs `f` on the memoized variant for `desc` (borrowed from the memo on
    /// a hit, so no reference count moves); on a miss, runs `check`,
    /// generates and memoizes the variant first.
    pub(crate) fn with_variant<R>(
        &self,
        dialect: Dialect,
        desc: &VariantDesc<'_>,
        check: impl FnOnce() -> Result<()>,
        f: impl FnOnce(&Arc<Variant>) -> Result<R>,
    ) -> Result<R> {
        let mut key = KeyBytes::new();
        encode_key(dialect, desc, &mut key);
        self.with_variant_keyed(
            key.as_slice(),
            |key| {
                check()?;
                Ok(self.build_variant(dialect, desc, key))
            },
            f,
        )
    }

    /// [`Kernel::with_variant`] for a key already encoded; `build` makes the
    /// variant on a miss (checks included).
    pub(crate) fn with_variant_keyed<R>(
        &self,
        key: &[u8],
        build: impl FnOnce(&[u8]) -> Result<Variant>,
        f: impl FnOnce(&Arc<Variant>) -> Result<R>,
    ) -> Result<R> {
        self.with_recent(
            |memo, generation, f| recent::lookup(memo, generation, key, f),
            |generation, f| self.with_variant_slow(key, generation, build, f),
            f,
        )
    }

    /// [`Kernel::with_variant_keyed`] for a call whose key has a packed
    /// form: found by it in the per-thread cache, and encoded (by `encode`)
    /// only on a miss there.
    pub(crate) fn with_variant_packed<R>(
        &self,
        packed: PackedKey,
        encode: impl FnOnce(&mut KeyBytes),
        build: impl FnOnce(&[u8]) -> Result<Variant>,
        f: impl FnOnce(&Arc<Variant>) -> Result<R>,
    ) -> Result<R> {
        self.with_recent(
            |memo, generation, f| recent::lookup_packed(memo, generation, packed, f),
            |generation, f| {
                let mut key = KeyBytes::new();
                encode(&mut key);
                self.with_variant_slow(&key, generation, build, f)
            },
            f,
        )
    }

    /// The per-thread cache (`lookup`, given the memo's id and generation),
    /// then, on a miss, the memo (`miss`).
    #[inline(always)]
    fn with_recent<F, R>(
        &self,
        lookup: impl FnOnce(u64, u64, &mut Option<F>) -> Option<Result<R>>,
        miss: impl FnOnce(u64, Option<F>) -> Result<R>,
        f: F,
    ) -> Result<R>
    where
        F: FnOnce(&Arc<Variant>) -> Result<R>,
    {
        let memo = &self.0.memo;
        // Read before the memo, so that what this call finds is tagged with
        // a generation current while it was memoized (see `recent`).
        let generation = memo.generation();
        let mut f = Some(f);
        if let Some(result) = lookup(memo.id(), generation, &mut f) {
            return result;
        }
        miss(generation, f)
    }

    /// The memo's part of [`Kernel::with_variant_keyed`], kept out of line:
    /// a repeated call never runs it, and its code would only crowd the
    /// instruction cache of the path that does run.
    #[inline(never)]
    fn with_variant_slow<R>(
        &self,
        key: &[u8],
        generation: u64,
        build: impl FnOnce(&[u8]) -> Result<Variant>,
        mut f: Option<impl FnOnce(&Arc<Variant>) -> Result<R>>,
    ) -> Result<R> {
        let memo = &self.0.memo;
        let hit = memo.with_hit(key, |variant| {
            recent::remember(memo.id(), generation, key, variant);
            match f.take() {
                Some(f) => f(variant),
                None => unreachable!("the hit runs `f` at most once"),
            }
        });
        if let Some(result) = hit {
            return result;
        }
        let variant = memo.get_or_build(key, || build(key))?;
        recent::remember(memo.id(), generation, key, &variant);
        match f.take() {
            Some(f) => f(&variant),
            None => unreachable!("`f` ran only if the memo hit"),
        }
    }

    /// Generates the variant for `desc`, whose key is `key`.
    pub(crate) fn build_variant(
        &self,
        dialect: Dialect,
        desc: &VariantDesc<'_>,
        key: &[u8],
    ) -> Variant {
        let g = codegen::generate(dialect, &self.0.spec, desc, self.variant_id(key));
        Variant::new(dialect, g.name, g.source)
    }

    /// A variant built without the memo, for benchmarks of the old path.
    pub(crate) fn variant_uncached(
        &self,
        dialect: Dialect,
        desc: &VariantDesc<'_>,
    ) -> Arc<Variant> {
        let g = self.generate(dialect, desc);
        Arc::new(Variant::new(dialect, g.name, g.source))
    }

    fn variant_id(&self, key: &[u8]) -> u64 {
        xxhash_rust::xxh3::xxh3_64_with_seed(key, self.0.fingerprint)
    }

    pub(crate) fn unsupported(&self, backend: &'static str, reason: String) -> CallError {
        CallError::Unsupported {
            kernel: self.0.spec.name.clone(),
            backend,
            reason,
        }
    }
}

fn fingerprint(spec: &KernelSpec) -> u64 {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    for part in [&spec.name, &spec.source, &spec.header] {
        h.update(&(part.len() as u64).to_le_bytes());
        h.update(part.as_bytes());
    }
    for names in [&spec.input_names, &spec.output_names] {
        h.update(&(names.len() as u64).to_le_bytes());
        for n in names {
            h.update(&(n.len() as u64).to_le_bytes());
            h.update(n.as_bytes());
        }
    }
    h.update(&[
        spec.ensure_row_contiguous as u8,
        spec.atomic_outputs as u8,
        spec.language as u8,
    ]);
    h.digest()
}
