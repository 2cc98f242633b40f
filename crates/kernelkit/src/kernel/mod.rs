//! Kernels: a validated spec plus a variant cache shared by every clone,
//! and the calls made on them.
//!
//! It holds [`Kernel`] and its builder, [`variant::Variant`] (one kernel
//! specialised for one call signature, with its generated source and the
//! function it resolved), the variant cache ([`variants`]: key, memo,
//! per-thread recent variants), calls ([`call`]) and compiles ahead of
//! time, in parallel and in the background ([`precompile`]). **What this floor may
//! import:** everything below it (`device`, `array`, `cache`, `backend`,
//! `codegen`, the base); the top floor (spec files, interop) builds on it.

pub mod call;
pub mod jit;
pub mod precompile;
pub mod record;
pub mod tune;
pub mod variant;
pub mod variants;

use std::sync::{Arc, OnceLock};

use smallvec::SmallVec;

use crate::cache::CacheState;
use crate::codegen::math::MathMode;
use crate::codegen::parts::{SharedText, Source};
use crate::codegen::spec::KernelSpec;
use crate::codegen::variant::VariantDesc;
use crate::codegen::{self, BodyLanguage, Dialect, Generated};
use crate::config::MemoConfig;
use crate::device::Device;
use crate::error::{CallError, Result};
use call::Call;
use variant::Variant;
use variants::key::{encode_key, KeyBytes};
use variants::{VariantCache, VariantKey};

struct KernelShared {
    spec: KernelSpec,
    /// Hash of everything in the spec that feeds the source; with the
    /// variant key it names CPU and CUDA variants uniquely.
    fingerprint: u64,
    /// Whether the body or header names a 16-bit float type (searched once:
    /// with the variant's dtypes, it picks the shared part's class).
    small_float_text: bool,
    /// The text the variants share, per dialect and class (see
    /// `codegen::parts`), built by the first variant that needs it.
    shared: [OnceLock<Arc<SharedText>>; 6],
    variants: VariantCache,
    /// The benchmarks' baseline: every variant generated and hashed whole
    /// and kept whole, in the seed's memo.
    #[cfg(feature = "bench")]
    seed: bool,
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
    math_mode: MathMode,
    check_bounds: Option<bool>,
    memo: Option<MemoConfig>,
    #[cfg(feature = "bench")]
    seed: bool,
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
    /// The floating-point math mode (default [`MathMode::Safe`], as MLX):
    /// MLX's `compile_options={"math_mode": ...}`. Kernels that differ
    /// only in it are different kernels, with different sources and cache
    /// entries.
    pub fn math_mode(mut self, mode: MathMode) -> Self {
        self.math_mode = mode;
        self
    }
    /// Bounds checks (default: the environment's `KERNELKIT_CHECK_BOUNDS`,
    /// else off). On, the body sees checked views of its array arguments,
    /// the outputs kernelkit allocates get guard regions, and a call whose
    /// kernel reads or writes outside an argument fails with
    /// [`CallError::OutOfBounds`] naming the
    /// argument, the index and the thread (see `docs/bounds-checks.md`).
    /// A debugging mode: every call waits for its launch. Checked and
    /// unchecked kernels are different kernels, with their own sources and
    /// cache entries.
    pub fn check_bounds(mut self, yes: bool) -> Self {
        self.check_bounds = Some(yes);
        self
    }
    /// Bounds of this kernel's variant memo (default
    /// [`MemoConfig::process`]: the environment's `KERNELKIT_MEMO_BYTES`
    /// and `KERNELKIT_MEMO_ENTRIES`, else 4 MiB and 4,096 variants).
    pub fn memo(mut self, memo: MemoConfig) -> Self {
        self.memo = Some(memo);
        self
    }

    /// The seed's variant memo (64 variants, cleared whole when full;
    /// every variant generated, hashed and kept whole): the benchmarks'
    /// baseline. Not part of the stable API.
    #[cfg(feature = "bench")]
    #[doc(hidden)]
    pub fn seed_memo(mut self) -> Self {
        self.seed = true;
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
        spec.math_mode = self.math_mode;
        spec.check_bounds = self
            .check_bounds
            .unwrap_or_else(crate::config::Config::process_check_bounds);
        let memo = self.memo.unwrap_or_else(MemoConfig::process);
        #[cfg(feature = "bench")]
        if self.seed {
            return Ok(Kernel::new(spec, VariantCache::seed(), true));
        }
        Ok(Kernel::from_spec_with(spec, memo))
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
            math_mode: MathMode::Safe,
            check_bounds: None,
            memo: None,
            #[cfg(feature = "bench")]
            seed: false,
        }
    }

    /// A kernel from an already validated spec, its memo within
    /// [`MemoConfig::process`].
    pub fn from_spec(spec: KernelSpec) -> Kernel {
        Kernel::from_spec_with(spec, MemoConfig::process())
    }

    /// A kernel from an already validated spec, its memo within `memo`.
    pub fn from_spec_with(spec: KernelSpec, memo: MemoConfig) -> Kernel {
        Kernel::new(spec, VariantCache::new(memo), false)
    }

    fn new(spec: KernelSpec, variants: VariantCache, _seed: bool) -> Kernel {
        Kernel(Arc::new(KernelShared {
            fingerprint: fingerprint(&spec),
            small_float_text: codegen::small_float_text(&spec),
            spec,
            shared: Default::default(),
            variants,
            #[cfg(feature = "bench")]
            seed: _seed,
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

    /// How many variants are memoized now (at most the memo's
    /// [`MemoConfig::max_entries`]).
    pub fn memoized_variants(&self) -> usize {
        self.0.variants.len()
    }

    /// Bytes the memo holds now: the text this kernel's variants share
    /// (once per dialect and class) and each memoized variant's own part.
    /// An estimate of heap bytes, kept within [`MemoConfig::max_bytes`]
    /// (but for the newest variant, always kept).
    pub fn memo_bytes(&self) -> usize {
        self.0.variants.bytes()
    }

    /// How many variants this kernel has generated: one per miss of its
    /// memo (a variant evicted and asked for again counts again; two
    /// threads that race to build one count twice). With the calls made,
    /// the memo's hit rate.
    pub fn variants_built(&self) -> u64 {
        self.0.variants.built()
    }

    /// The bounds of this kernel's memo.
    pub fn memo_config(&self) -> MemoConfig {
        self.0.variants.limits()
    }

    /// Forgets every memoized variant. Launches already prepared keep theirs.
    pub fn clear_memo(&self) {
        self.0.variants.clear()
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

    /// The memoized variant that `desc` describes on `device`, built (not
    /// compiled) if no call made it yet: a variant named without arrays,
    /// to compile ahead of time ([`Precompile::variant`](crate::Precompile))
    /// or to ask where it is compiled ([`Kernel::cache_state`]). A call
    /// with inputs of these dtypes and pass modes, these output dtypes and
    /// template arguments runs this very variant.
    pub fn variant_on(&self, device: &Device, desc: &VariantDesc<'_>) -> Result<Arc<Variant>> {
        let spec = self.spec();
        if desc.inputs.len() != spec.input_names.len() {
            return Err(CallError::InputCount {
                kernel: spec.name.clone(),
                expected: spec.input_names.len(),
                got: desc.inputs.len(),
                names: KernelSpec::list(&spec.input_names),
            }
            .into());
        }
        if desc.outputs.len() != spec.output_names.len() {
            return Err(CallError::OutputCount {
                kernel: spec.name.clone(),
                expected: spec.output_names.len(),
                got: desc.outputs.len(),
                names: KernelSpec::list(&spec.output_names),
            }
            .into());
        }
        let (dialect, backend) = (device.dialect(), device.backend().name());
        let mut key = KeyBytes::new();
        encode_key(dialect, desc, &mut key);
        let found = self.variants().get(VariantKey::Bytes(&key), |key| {
            call::check::check_variant(self, dialect, backend, desc)?;
            Ok(self.build_variant(dialect, desc, key))
        })?;
        Ok(found.into_arc())
    }

    /// Where the variant `desc` describes is compiled on `device` already
    /// (loaded in memory, kept in the artifact store), without compiling
    /// or loading it.
    pub fn cache_state(&self, device: &Device, desc: &VariantDesc<'_>) -> Result<CacheState> {
        let variant = self.variant_on(device, desc)?;
        Ok(device.cache_state(variant.name(), variant.source_hash128()))
    }

    /// The hash of the spec's source-shaping parts: with a call's
    /// signature, it names a tuning key across processes.
    #[inline]
    pub(crate) fn fingerprint(&self) -> u64 {
        self.0.fingerprint
    }

    /// The kernel's variant cache (key → variant), shared by its clones.
    #[inline]
    pub(crate) fn variants(&self) -> &VariantCache {
        &self.0.variants
    }

    /// Generates the variant for `desc`, whose key is `key`: its own part
    /// of the source, hashed from the kernel's shared part (built once).
    pub(crate) fn build_variant(
        &self,
        dialect: Dialect,
        desc: &VariantDesc<'_>,
        key: &[u8],
    ) -> Variant {
        let id = self.variant_id(key);
        #[cfg(feature = "bench")]
        if self.0.seed {
            let g = codegen::generate(dialect, &self.0.spec, desc, id);
            let v = Variant::new(dialect, g.name, g.source);
            // Kept whole, as the seed kept it.
            let _ = v.shared_source();
            return v;
        }
        let small = dialect != Dialect::Metal
            && (self.0.small_float_text || codegen::small_float_dtypes(desc));
        let shared = self.shared_text(dialect, small);
        let own = codegen::variant(dialect, &self.0.spec, shared, desc, id);
        Variant::from_parts(
            dialect,
            own.name,
            Source::new(shared.clone(), own.before, own.after),
        )
    }

    /// The text every variant of this kernel in `dialect` and class `small`
    /// shares, built (and charged to the memo) by the first that asks.
    fn shared_text(&self, dialect: Dialect, small: bool) -> &Arc<SharedText> {
        self.0.shared[dialect as usize * 2 + small as usize].get_or_init(|| {
            let text = Arc::new(codegen::shared(dialect, &self.0.spec, small));
            self.0.variants.charge_shared(text.heap_bytes());
            text
        })
    }

    /// A variant built without the memo, for benchmarks of the old path.
    #[cfg(feature = "bench")]
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
    // Safe kernels hash as they did before the mode existed.
    if spec.math_mode != MathMode::Safe {
        h.update(&[b'm', spec.math_mode as u8]);
    }
    // Unchecked kernels hash as they did before the mode existed.
    if spec.check_bounds {
        h.update(b"b");
    }
    h.digest()
}
