//! Calls and launches.
//!
//! A [`Call`] collects one call's arguments and borrows them; `prepare`
//! checks them, finds the variant in the memo and returns a [`Launch`] that
//! owns everything it needs (its variant included, through an `Arc`), so it
//! can run later, on any thread, even after the memo dropped the variant.
//!
//! Checks that depend only on the variant key (template names, dtypes the
//! backend lacks, bodies the backend cannot run) run when the variant is
//! built, not on every call: a memo hit proves they passed.

use std::borrow::Cow;
use std::sync::Arc;

use smallvec::SmallVec;

use crate::array::{checked_count, Array, Place};
use crate::codegen::{attributes::ATTRIBUTES, BodyLanguage, Dialect, Generated};
use crate::device::{Device, Stream};
use crate::dtype::DType;
use crate::error::{shown, CallError, Result};
use crate::kernel::outputs::Outputs;
use crate::kernel::spec::{check_identifier, KernelSpec};
use crate::kernel::template::{TemplateArg, TemplateParam};
use crate::kernel::variant::{
    encode_key_parts, pack_key, InputDesc, KeyBytes, PassMode, Variant, VariantDesc,
};
use crate::kernel::Kernel;

/// Why a backend cannot run a body in its language, if it cannot: a CUDA
/// C++ body runs on CUDA only; a Metal body on the CPU cannot use CUDA C++;
/// neither portable backend has Metal's textures and the like.
fn language_refusal(spec: &KernelSpec, dialect: Dialect, backend: &str) -> Option<String> {
    match (spec.language, dialect) {
        (BodyLanguage::Cuda, Dialect::Cuda) => None,
        (BodyLanguage::Cuda, _) => Some(format!(
            "the body is CUDA C++ (language `cuda`, MLX's `cuda_kernel`), which only a CUDA \
             device runs; the {backend} backend runs Metal bodies"
        )),
        (_, Dialect::Metal) => None,
        (_, d) => {
            if let Some((word, what)) = spec.unsupported {
                return Some(format!(
                    "the body uses `{word}` ({what}), which the {backend} backend does not support"
                ));
            }
            match spec.cuda_word {
                Some(word) if d == Dialect::Cpu => Some(format!(
                    "the body uses `{word}`, which is CUDA C++: it runs on a CUDA device only \
                     (a Metal body runs everywhere)"
                )),
                _ => None,
            }
        }
    }
}

/// An output's shape, as given (checked before any use), and dtype.
pub(crate) type OutputSpec = (SmallVec<[i64; 4]>, DType);

/// Per input descriptors and per output dtypes of one call.
type Descs = (SmallVec<[InputDesc; 8]>, SmallVec<[DType; 4]>);

/// One call's arguments, borrowed. Build it with [`Kernel::call`].
#[must_use = "a call does nothing until `launch()` or `prepare()`"]
pub struct Call<'a> {
    kernel: &'a Kernel,
    inputs: SmallVec<[&'a Array; 8]>,
    outputs: SmallVec<[OutputSpec; 2]>,
    template: SmallVec<[TemplateParam<'a>; 4]>,
    grid: Option<[u64; 3]>,
    threadgroup: Option<[u64; 3]>,
    init_value: Option<f64>,
    stream: Option<&'a Stream>,
    shared_mem_bytes: u32,
    verbose: bool,
}

impl<'a> Call<'a> {
    #[inline(always)]
    pub(crate) fn new(kernel: &'a Kernel, inputs: SmallVec<[&'a Array; 8]>) -> Call<'a> {
        Call {
            kernel,
            inputs,
            outputs: SmallVec::new(),
            template: SmallVec::new(),
            grid: None,
            threadgroup: None,
            init_value: None,
            stream: None,
            shared_mem_bytes: 0,
            verbose: false,
        }
    }

    /// Adds an output of this shape and dtype (one per output name, in order).
    #[inline(always)]
    pub fn output(mut self, shape: impl IntoIterator<Item = i64>, dtype: DType) -> Self {
        let mut extents = SmallVec::new();
        for d in shape {
            extents.push(d);
        }
        self.outputs.push((extents, dtype));
        self
    }

    /// Adds a template argument: an `i32`, a `bool` or a [`DType`].
    #[inline(always)]
    pub fn template(
        mut self,
        name: impl Into<Cow<'a, str>>,
        value: impl Into<TemplateArg>,
    ) -> Self {
        self.template.push(TemplateParam {
            name: name.into(),
            value: value.into(),
        });
        self
    }

    /// The grid, counted in threads (as in MLX and Metal's `dispatchThreads`).
    #[inline(always)]
    pub fn grid(mut self, grid: [u64; 3]) -> Self {
        self.grid = Some(grid);
        self
    }

    /// Threads per threadgroup (CUDA: per block). Clamped to the grid.
    /// Default: `[256, 1, 1]`, clamped.
    #[inline(always)]
    pub fn threadgroup(mut self, threadgroup: [u64; 3]) -> Self {
        self.threadgroup = Some(threadgroup);
        self
    }

    /// Fills every output with this value before the kernel runs.
    #[inline(always)]
    pub fn init_value(mut self, value: f64) -> Self {
        self.init_value = Some(value);
        self
    }

    /// The stream to run on (default: the default stream of the first
    /// input's device, or of the default device).
    #[inline(always)]
    pub fn on(mut self, stream: &'a Stream) -> Self {
        self.stream = Some(stream);
        self
    }

    /// Bytes of dynamic shared memory per threadgroup (CUDA). Part of each
    /// launch, not a once-only setting.
    #[inline(always)]
    pub fn shared_memory(mut self, bytes: u32) -> Self {
        self.shared_mem_bytes = bytes;
        self
    }

    /// Logs the generated name and source (through `tracing`, at INFO) when
    /// the call is prepared: the counterpart of MLX's `verbose=True`.
    #[inline(always)]
    pub fn verbose(mut self, yes: bool) -> Self {
        self.verbose = yes;
        self
    }

    fn spec(&self) -> &KernelSpec {
        self.kernel.spec()
    }

    fn err_kernel(&self) -> String {
        self.spec().name.clone()
    }

    /// The argument counts against the spec's names.
    #[inline]
    fn check_counts(&self) -> Result<()> {
        let spec = self.spec();
        if self.inputs.len() == spec.input_names.len()
            && self.outputs.len() == spec.output_names.len()
        {
            return Ok(());
        }
        self.count_error()
    }

    #[cold]
    #[inline(never)]
    fn count_error(&self) -> Result<()> {
        let spec = self.spec();
        if self.inputs.len() != spec.input_names.len() {
            return Err(CallError::InputCount {
                kernel: self.err_kernel(),
                expected: spec.input_names.len(),
                got: self.inputs.len(),
                names: KernelSpec::list(&spec.input_names),
            }
            .into());
        }
        if self.outputs.len() != spec.output_names.len() {
            return Err(CallError::OutputCount {
                kernel: self.err_kernel(),
                expected: spec.output_names.len(),
                got: self.outputs.len(),
                names: KernelSpec::list(&spec.output_names),
            }
            .into());
        }
        Ok(())
    }

    /// This call's input descriptors, in order.
    #[inline]
    fn input_descs(&self) -> impl ExactSizeIterator<Item = InputDesc> + '_ {
        self.inputs.iter().map(|a| InputDesc {
            dtype: a.dtype,
            mode: PassMode::of(a.ndim(), a.size()),
        })
    }

    /// Input and output descriptors, after the device-independent checks.
    fn descs(&self) -> Result<Descs> {
        self.check_counts()?;
        let inputs = self.input_descs().collect();
        let outputs = self.outputs.iter().map(|(_, d)| *d).collect();
        Ok((inputs, outputs))
    }

    /// Checks that run once per variant (see the module docs).
    fn check_variant(
        &self,
        dialect: Dialect,
        backend: &'static str,
        desc: &VariantDesc<'_>,
    ) -> Result<()> {
        let spec = self.spec();
        for (i, t) in desc.template.iter().enumerate() {
            let reject = |reason: String| CallError::TemplateName {
                kernel: spec.name.clone(),
                name: shown(&t.name),
                reason,
            };
            if let Err(e) = check_identifier(&spec.name, &t.name, "template") {
                let reason = match e {
                    crate::error::BuildError::InvalidName { reason, .. } => reason.to_string(),
                    other => other.to_string(),
                };
                return Err(reject(format!("is not usable: {reason}")).into());
            }
            if let Some(n) = spec.input_names.iter().find(|n| **n == t.name) {
                return Err(reject(format!("has the name of input `{n}`")).into());
            }
            if let Some(n) = spec.output_names.iter().find(|n| **n == t.name) {
                return Err(reject(format!("has the name of output `{n}`")).into());
            }
            if desc.template[..i].iter().any(|o| o.name == t.name) {
                return Err(reject("is given twice".into()).into());
            }
            if let Some(inp) = spec.input_names.iter().find(|n| {
                ["_shape", "_strides", "_ndim"]
                    .iter()
                    .any(|s| t.name.strip_prefix(n.as_str()) == Some(*s))
            }) {
                return Err(reject(format!(
                    "collides with a generated layout parameter of input `{inp}`"
                ))
                .into());
            }
            if ATTRIBUTES.iter().any(|a| a.name == t.name) {
                return Err(reject("is a position attribute name".into()).into());
            }
        }
        let lacks = |dtype: DType| dialect == Dialect::Metal && dtype == DType::F64;
        let named = |role: &str, names: &[String], i: usize| format!("{role} `{}`", names[i]);
        for (i, d) in desc.inputs.iter().enumerate() {
            if lacks(d.dtype) {
                return Err(CallError::UnsupportedDType {
                    kernel: spec.name.clone(),
                    arg: named("input", &spec.input_names, i),
                    dtype: d.dtype,
                    backend,
                }
                .into());
            }
        }
        for (i, d) in desc.outputs.iter().enumerate() {
            if lacks(*d) {
                return Err(CallError::UnsupportedDType {
                    kernel: spec.name.clone(),
                    arg: named("output", &spec.output_names, i),
                    dtype: *d,
                    backend,
                }
                .into());
            }
        }
        if let Some(reason) = language_refusal(spec, dialect, backend) {
            return Err(self.kernel.unsupported(backend, reason).into());
        }
        Ok(())
    }

    /// The generated (name, source) of this call in any dialect, without a
    /// device and without the memo: MLX's `verbose=True`, on demand.
    pub fn generate(&self, dialect: Dialect) -> Result<Generated> {
        let (inputs, outputs) = self.descs()?;
        let desc = VariantDesc {
            inputs: &inputs,
            outputs: &outputs,
            template: &self.template,
        };
        self.check_variant(dialect, dialect.name(), &desc)?;
        Ok(self.kernel.generate(dialect, &desc))
    }

    /// `f` on this call's descriptors, once the per-variant checks pass:
    /// what a variant is built from.
    fn with_checked_desc<R>(
        &self,
        dialect: Dialect,
        backend: &'static str,
        f: impl FnOnce(&VariantDesc<'_>) -> R,
    ) -> Result<R> {
        let (inputs, outputs) = self.descs()?;
        let desc = VariantDesc {
            inputs: &inputs,
            outputs: &outputs,
            template: &self.template,
        };
        self.check_variant(dialect, backend, &desc)?;
        Ok(f(&desc))
    }

    /// The device the call runs on, borrowed where the call names it: a
    /// clone would bump the device's shared reference count on every call,
    /// a cache line that all threads calling on the device would fight over.
    fn device(&self) -> Result<Cow<'a, Device>> {
        if let Some(s) = self.stream {
            return Ok(Cow::Borrowed(s.device()));
        }
        if let Some(a) = self.inputs.first() {
            let a: &'a Array = a;
            return Ok(Cow::Borrowed(a.device()));
        }
        Device::default_device().map(Cow::Owned)
    }

    /// The memoized variant this call runs on `device`.
    pub fn variant_on(&self, device: &Device) -> Result<Arc<Variant>> {
        let (inputs, outputs) = self.descs()?;
        self.variant_for(device, &inputs, &outputs)
    }

    fn variant_for(
        &self,
        device: &Device,
        inputs: &[InputDesc],
        outputs: &[DType],
    ) -> Result<Arc<Variant>> {
        let desc = VariantDesc {
            inputs,
            outputs,
            template: &self.template,
        };
        let backend = device.backend();
        let dialect = backend.dialect();
        self.kernel.variant_checked(dialect, &desc, || {
            self.check_variant(dialect, backend.name(), &desc)
        })
    }

    /// Finds this call's variant and function on its device, compiling or
    /// loading them if no one has yet, without running anything and without
    /// building a [`Launch`]: a warm-up, and the host-side hit path alone.
    pub fn compile(&self) -> Result<()> {
        let device = self.device()?;
        let (inputs, outputs) = self.descs()?;
        let variant = self.variant_for(&device, &inputs, &outputs)?;
        device.function(self.kernel.name(), &variant)?;
        Ok(())
    }

    /// Checks everything and returns a launch that owns its arguments.
    pub fn prepare(&self) -> Result<Launch> {
        self.prepare_with(false)
    }

    /// As `prepare`, but generates and hashes the source again instead of
    /// asking the memo: the cost of a call before the seed's memo. For
    /// benchmarks only.
    #[doc(hidden)]
    pub fn prepare_without_memo(&self) -> Result<Launch> {
        self.prepare_with(true)
    }

    fn prepare_with(&self, bypass_memo: bool) -> Result<Launch> {
        self.plan(bypass_memo, |variant, plan| {
            Ok(Launch {
                kernel: self.kernel.clone(),
                variant: variant.clone(),
                stream: plan.stream.into_owned(),
                inputs: self.inputs.iter().map(|a| (*a).clone()).collect(),
                outputs: self.outputs.clone(),
                grid: plan.grid,
                threadgroup: plan.threadgroup,
                init_value: self.init_value,
                shared_mem_bytes: self.shared_mem_bytes,
            })
        })
    }

    /// Every check of a call, then `then` with its variant and what a launch
    /// needs beyond the call's own (borrowed) arguments. On a memo hit the
    /// variant is borrowed from the memo, not cloned: a clone is two atomic
    /// updates per call on a count every thread calling the kernel shares.
    fn plan<R>(
        &self,
        bypass_memo: bool,
        then: impl FnOnce(&Arc<Variant>, Plan<'a>) -> Result<R>,
    ) -> Result<R> {
        let device = self.device()?;
        self.check_counts()?;
        // Borrowed where possible, for the same reason as the device.
        let stream: Cow<'a, Stream> = match (self.stream, &device) {
            (Some(s), _) => Cow::Borrowed(s),
            (None, Cow::Borrowed(d)) => Cow::Borrowed((*d).default_stream()),
            (None, Cow::Owned(d)) => Cow::Owned(d.default_stream().clone()),
        };
        self.check_inputs(&device)?;
        for (i, (shape, dtype)) in self.outputs.iter().enumerate() {
            self.check_output(i, shape, *dtype)?;
        }
        let (grid, threadgroup) = self.check_dims(&device)?;
        if let Some(v) = self.init_value {
            for ((_, dtype), name) in self.outputs.iter().zip(&self.spec().output_names) {
                init_pattern(v, *dtype).ok_or_else(|| CallError::InitValue {
                    kernel: self.err_kernel(),
                    output: name.clone(),
                    dtype: *dtype,
                    value: v,
                })?;
            }
        }
        let limits = device.limits_ref();
        if self.shared_mem_bytes as u64 > limits.max_shared_bytes && self.shared_mem_bytes > 0 {
            return Err(CallError::Dims {
                kernel: self.err_kernel(),
                what: "shared memory",
                dims: [self.shared_mem_bytes as u64, 0, 0],
                device: device.label().to_string(),
                reason: if limits.max_shared_bytes == 0 {
                    "this device has no dynamic shared memory".to_string()
                } else {
                    format!("at most {} bytes per threadgroup", limits.max_shared_bytes)
                },
            }
            .into());
        }
        let dialect = device.dialect();
        let plan = Plan {
            stream,
            grid,
            threadgroup,
        };
        let log = |variant: &Variant| {
            if self.verbose {
                tracing::info!(
                    kernel = %self.spec().name,
                    function = %variant.name(),
                    "generated source:\n{}",
                    variant.source()
                );
            }
        };
        let backend = device.backend().name();
        if bypass_memo {
            let variant = self.with_checked_desc(dialect, backend, |desc| {
                self.kernel.variant_uncached(dialect, desc)
            })?;
            log(&variant);
            return then(&variant, plan);
        }
        // Descriptors are built only on a miss, to generate the variant.
        let build = |key: &[u8]| {
            self.with_checked_desc(dialect, backend, |desc| {
                self.kernel.build_variant(dialect, desc, key)
            })
        };
        let run = |variant: &Arc<Variant>| {
            log(variant);
            then(variant, plan)
        };
        let out_dtypes = || self.outputs.iter().map(|(_, d)| *d);
        let encode = |key: &mut KeyBytes| {
            encode_key_parts(
                dialect,
                self.input_descs(),
                out_dtypes(),
                &self.template,
                key,
            )
        };
        // The key straight from the arguments: packed in a word when it can
        // be (one comparison finds it), else encoded.
        if let Some(packed) = pack_key(dialect, self.input_descs(), out_dtypes(), &self.template) {
            return self.kernel.with_variant_packed(packed, encode, build, run);
        }
        let mut key = KeyBytes::new();
        encode(&mut key);
        self.kernel.with_variant_keyed(&key, build, run)
    }

    /// Every input is on the call's device, and fits `NAME_shape` where the
    /// body reads it: a short test first, the full one (which words the
    /// error) only when it fails. Names are read only for errors.
    #[inline]
    fn check_inputs(&self, device: &Device) -> Result<()> {
        let id = device.id();
        let spec = self.spec();
        let ok = self
            .inputs
            .iter()
            .zip(&spec.shape_infos)
            .all(|(array, info)| {
                array.device().id().same_memory(&id)
                    && !(info.shape && array.shape().iter().any(|&d| d > i32::MAX as usize))
            });
        if ok {
            return Ok(());
        }
        self.check_inputs_in_full(device)
    }

    #[cold]
    #[inline(never)]
    fn check_inputs_in_full(&self, device: &Device) -> Result<()> {
        let spec = self.spec();
        for (i, array) in self.inputs.iter().enumerate() {
            if !array.device().id().same_memory(&device.id()) {
                return Err(CallError::WrongDevice {
                    kernel: self.err_kernel(),
                    input: spec.input_names[i].clone(),
                    dtype: array.dtype,
                    array_device: array.device().label().to_string(),
                    call_device: device.label().to_string(),
                }
                .into());
            }
        }
        for (i, (array, info)) in self.inputs.iter().zip(&spec.shape_infos).enumerate() {
            // `NAME_shape` is an array of 32-bit ints, as in MLX: a larger
            // extent (a broadcast view can have one) would reach the body
            // wrapped around.
            if info.shape && array.shape().iter().any(|&d| d > i32::MAX as usize) {
                return Err(CallError::InputShape {
                    kernel: self.err_kernel(),
                    input: spec.input_names[i].clone(),
                    shape: array.shape().to_vec(),
                    reason: "the body reads its `_shape`, whose extents are 32-bit ints \
                             (at most 2147483647)",
                }
                .into());
            }
        }
        Ok(())
    }

    /// Checks an output's shape: a short test first, the full one (which
    /// words the error) only when it fails.
    #[inline]
    fn check_output(&self, index: usize, shape: &[i64], dtype: DType) -> Result<()> {
        if shape.iter().all(|&d| d >= 1)
            && checked_count(shape.iter().map(|&d| d as usize), dtype).is_some()
        {
            return Ok(());
        }
        self.check_output_in_full(index, shape, dtype)
    }

    #[cold]
    #[inline(never)]
    fn check_output_in_full(&self, index: usize, shape: &[i64], dtype: DType) -> Result<()> {
        let bad = |reason| CallError::OutputShape {
            kernel: self.err_kernel(),
            output: self.spec().output_names[index].clone(),
            shape: shape.to_vec(),
            reason,
        };
        if shape.iter().any(|&d| d < 0) {
            return Err(bad("extents must not be negative").into());
        }
        if shape.contains(&0) {
            return Err(bad("extents must be at least 1").into());
        }
        if checked_count(shape.iter().map(|&d| d as usize), dtype).is_none() {
            return Err(bad("its size overflows").into());
        }
        Ok(())
    }

    /// The grid and the clamped threadgroup, when they fit the device: a
    /// short test that every call runs. Anything else goes to
    /// [`Call::check_dims_in_full`], which finds and words the problem.
    #[inline]
    fn check_dims(&self, device: &Device) -> Result<([u32; 3], [u32; 3])> {
        if let Some(grid) = self.grid {
            let limits = device.limits_ref();
            let requested = self.threadgroup.unwrap_or([256, 1, 1]);
            let total = grid[0]
                .checked_mul(grid[1])
                .and_then(|t| t.checked_mul(grid[2]));
            // A total in 1..=u32::MAX also puts every extent there.
            let mut ok = total.is_some_and(|t| t >= 1 && t <= u32::MAX as u64);
            let tg = [
                requested[0].min(grid[0]).max(1),
                requested[1].min(grid[1]).max(1),
                requested[2].min(grid[2]).max(1),
            ];
            for axis in 0..3 {
                ok &= requested[axis] >= 1;
                // ceil(grid / tg) <= max, without a division (a division is
                // tens of cycles; the product cannot overflow: both factors
                // are below 2^32).
                ok &= grid[axis] <= limits.max_groups[axis].min(u32::MAX as u64) * tg[axis];
                if self.threadgroup.is_some() {
                    ok &= requested[axis] <= limits.max_group_dims[axis];
                }
            }
            if self.threadgroup.is_some() && ok {
                // Extents are within the per-axis limits here: no overflow.
                ok &= requested[0] * requested[1] * requested[2] <= limits.max_threads_per_group;
            }
            if ok {
                return Ok((grid.map(|g| g as u32), tg.map(|t| t as u32)));
            }
        }
        self.check_dims_in_full(device)
    }

    #[cold]
    #[inline(never)]
    fn check_dims_in_full(&self, device: &Device) -> Result<([u32; 3], [u32; 3])> {
        let grid = self.grid.ok_or_else(|| CallError::MissingGrid {
            kernel: self.err_kernel(),
        })?;
        let limits = device.limits();
        let bad = |what, dims, reason: String| CallError::Dims {
            kernel: self.err_kernel(),
            what,
            dims,
            device: device.label().to_string(),
            reason,
        };
        if grid.contains(&0) {
            return Err(bad("grid", grid, "every extent must be at least 1".into()).into());
        }
        if grid.iter().any(|&g| g > u32::MAX as u64) {
            return Err(bad(
                "grid",
                grid,
                format!("each extent must be at most {}", u32::MAX),
            )
            .into());
        }
        let total = grid.iter().try_fold(1u64, |a, &g| a.checked_mul(g));
        if total.is_none_or(|t| t > u32::MAX as u64) {
            return Err(bad(
                "grid",
                grid,
                format!(
                    "the thread count overflows 32 bits (at most {} threads)",
                    u32::MAX
                ),
            )
            .into());
        }
        let requested = self.threadgroup.unwrap_or([256, 1, 1]);
        if requested.contains(&0) {
            return Err(bad(
                "threadgroup",
                requested,
                "every extent must be at least 1".into(),
            )
            .into());
        }
        let tg = [
            requested[0].min(grid[0]),
            requested[1].min(grid[1]),
            requested[2].min(grid[2]),
        ];
        if self.threadgroup.is_some() {
            let per_group = requested.iter().try_fold(1u64, |a, &r| a.checked_mul(r));
            if per_group.is_none_or(|p| p > limits.max_threads_per_group) {
                return Err(bad(
                    "threadgroup",
                    requested,
                    format!(
                        "at most {} threads per threadgroup",
                        limits.max_threads_per_group
                    ),
                )
                .into());
            }
            for axis in 0..3 {
                if requested[axis] > limits.max_group_dims[axis] {
                    return Err(bad(
                        "threadgroup",
                        requested,
                        format!("extents are limited to {:?}", limits.max_group_dims),
                    )
                    .into());
                }
            }
        }
        for axis in 0..3 {
            if grid[axis].div_ceil(tg[axis]) > limits.max_groups[axis] {
                return Err(bad(
                    "grid",
                    grid,
                    format!("at most {:?} threadgroups per axis", limits.max_groups),
                )
                .into());
            }
        }
        Ok((grid.map(|g| g as u32), tg.map(|t| t as u32)))
    }

    /// Prepares and runs the call; returns the outputs (on a GPU, the work
    /// is queued and the outputs are ready when their stream is).
    ///
    /// This runs the call straight from its borrowed arguments (no
    /// [`Launch`] is built), the cheapest way to dispatch.
    pub fn launch(&self) -> Result<Outputs> {
        // Filled in place: see `Backend::dispatch`.
        let mut outputs = Outputs::default();
        self.plan(false, |variant, plan| {
            execute(
                Job {
                    spec: self.kernel.spec(),
                    variant,
                    stream: &plan.stream,
                    inputs: &self.inputs,
                    outputs: &self.outputs,
                    grid: plan.grid,
                    threadgroup: plan.threadgroup,
                    init_value: self.init_value,
                    shared_mem_bytes: self.shared_mem_bytes,
                },
                &mut outputs,
                None,
            )
        })?;
        Ok(outputs)
    }
}

/// `init_value` as the bytes of one element of `dtype`, if it fits.
pub(crate) fn init_pattern(v: f64, dtype: DType) -> Option<SmallVec<[u8; 8]>> {
    use crate::dtype::Element;
    let int_ok = |lo: f64, hi: f64| v.fract() == 0.0 && v >= lo && v <= hi;
    let mut out: SmallVec<[u8; 8]> = SmallVec::from_elem(0, dtype.size());
    match dtype {
        DType::Bool if v == 0.0 || v == 1.0 => (v == 1.0).write_le(&mut out),
        DType::U8 if int_ok(0.0, u8::MAX as f64) => (v as u8).write_le(&mut out),
        DType::U16 if int_ok(0.0, u16::MAX as f64) => (v as u16).write_le(&mut out),
        DType::U32 if int_ok(0.0, u32::MAX as f64) => (v as u32).write_le(&mut out),
        DType::U64 if int_ok(0.0, u64::MAX as f64) => (v as u64).write_le(&mut out),
        DType::I8 if int_ok(i8::MIN as f64, i8::MAX as f64) => (v as i8).write_le(&mut out),
        DType::I16 if int_ok(i16::MIN as f64, i16::MAX as f64) => (v as i16).write_le(&mut out),
        DType::I32 if int_ok(i32::MIN as f64, i32::MAX as f64) => (v as i32).write_le(&mut out),
        DType::I64 if int_ok(i64::MIN as f64, i64::MAX as f64) => (v as i64).write_le(&mut out),
        DType::F16 => half::f16::from_f64(v).write_le(&mut out),
        DType::BF16 => half::bf16::from_f64(v).write_le(&mut out),
        DType::F32 => (v as f32).write_le(&mut out),
        DType::F64 => v.write_le(&mut out),
        DType::Complex64 => num_complex::Complex32::new(v as f32, 0.0).write_le(&mut out),
        _ => return None,
    }
    Some(out)
}

/// A prepared call: owns its kernel, variant, stream, inputs and output
/// shapes. Running it does no generation and no memo lookup.
pub struct Launch {
    kernel: Kernel,
    variant: Arc<Variant>,
    stream: Stream,
    inputs: SmallVec<[Array; 8]>,
    outputs: SmallVec<[OutputSpec; 2]>,
    grid: [u32; 3],
    threadgroup: [u32; 3],
    init_value: Option<f64>,
    shared_mem_bytes: u32,
}

impl std::fmt::Debug for Launch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Launch")
            .field("kernel", &self.kernel.name())
            .field("variant", &self.variant.name())
            .field("grid", &self.grid)
            .field("threadgroup", &self.threadgroup)
            .finish_non_exhaustive()
    }
}

impl Launch {
    /// The variant this launch runs (it owns it).
    pub fn variant(&self) -> &Arc<Variant> {
        &self.variant
    }

    /// The grid in threads and the threadgroup after clamping.
    pub fn dims(&self) -> ([u32; 3], [u32; 3]) {
        (self.grid, self.threadgroup)
    }

    /// Compiles (or finds in the caches) this launch's function without
    /// running it: a warm-up, or a check that a body compiles on a device.
    pub fn compile(&self) -> Result<()> {
        self.stream
            .device()
            .function(self.kernel.name(), &self.variant)?;
        Ok(())
    }

    /// Compiles or finds the function, allocates the outputs and launches.
    pub fn run(&self) -> Result<Outputs> {
        self.run_inner(None)
    }

    /// Runs once to set up (function, inputs, outputs), then times `iters`
    /// launches of the same job by the backend alone, arguments marshalled
    /// once: the floor that dispatch is measured against. For benchmarks.
    #[doc(hidden)]
    pub fn time_raw_launches(&self, iters: u32) -> Result<std::time::Duration> {
        let mut elapsed = std::time::Duration::ZERO;
        self.run_inner(Some((iters, &mut elapsed)))?;
        Ok(elapsed)
    }

    fn run_inner(&self, raw: Option<(u32, &mut std::time::Duration)>) -> Result<Outputs> {
        let inputs: SmallVec<[&Array; 8]> = self.inputs.iter().collect();
        let mut outputs = Outputs::default();
        execute(
            Job {
                spec: self.kernel.spec(),
                variant: &self.variant,
                stream: &self.stream,
                inputs: &inputs,
                outputs: &self.outputs,
                grid: self.grid,
                threadgroup: self.threadgroup,
                init_value: self.init_value,
                shared_mem_bytes: self.shared_mem_bytes,
            },
            &mut outputs,
            raw,
        )?;
        Ok(outputs)
    }
}

/// The checked result of a call, minus its variant and its borrowed
/// arguments.
struct Plan<'a> {
    stream: Cow<'a, Stream>,
    grid: [u32; 3],
    threadgroup: [u32; 3],
}

/// Everything one execution borrows (from a [`Call`] or a [`Launch`]).
struct Job<'a> {
    spec: &'a KernelSpec,
    variant: &'a Arc<Variant>,
    stream: &'a Stream,
    inputs: &'a [&'a Array],
    outputs: &'a [OutputSpec],
    grid: [u32; 3],
    threadgroup: [u32; 3],
    init_value: Option<f64>,
    shared_mem_bytes: u32,
}

/// Finds the function, makes strided inputs contiguous where the spec asks,
/// allocates (and fills) the outputs into `outputs` and launches; with
/// `raw`, also times `iters` backend launches of the same job.
///
/// A call whose inputs need nothing done first (the common case) goes
/// straight to the backend; the rest is out of line, in
/// [`execute_in_full`], so that its code does not crowd the instruction
/// cache of the calls that never run it.
#[inline]
fn execute(
    job: Job<'_>,
    outputs: &mut Outputs,
    raw: Option<(u32, &mut std::time::Duration)>,
) -> Result<()> {
    let device = job.stream.device();
    let function = device.function(&job.spec.name, job.variant)?;
    let stream = job.stream;
    let contiguous = job.spec.ensure_row_contiguous;
    let ready = job.inputs.iter().all(|a| {
        a.producer().is_none_or(|p| p == stream) && (!contiguous || a.is_row_contiguous())
    });
    if !ready || raw.is_some() {
        return execute_in_full(job, &function, outputs, raw);
    }
    device
        .backend()
        .dispatch(&job.dispatch(&function, job.inputs), stream, outputs)
}

impl<'a> Job<'a> {
    /// The backend's view of this job, with `inputs` as the kernel sees them.
    fn dispatch<'b>(
        &'b self,
        function: &'b crate::backend::Function,
        inputs: &'b [&'b Array],
    ) -> crate::backend::Dispatch<'b> {
        crate::backend::Dispatch {
            spec: self.spec,
            variant: self.variant,
            function,
            inputs,
            outputs: self.outputs,
            init_value: self.init_value,
            grid: self.grid,
            threadgroup: self.threadgroup,
            shared_mem_bytes: self.shared_mem_bytes,
        }
    }
}

/// [`execute`] for inputs produced on another stream (waited for) or
/// strided where the spec wants them contiguous (copied), and for timing.
#[cold]
#[inline(never)]
fn execute_in_full(
    job: Job<'_>,
    function: &crate::backend::Function,
    outputs: &mut Outputs,
    raw: Option<(u32, &mut std::time::Duration)>,
) -> Result<()> {
    let Job {
        spec,
        stream,
        inputs: given,
        ..
    } = job;
    let backend = stream.device().backend();
    let handle = stream.handle();

    // Contiguous copies of strided inputs (kept alive until the launch).
    let mut copies: SmallVec<[(usize, Array); 2]> = SmallVec::new();
    for (i, input) in given.iter().enumerate() {
        if let Some(p) = input.producer() {
            if p != stream {
                p.synchronize()?;
            }
        }
        if spec.ensure_row_contiguous && !input.is_row_contiguous() {
            let n = input.size() * input.dtype.size();
            let buffer = backend.alloc(n, Place::Queued(stream.clone()))?;
            backend.make_contiguous(input, &buffer, handle)?;
            copies.push((
                i,
                Array::contiguous(buffer, input.shape.clone(), input.dtype),
            ));
        }
    }
    let replaced: SmallVec<[&Array; 8]>;
    let inputs: &[&Array] = if copies.is_empty() {
        given
    } else {
        replaced = given
            .iter()
            .enumerate()
            .map(|(i, a)| match copies.iter().find(|(j, _)| *j == i) {
                Some((_, copy)) => copy,
                None => *a,
            })
            .collect();
        &replaced
    };
    let call = job.dispatch(function, inputs);
    backend.dispatch(&call, stream, outputs)?;
    if let Some((iters, elapsed)) = raw {
        stream.synchronize()?;
        let started = std::time::Instant::now();
        backend.launch_raw(&call.job(outputs), handle, iters)?;
        *elapsed = started.elapsed();
        stream.synchronize()?;
    }
    Ok(())
}
