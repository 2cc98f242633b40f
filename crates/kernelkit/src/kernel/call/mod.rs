//! Calls: one call's arguments, borrowed ([`Call`]), and a prepared call
//! that owns them ([`Launch`]).
//!
//! A call reads top to bottom (`Call::launch`):
//!
//! 1. **check** (`check.rs`): counts, device and stream, inputs, outputs,
//!    grid and threadgroup — a short test each, the full one out of line;
//! 2. **key**: the variant key straight from the arguments, packed in a
//!    word when it can be;
//! 3. **lookup** in the kernel's variant cache (`kernel::variants`): this
//!    thread's recent variants, then the memo, then — once per variant —
//!    the per-variant checks and the generator; a `VariantRef` holds no
//!    lock and no borrow;
//! 4. **function**: the one the variant kept for its device, or the
//!    device's module resolver (memory → disk → compile);
//! 5. **launch**: `device::dispatch` allocates the outputs and hands the
//!    backend one borrowed launch description.
//!
//! The files: `check` (step 1), `launch` (the prepared [`Launch`]),
//! `rebind` ([`Rebindable`]: a prepared call whose arrays are given again,
//! as addresses, at every run) and `capture` (calls on a stream that is
//! being captured into a CUDA graph).

mod capture;
pub(crate) mod check;
mod launch;
mod rebind;
mod tuned;

use std::borrow::Cow;
use std::sync::Arc;

use smallvec::SmallVec;

use crate::array::outputs::Outputs;
use crate::array::Array;
use crate::cache::CacheState;
use crate::codegen::template::{TemplateArg, TemplateParam};
use crate::codegen::variant::{InputDesc, VariantDesc};
use crate::codegen::{Dialect, Generated};
use crate::device::dispatch::{dispatch, Dispatch, OutputSpec};
use crate::device::{Device, Stream};
use crate::dtype::DType;
use crate::error::Result;
use crate::kernel::tune::Tuning;
use crate::kernel::variant::Variant;
use crate::kernel::variants::key::{encode_key_parts, pack_key, KeyBytes};
use crate::kernel::variants::{VariantKey, VariantRef};
use crate::kernel::Kernel;
use check::Checked;
pub use launch::Launch;
pub use rebind::Rebindable;
pub(crate) use tuned::{SigBytes, Swap};

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
    /// Outputs written into arrays the caller gave (`output_into`): `None`
    /// for most calls (one word to set and to test).
    targets: Option<Box<Targets<'a>>>,
    /// The launch configurations to choose from (`Call::tuned`).
    tuning: Option<&'a Tuning>,
}

/// A call's outputs written into the caller's arrays.
#[derive(Default)]
struct Targets<'a> {
    /// The output's index and its array.
    list: Vec<(usize, &'a Array)>,
    /// They may share memory with the inputs and each other.
    allow_overlap: bool,
    /// Outputs that are inputs' own buffers ([`Call::donate`]).
    donations: SmallVec<[Donation<'a>; 1]>,
}

/// One [`Call::donate`]: the output at `index` (named `output` by the
/// caller) is the buffer of the input named `input`, at `from` when the
/// kernel has an input of that name.
struct Donation<'a> {
    index: usize,
    output: Cow<'a, str>,
    input: Cow<'a, str>,
    from: Option<usize>,
}

impl Targets<'_> {
    /// The input whose buffer output `index` is, if it is donated.
    fn donated_input(&self, index: usize) -> Option<usize> {
        self.donations
            .iter()
            .find(|d| d.index == index)
            .and_then(|d| d.from)
    }
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
            targets: None,
            tuning: None,
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

    /// Adds an output written into `target` instead of a new array (NumPy's
    /// `out=`): the output's shape and dtype are `target`'s, and the call
    /// returns `target` (a clone sharing its memory) in its place. The
    /// target must be on the call's device, row-contiguous (the kernel
    /// indexes an output as a dense array), writable (not a read-only
    /// foreign array) and share no memory with an input or another target
    /// unless [`Call::allow_overlap`] says so. Its memory may be
    /// kernelkit's or another library's (`interop`), on the CPU or a GPU.
    ///
    /// A target written by another stream than the call's is waited for
    /// first; on a GPU, a call on another stream than the target's own
    /// waits for its launch before returning (so that readers of the
    /// target see the result): write into arrays of the call's stream to
    /// queue without waiting.
    #[inline]
    pub fn output_into(mut self, target: &'a Array) -> Self {
        let index = self.outputs.len();
        self.targets
            .get_or_insert_default()
            .list
            .push((index, target));
        let extents = target.shape().iter().map(|&d| d as i64).collect();
        self.outputs.push((extents, target.dtype()));
        self
    }

    /// Adds the output named `output` as the buffer of the input named
    /// `input` (an in-place kernel, MLX's "donation"): the output's shape
    /// and dtype are the input's, nothing is allocated, the body may read
    /// the input and write the output element by element, and the call
    /// returns the input's array (a clone sharing its memory) in the
    /// output's place. Outputs are given in order, so `output` must be
    /// the name of the output this adds.
    ///
    /// Checked when the call runs ([`CallError::Donation`](crate::CallError)
    /// names the output and the input): both names the kernel's, one input
    /// donated to one output at most, the input writable, row-contiguous
    /// (an input the call would copy first cannot be written in place) and
    /// not revoked, and no `init_value` (it would overwrite the input).
    /// The donated output may share memory with its own input without
    /// [`Call::allow_overlap`]; any other overlap still needs it. The
    /// generated source is the same as an allocating call's (inputs are
    /// read through plain `const` pointers, never `restrict`), so a
    /// donated call shares its variant.
    pub fn donate(
        mut self,
        output: impl Into<Cow<'a, str>>,
        input: impl Into<Cow<'a, str>>,
    ) -> Self {
        let (output, input) = (output.into(), input.into());
        let index = self.outputs.len();
        let from = self
            .spec()
            .input_names
            .iter()
            .position(|n| *n == *input)
            .filter(|&j| j < self.inputs.len());
        let targets = self.targets.get_or_insert_default();
        match from {
            Some(j) => {
                let array = self.inputs[j];
                targets.list.push((index, array));
                let extents = array.shape().iter().map(|&d| d as i64).collect();
                self.outputs.push((extents, array.dtype()));
            }
            // Refused by the check, before the output is used.
            None => self.outputs.push((SmallVec::new(), DType::F32)),
        }
        targets.donations.push(Donation {
            index,
            output,
            input,
            from,
        });
        self
    }

    /// Lets outputs given by [`Call::output_into`] share memory with the
    /// inputs (in-place kernels: each thread reads the elements it then
    /// writes) and with each other. Without it such a call is refused.
    #[inline]
    pub fn allow_overlap(mut self, yes: bool) -> Self {
        self.targets.get_or_insert_default().allow_overlap = yes;
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

    /// Lets `tuning` choose this call's template values, threadgroup and
    /// grid among its configurations: the first call of a tuning key times
    /// them (on the call's stream, into scratch outputs) and keeps the
    /// fastest in every cache tier; later calls launch the choice. The
    /// caller's arrays are written once, by the final run. See
    /// [`Tuning`] and `docs/autotune.md`.
    #[inline]
    pub fn tuned(mut self, tuning: &'a Tuning) -> Self {
        self.tuning = Some(tuning);
        self
    }

    /// Prepares and runs the call; returns the outputs (on a GPU, the work
    /// is queued and the outputs are ready when their stream is).
    ///
    /// This runs the call straight from its borrowed arguments (no
    /// [`Launch`] is built), the cheapest way to dispatch.
    pub fn launch(&self) -> Result<Outputs> {
        if let Some(tuning) = self.tuning {
            return tuning.launch(self);
        }
        let checked = self.check()?;
        let variant = self.variant(&checked)?;
        self.run_checked(&checked, &variant)
    }

    /// Runs `variant` for this checked call: its function, then dispatch.
    #[inline(always)]
    fn run_checked(&self, checked: &Checked<'_>, variant: &Variant) -> Result<Outputs> {
        let function =
            capture::function_for(variant, &checked.device, &checked.stream, &self.spec().name)?;
        // Filled in place: see `device::dispatch`.
        let mut outputs = Outputs::default();
        dispatch(
            &Dispatch {
                spec: self.spec(),
                function: &function,
                inputs: &self.inputs,
                outputs: &self.outputs,
                init_value: self.init_value,
                grid: checked.grid,
                threadgroup: checked.threadgroup,
                shared_mem_bytes: self.shared_mem_bytes,
                stream: &checked.stream,
                targets: self.targets.as_ref().map_or(&[], |t| &t.list),
            },
            &mut outputs,
            None,
        )?;
        Ok(outputs)
    }

    /// Checks everything and returns a launch that owns its arguments.
    pub fn prepare(&self) -> Result<Launch> {
        if let Some(tuning) = self.tuning {
            return tuning.prepare(self);
        }
        let checked = self.check()?;
        let variant = self.variant(&checked)?;
        Ok(self.launch_of(variant.into_arc(), checked))
    }

    /// As `prepare`, but generates and hashes the source again instead of
    /// asking the variant cache: the cost of a call before the seed's memo.
    /// For benchmarks (feature `bench`).
    #[cfg(feature = "bench")]
    pub fn prepare_without_memo(&self) -> Result<Launch> {
        let checked = self.check()?;
        let (dialect, backend) = (checked.device.dialect(), checked.device.backend().name());
        let variant = self.with_checked_desc(dialect, backend, |desc| {
            self.kernel.variant_uncached(dialect, desc)
        })?;
        self.log(&variant);
        Ok(self.launch_of(variant, checked))
    }

    /// A launch owning `variant` and this call's arguments.
    fn launch_of(&self, variant: Arc<Variant>, checked: Checked<'a>) -> Launch {
        Launch {
            kernel: self.kernel.clone(),
            variant,
            stream: checked.stream.into_owned(),
            inputs: self.inputs.iter().map(|a| (*a).clone()).collect(),
            outputs: self.outputs.clone(),
            grid: checked.grid,
            threadgroup: checked.threadgroup,
            init_value: self.init_value,
            shared_mem_bytes: self.shared_mem_bytes,
            targets: self.targets.as_ref().map_or_else(Vec::new, |t| {
                t.list.iter().map(|(i, a)| (*i, (*a).clone())).collect()
            }),
        }
    }

    /// Finds this call's variant and function on its device, compiling or
    /// loading them if no one has yet, without running anything and without
    /// building a [`Launch`]: a warm-up, and the host-side hit path alone.
    pub fn compile(&self) -> Result<()> {
        let checked = self.check()?;
        let variant = self.variant(&checked)?;
        variant.function_on(&checked.device, self.kernel.name())?;
        Ok(())
    }

    /// Where this call's variant is compiled already on its device: loaded
    /// in memory, kept in the artifact store or the fleet tier (see
    /// [`CacheState`]). Nothing is compiled or loaded; only the variant's
    /// source is generated if no call made it yet. A call whose state is
    /// none of them pays a compile.
    pub fn cache_state(&self) -> Result<CacheState> {
        let (device, variant) = self.device_and_variant()?;
        Ok(device.cache_state(variant.name(), variant.source_hash128()))
    }

    /// The name of the kernel called.
    pub(crate) fn kernel_name(&self) -> &str {
        self.kernel.name()
    }

    /// The call's device and its memoized variant there: what a compile
    /// ahead of time needs (no grid, no stream, no output memory).
    pub(crate) fn device_and_variant(&self) -> Result<(Device, Arc<Variant>)> {
        let device = self.device()?.into_owned();
        let variant = self.variant_on(&device)?;
        Ok((device, variant))
    }

    /// The memoized variant this call runs on `device`.
    pub fn variant_on(&self, device: &Device) -> Result<Arc<Variant>> {
        self.check_counts()?;
        Ok(self.variant_in(device)?.into_arc())
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

    /// The variant of a checked call, from the kernel's variant cache.
    #[inline(always)]
    fn variant(&self, checked: &Checked<'_>) -> Result<VariantRef> {
        let device = &checked.device;
        self.variant_in(device)
    }

    /// The variant of this call for `device`'s dialect and backend: the
    /// key straight from the arguments — packed in a word when it can be
    /// (one comparison finds it), else encoded — then the variant cache,
    /// which builds the variant on a miss (per-variant checks included)
    /// from descriptors made only then, and records it (`kernel::record`).
    #[inline(always)]
    fn variant_in(&self, device: &Device) -> Result<VariantRef> {
        let (dialect, backend) = (device.dialect(), device.backend().name());
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
        let build = |key: &[u8]| {
            let variant = self.with_checked_desc(dialect, backend, |desc| {
                self.kernel.build_variant(dialect, desc, key)
            })?;
            self.log(&variant);
            self.describe(&variant, device);
            Ok(variant)
        };
        let variants = self.kernel.variants();
        let found = match pack_key(dialect, self.input_descs(), out_dtypes(), &self.template) {
            Some(packed) => variants.get(VariantKey::Packed(packed, &encode), build)?,
            None => {
                let mut key = KeyBytes::new();
                encode(&mut key);
                variants.get(VariantKey::Bytes(&key), build)?
            }
        };
        if self.verbose {
            self.log(&found);
        }
        Ok(found)
    }

    /// Gives a variant just built its detail (template values and shapes,
    /// for `KERNELKIT_JIT` messages) and records it when the process
    /// records (`kernel::record`). A memo miss only.
    #[cold]
    fn describe(&self, variant: &Variant, device: &Device) {
        let template: Vec<String> = self
            .template
            .iter()
            .map(|t| match t.value {
                TemplateArg::Int(i) => format!("{}={i}", t.name),
                TemplateArg::Bool(b) => format!("{}={b}", t.name),
                TemplateArg::DType(d) => format!("{}={}", t.name, d.name()),
            })
            .collect();
        let spec = self.spec();
        let inputs: Vec<String> = spec
            .input_names
            .iter()
            .zip(&self.inputs)
            .map(|(n, a)| format!("{n}: {}{:?}", a.dtype().name(), a.shape()))
            .collect();
        let outputs: Vec<String> = spec
            .output_names
            .iter()
            .zip(&self.outputs)
            .map(|(n, (shape, dtype))| format!("{n}: {}{:?}", dtype.name(), shape.as_slice()))
            .collect();
        variant.set_detail(format!(
            "`{}` (template [{}], inputs [{}], outputs [{}])",
            variant.name(),
            template.join(", "),
            inputs.join(", "),
            outputs.join(", ")
        ));
        crate::kernel::record::note(&crate::kernel::record::Observed {
            kernel: self.kernel,
            inputs: &self.inputs,
            outputs: &self.outputs,
            template: &self.template,
            backend: device.backend().name(),
            arch: device.backend().target(),
            function: variant.name(),
        });
    }

    /// Logs the generated name and source when the call asked for it.
    fn log(&self, variant: &Variant) {
        if self.verbose {
            tracing::info!(
                kernel = %self.spec().name,
                function = %variant.name(),
                "generated source:\n{}",
                variant.source()
            );
        }
    }
}
