//! The checks of a call, against its kernel's spec and its device.
//!
//! Checks that depend only on the variant key (template names, dtypes the
//! dialect lacks, bodies the backend cannot run) run when the variant is
//! built ([`Call::check_variant`]), not on every call: a hit of the variant
//! cache proves they passed. The rest run on every call, each as a short
//! test with the full one — which finds and words the problem — out of line
//! (`*_in_full`), so that a call that passes runs little code.

use std::borrow::Cow;

use super::{Call, Descs, Targets};
use crate::array::{checked_count, Array};
use crate::codegen::attributes::ATTRIBUTES;
use crate::codegen::spec::{check_identifier, KernelSpec};
use crate::codegen::variant::{InputDesc, PassMode, VariantDesc};
use crate::codegen::{BodyLanguage, Dialect};
use crate::device::{Device, Stream};
use crate::dtype::DType;
use crate::error::{shown, CallError, LaunchLimit, Result};
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

/// The grid and threadgroup a call is checked with: its own, or a tuned
/// call's chosen configuration's.
#[derive(Clone, Copy)]
pub(super) struct Dims {
    pub(super) grid: Option<[u64; 3]>,
    pub(super) threadgroup: Option<[u64; 3]>,
}

/// A call that passed every per-call check: where it runs, and its grid and
/// threadgroup as the device takes them.
pub(crate) struct Checked<'a> {
    /// Borrowed where the call names it (a clone would bump a count every
    /// thread calling on the device shares).
    pub(crate) device: Cow<'a, Device>,
    pub(crate) stream: Cow<'a, Stream>,
    pub(crate) grid: [u32; 3],
    pub(crate) threadgroup: [u32; 3],
}

impl<'a> Call<'a> {
    pub(super) fn spec(&self) -> &KernelSpec {
        self.kernel.spec()
    }

    pub(super) fn err_kernel(&self) -> String {
        self.spec().name.clone()
    }

    /// Every per-call check: counts, device and stream, inputs, outputs,
    /// grid and threadgroup, the fill value, shared memory.
    #[inline(always)]
    pub(super) fn check(&self) -> Result<Checked<'a>> {
        self.check_with(Dims {
            grid: self.grid,
            threadgroup: self.threadgroup,
        })
    }

    /// [`Call::check`] with `dims` in place of the call's grid and
    /// threadgroup (a tuned call's chosen configuration).
    #[inline(always)]
    pub(super) fn check_with(&self, dims: Dims) -> Result<Checked<'a>> {
        if let Some(targets) = self.targets.as_deref() {
            if !targets.donations.is_empty() {
                self.check_donations(targets)?;
            }
        }
        let device = self.device()?;
        self.check_counts()?;
        // Borrowed where possible, for the same reason as the device.
        // A call that names no stream runs on the stream its first input's
        // owner named, if that input is foreign (`interop`), else on the
        // device's default stream.
        let foreign = match self.stream {
            None => self.foreign_stream(),
            named => named,
        };
        let stream: Cow<'a, Stream> = match (foreign, &device) {
            (Some(s), _) => Cow::Borrowed(s),
            (None, Cow::Borrowed(d)) => Cow::Borrowed((*d).default_stream()),
            (None, Cow::Owned(d)) => Cow::Owned(d.default_stream().clone()),
        };
        self.check_inputs(&device)?;
        for (i, (shape, dtype)) in self.outputs.iter().enumerate() {
            self.check_output(i, shape, *dtype)?;
        }
        if let Some(targets) = &self.targets {
            self.check_targets(targets, &device)?;
        }
        let (grid, threadgroup) = self.check_dims(&device, dims)?;
        if let Some(v) = self.init_value {
            for ((_, dtype), name) in self.outputs.iter().zip(&self.spec().output_names) {
                crate::dtype::fill_pattern(v, *dtype).ok_or_else(|| CallError::InitValue {
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
                limit: Some(LaunchLimit::SharedBytes),
                reason: if limits.max_shared_bytes == 0 {
                    "this device has no dynamic shared memory".to_string()
                } else {
                    format!("at most {} bytes per threadgroup", limits.max_shared_bytes)
                },
            }
            .into());
        }
        Ok(Checked {
            device,
            stream,
            grid,
            threadgroup,
        })
    }

    /// The stream the first input's owner named, if it is foreign.
    #[inline(never)]
    fn foreign_stream(&self) -> Option<&'a Stream> {
        let first: &'a Array = self.inputs.first()?;
        first.foreign_stream()
    }

    /// The argument counts against the spec's names.
    #[inline]
    pub(super) fn check_counts(&self) -> Result<()> {
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
    pub(super) fn input_descs(&self) -> impl ExactSizeIterator<Item = InputDesc> + '_ {
        self.inputs.iter().map(|a| InputDesc {
            dtype: a.dtype,
            mode: PassMode::of(a.ndim(), a.size()),
        })
    }

    /// Input and output descriptors, after the device-independent checks.
    pub(super) fn descs(&self) -> Result<Descs> {
        self.check_counts()?;
        let inputs = self.input_descs().collect();
        let outputs = self.outputs.iter().map(|(_, d)| *d).collect();
        Ok((inputs, outputs))
    }

    /// Checks that run once per variant (see the module docs).
    pub(super) fn check_variant(
        &self,
        dialect: Dialect,
        backend: &'static str,
        desc: &VariantDesc<'_>,
    ) -> Result<()> {
        check_variant(self.kernel, dialect, backend, desc)
    }

    /// The device the call runs on, borrowed where the call names it: a
    /// clone would bump the device's shared reference count on every call,
    /// a cache line that all threads calling on the device would fight over.
    pub(super) fn device(&self) -> Result<Cow<'a, Device>> {
        if let Some(s) = self.stream {
            return Ok(Cow::Borrowed(s.device()));
        }
        if let Some(a) = self.inputs.first() {
            let a: &'a Array = a;
            return Ok(Cow::Borrowed(a.device()));
        }
        Device::default_device().map(Cow::Owned)
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

    /// Checks the arrays given to `output_into`: device, layout, writable,
    /// not revoked, no shared memory with inputs or each other unless the
    /// call allows it.
    #[cold]
    #[inline(never)]
    fn check_targets(&self, targets: &Targets<'a>, device: &Device) -> Result<()> {
        let spec = self.spec();
        for (k, &(i, target)) in targets.list.iter().enumerate() {
            let bad = |reason: String| CallError::OutputTarget {
                kernel: self.err_kernel(),
                output: spec.output_names.get(i).cloned().unwrap_or_default(),
                reason,
            };
            if !target.device().id().same_memory(&device.id()) {
                return Err(bad(format!(
                    "it is on {}, but the call runs on {}",
                    target.device().label(),
                    device.label()
                ))
                .into());
            }
            if !target.is_row_contiguous() {
                return Err(bad(format!(
                    "it is not row-contiguous (shape {:?}, strides {:?}); a kernel writes an \
                     output as a dense array",
                    target.shape(),
                    target.strides()
                ))
                .into());
            }
            if target.shape().contains(&0) {
                return Err(bad("it has no elements".into()).into());
            }
            if !target.is_writable() {
                return Err(bad("it is read-only (its owner lent it for reading)".into()).into());
            }
            if target.is_revoked() {
                return Err(bad("it views borrowed memory whose scope has ended".into()).into());
            }
            if targets.allow_overlap {
                continue;
            }
            // A donated output is its input's buffer: that one overlap is
            // the point.
            let own = targets.donated_input(i);
            if let Some(j) = (self.inputs.iter().enumerate())
                .position(|(j, a)| Some(j) != own && a.overlaps(target))
            {
                return Err(bad(shares_with_input(spec, j)).into());
            }
            if let Some(&(j, _)) = targets.list[..k].iter().find(|(_, t)| t.overlaps(target)) {
                return Err(bad(shares_with_output(spec, j)).into());
            }
        }
        Ok(())
    }

    /// Checks the donations ([`Call::donate`]): names, one output per
    /// input, an input the call can write in place, no fill.
    #[cold]
    #[inline(never)]
    fn check_donations(&self, targets: &Targets<'a>) -> Result<()> {
        let spec = self.spec();
        for (k, d) in targets.donations.iter().enumerate() {
            let bad = |reason: String| -> crate::Error {
                CallError::Donation {
                    kernel: self.err_kernel(),
                    output: d.output.to_string(),
                    input: d.input.to_string(),
                    reason,
                }
                .into()
            };
            match spec.output_names.get(d.index) {
                Some(name) if *name == *d.output => {}
                Some(name) if spec.output_names.iter().any(|n| *n == *d.output) => {
                    return Err(bad(format!(
                        "the outputs are given in order, and this one is output `{name}` \
                         (#{}); donate `{}` in its place",
                        d.index, d.output
                    )))
                }
                _ => {
                    return Err(bad(format!(
                        "the kernel has no output `{}` (outputs: {})",
                        d.output,
                        KernelSpec::list(&spec.output_names)
                    )))
                }
            }
            let Some(j) = d.from else {
                if spec.input_names.iter().any(|n| *n == *d.input) {
                    // The kernel has it but the call gave fewer inputs:
                    // the count's check words that.
                    continue;
                }
                return Err(bad(format!(
                    "the kernel has no input `{}` (inputs: {})",
                    d.input,
                    KernelSpec::list(&spec.input_names)
                )));
            };
            if let Some(other) = targets.donations[..k].iter().find(|e| e.from == Some(j)) {
                return Err(bad(format!(
                    "input `{}` is donated to output `{}` already; an input's buffer can be \
                     one output only",
                    d.input, other.output
                )));
            }
            let input = self.inputs[j];
            if !input.is_row_contiguous() {
                return Err(bad(if spec.ensure_row_contiguous {
                    format!(
                        "it is not row-contiguous (shape {:?}, strides {:?}), so the call would \
                         copy it first (ensure_row_contiguous) and write the copy",
                        input.shape(),
                        input.strides()
                    )
                } else {
                    format!(
                        "it is not row-contiguous (shape {:?}, strides {:?}); a kernel writes \
                         an output as a dense array",
                        input.shape(),
                        input.strides()
                    )
                }));
            }
            if !input.is_writable() {
                return Err(bad("it is read-only (its owner lent it for reading)".into()));
            }
            if self.init_value.is_some() {
                return Err(bad(
                    "init_value would fill the output, overwriting the input before the kernel \
                     reads it"
                        .into(),
                ));
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
    fn check_dims(&self, device: &Device, dims: Dims) -> Result<([u32; 3], [u32; 3])> {
        if let Some(grid) = dims.grid {
            let limits = device.limits_ref();
            let requested = dims.threadgroup.unwrap_or([256, 1, 1]);
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
                if dims.threadgroup.is_some() {
                    ok &= requested[axis] <= limits.max_group_dims[axis];
                }
            }
            if dims.threadgroup.is_some() && ok {
                // Extents are within the per-axis limits here: no overflow.
                ok &= requested[0] * requested[1] * requested[2] <= limits.max_threads_per_group;
            }
            if ok {
                return Ok((grid.map(|g| g as u32), tg.map(|t| t as u32)));
            }
        }
        self.check_dims_in_full(device, dims)
    }

    #[cold]
    #[inline(never)]
    fn check_dims_in_full(&self, device: &Device, dims: Dims) -> Result<([u32; 3], [u32; 3])> {
        let grid = dims.grid.ok_or_else(|| CallError::MissingGrid {
            kernel: self.err_kernel(),
        })?;
        let limits = device.limits();
        let bad = |what, dims, limit, reason: String| CallError::Dims {
            kernel: self.err_kernel(),
            what,
            dims,
            device: device.label().to_string(),
            limit,
            reason,
        };
        if grid.contains(&0) {
            return Err(bad("grid", grid, None, "every extent must be at least 1".into()).into());
        }
        if grid.iter().any(|&g| g > u32::MAX as u64) {
            return Err(bad(
                "grid",
                grid,
                None,
                format!("each extent must be at most {}", u32::MAX),
            )
            .into());
        }
        let total = grid.iter().try_fold(1u64, |a, &g| a.checked_mul(g));
        if total.is_none_or(|t| t > u32::MAX as u64) {
            return Err(bad(
                "grid",
                grid,
                None,
                format!(
                    "the thread count overflows 32 bits (at most {} threads)",
                    u32::MAX
                ),
            )
            .into());
        }
        let requested = dims.threadgroup.unwrap_or([256, 1, 1]);
        if requested.contains(&0) {
            return Err(bad(
                "threadgroup",
                requested,
                None,
                "every extent must be at least 1".into(),
            )
            .into());
        }
        let tg = [
            requested[0].min(grid[0]),
            requested[1].min(grid[1]),
            requested[2].min(grid[2]),
        ];
        if dims.threadgroup.is_some() {
            let per_group = requested.iter().try_fold(1u64, |a, &r| a.checked_mul(r));
            if per_group.is_none_or(|p| p > limits.max_threads_per_group) {
                return Err(bad(
                    "threadgroup",
                    requested,
                    Some(LaunchLimit::ThreadsPerGroup),
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
                        Some(LaunchLimit::GroupDims),
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
                    Some(LaunchLimit::Groups),
                    format!("at most {:?} threadgroups per axis", limits.max_groups),
                )
                .into());
            }
        }
        Ok((grid.map(|g| g as u32), tg.map(|t| t as u32)))
    }
}

/// Why an output cannot be written: it shares memory with input `j` (a
/// call's check and a rebindable launch's word it alike).
pub(super) fn shares_with_input(spec: &KernelSpec, j: usize) -> String {
    format!(
        "it shares memory with input `{}` (for an in-place kernel, donate the input to the \
         output, or allow the overlap: `.donate`/`.allow_overlap(true)` in Rust, \
         `donate=`/`allow_overlap=True` in Python)",
        spec.input_names[j]
    )
}

/// Why an output cannot be written: it shares memory with output `j`.
pub(super) fn shares_with_output(spec: &KernelSpec, j: usize) -> String {
    format!(
        "it shares memory with output `{}`",
        spec.output_names.get(j).cloned().unwrap_or_default()
    )
}

/// The checks that run once per variant, on a kernel and a variant's
/// description: template names, dtypes the dialect lacks, the body's
/// language. A call runs them on a miss of the variant cache;
/// [`Kernel::variant_on`] runs them for a variant described without arrays.
pub(crate) fn check_variant(
    kernel: &Kernel,
    dialect: Dialect,
    backend: &'static str,
    desc: &VariantDesc<'_>,
) -> Result<()> {
    let spec = kernel.spec();
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
        return Err(kernel.unsupported(backend, reason).into());
    }
    Ok(())
}
