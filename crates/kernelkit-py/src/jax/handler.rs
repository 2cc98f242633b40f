//! The FFI handler's two stages, in safe Rust over the frame that
//! [`crate::ffi::xla_ffi`] reads.
//!
//! **Instantiate** (once per call site, when XLA instantiates the
//! executable): the attributes are read and checked once, the kernel is
//! bound by its identity ([`super::identity`]), and the result is the call
//! site's [`Binding`], which XLA keeps as its state.
//!
//! **Initialize** (before an execution, never inside a command-buffer
//! capture): the variant is compiled or found (it was compiled when the
//! function was traced) and loaded on the execution's device, and a
//! kernelkit [`Rebindable`] launch is prepared for XLA's stream and the
//! buffers' layouts.
//!
//! **Execute** (every call): the state, the stream and the buffers are
//! read; a call whose stream and layouts have a prepared launch only
//! checks the buffers against it and launches with their addresses; the
//! first call of another stream (a command buffer's capture stream) or
//! layout prepares one. A call kernelkit cannot launch alone (an
//! `init_value` fill) runs the full call each time.

use std::sync::{Arc, Mutex};

use kernelkit::{Array, DType, Device, Kernel, Rebindable, Stream, TemplateArg};
use smallvec::SmallVec;

use super::identity::kernel_for;
use crate::ffi::xla_ffi::{buffer_array, run_bound, xla_stream, Attr, BufferRef, ErrorCode, Frame};

/// The platform a handler is registered for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Platform {
    /// XLA's CPU client: kernelkit's CPU device.
    Cpu,
    /// XLA's CUDA client: kernelkit's CUDA device of the same ordinal.
    Cuda,
}

type Failure = (ErrorCode, String);

fn invalid(message: impl Into<String>) -> Failure {
    (ErrorCode::InvalidArgument, message.into())
}

/// A kernelkit error as XLA's, its Python type's name first (the message
/// JAX raises keeps what kernelkit's own exception would say).
fn failure(err: kernelkit::Error) -> Failure {
    use kernelkit::Error;
    let (code, kind) = match &err {
        Error::Build(_) => (ErrorCode::InvalidArgument, "BuildError"),
        Error::Call(_) => (ErrorCode::InvalidArgument, "CallError"),
        Error::Array(_) => (ErrorCode::InvalidArgument, "ArrayError"),
        Error::Compile(_) => (ErrorCode::Internal, "CompileError"),
        Error::Device(_) => (ErrorCode::FailedPrecondition, "DeviceError"),
        _ => (ErrorCode::Internal, "KernelError"),
    };
    (code, format!("kernelkit.{kind}: {err}"))
}

/// One call site, bound at instantiation: the kernel and everything of
/// the call that the attributes fix.
pub(crate) struct Binding {
    kernel: Kernel,
    template: Vec<(String, TemplateArg)>,
    grid: [u64; 3],
    threadgroup: [u64; 3],
    init_value: Option<f64>,
    /// Outputs alias inputs (`input_output_aliases`): in place.
    aliased: bool,
    /// The kernel handles a leading batch axis (`vmap`).
    batched: bool,
    /// The declared rank of each output (a batched call's outputs have more).
    out_ranks: Vec<usize>,
    shared_memory: u32,
    /// Launches prepared per stream and layout (a call site sees one or
    /// two: XLA's stream, and a command buffer's capture stream).
    bound: Mutex<Vec<Arc<Bound>>>,
}

/// A launch prepared for one stream and one layout of the buffers.
struct Bound {
    stream: u64,
    ordinal: u32,
    layouts: Vec<(i32, SmallVec<[i64; 4]>)>,
    launch: Option<Rebindable>,
}

impl Bound {
    fn new(
        stream: u64,
        ordinal: u32,
        buffers: &[BufferRef<'_>],
        launch: Option<Rebindable>,
    ) -> Bound {
        Bound {
            stream,
            ordinal,
            layouts: buffers
                .iter()
                .map(|b| (b.xla_dtype, b.dims.iter().copied().collect()))
                .collect(),
            launch,
        }
    }

    fn fits(&self, stream: u64, ordinal: u32, buffers: &[BufferRef<'_>]) -> bool {
        self.stream == stream
            && self.ordinal == ordinal
            && self.layouts.len() == buffers.len()
            && self
                .layouts
                .iter()
                .zip(buffers)
                .all(|((d, dims), b)| *d == b.xla_dtype && dims.as_slice() == b.dims)
    }
}

fn ints(attr: &Attr<'_>, name: &str) -> Result<Vec<i64>, Failure> {
    match attr {
        Attr::Ints(v) => Ok(v.to_vec()),
        other => Err(invalid(format!(
            "kernelkit: attribute `{name}` must be an int64 array, got {}",
            other.kind()
        ))),
    }
}

fn extent3(v: Vec<i64>, name: &str) -> Result<[u64; 3], Failure> {
    match v.as_slice() {
        &[x, y, z] if x >= 0 && y >= 0 && z >= 0 => Ok([x as u64, y as u64, z as u64]),
        _ => Err(invalid(format!(
            "kernelkit: attribute `{name}` must be three extents, got {v:?}"
        ))),
    }
}

/// The template arguments of their JSON form, `[[name, kind, value], ...]`
/// (kind `int`, `bool` or `dtype`), as `kernelkit.jax` writes them.
pub(crate) fn parse_template(
    kernel: &str,
    text: &str,
) -> Result<Vec<(String, TemplateArg)>, String> {
    let bad = || format!("kernel `{kernel}`: the template attribute is malformed: {text}");
    let list: Vec<(String, String, serde_json::Value)> =
        serde_json::from_str(text).map_err(|_| bad())?;
    list.into_iter()
        .map(|(name, kind, value)| {
            let arg = match (kind.as_str(), &value) {
                ("int", v) => TemplateArg::Int(
                    v.as_i64()
                        .and_then(|i| i32::try_from(i).ok())
                        .ok_or_else(bad)?,
                ),
                ("bool", serde_json::Value::Bool(b)) => TemplateArg::Bool(*b),
                ("dtype", serde_json::Value::String(s)) => {
                    TemplateArg::DType(DType::from_name(s).ok_or_else(bad)?)
                }
                _ => return Err(bad()),
            };
            Ok((name, arg))
        })
        .collect()
}

/// The instantiate stage: the call site's [`Binding`], handed to XLA.
pub(crate) fn instantiate(frame: &Frame<'_>, platform: Platform) -> Result<(), Failure> {
    let attrs = frame.attrs().map_err(invalid)?;
    let get = |name: &str| attrs.iter().find(|(n, _)| *n == name).map(|(_, a)| a);
    let text = |name: &str| match get(name) {
        Some(Attr::Str(s)) => Ok(*s),
        _ => Err(invalid(format!(
            "kernelkit: the call has no string attribute `{name}`"
        ))),
    };
    let (kernel, spec) = kernel_for(text("kernel")?, text("spec")?).map_err(invalid)?;
    let template = parse_template(&spec.name, text("template")?).map_err(invalid)?;
    let need = |name: &str| {
        get(name).ok_or_else(|| invalid(format!("kernelkit: the call has no attribute `{name}`")))
    };
    let grid = extent3(ints(need("grid")?, "grid")?, "grid")?;
    let threadgroup = extent3(ints(need("threadgroup")?, "threadgroup")?, "threadgroup")?;
    let init_value = match text("init_value")? {
        "" => None,
        v => Some(
            v.parse::<f64>()
                .map_err(|_| invalid(format!("kernelkit: init_value {v:?} is not a number")))?,
        ),
    };
    let aliased = matches!(get("aliased"), Some(Attr::Int(v)) if *v != 0);
    let out_ranks = ints(need("out_ranks")?, "out_ranks")?
        .into_iter()
        .map(|r| usize::try_from(r).unwrap_or(0))
        .collect();
    let binding = Binding {
        kernel,
        template,
        grid,
        threadgroup,
        init_value,
        aliased,
        batched: spec.batched,
        out_ranks,
        shared_memory: spec.shared_memory,
        bound: Mutex::new(Vec::new()),
    };
    frame
        .set_state(platform, binding)
        .map_err(|m| (ErrorCode::Internal, m))
}

/// The stream and device ordinal of a call on `platform`.
fn place(frame: &Frame<'_>, platform: Platform) -> Result<(u64, u32), Failure> {
    Ok(match platform {
        Platform::Cpu => (0, 0),
        Platform::Cuda => (
            frame.stream().map_err(|m| (ErrorCode::Internal, m))?,
            frame.device_ordinal().unwrap_or(0),
        ),
    })
}

/// The initialize stage (before an execution, outside any command-buffer
/// capture): the variant compiled or found and loaded on the execution's
/// device, and the launch for this stream and layout prepared, so that
/// execution, captured or not, only launches. A warm-up: a failure here is
/// left for the execution to report in its words.
pub(crate) fn initialize(frame: &Frame<'_>, platform: Platform) -> Result<(), Failure> {
    let Ok(binding) = frame.state(platform) else {
        return Ok(());
    };
    let Ok((stream, ordinal)) = place(frame, platform) else {
        return Ok(());
    };
    let mut buffers: SmallVec<[BufferRef<'_>; 8]> = SmallVec::new();
    if frame.buffers(false, &mut buffers).is_err() {
        return Ok(());
    }
    let n_in = buffers.len();
    if frame.buffers(true, &mut buffers).is_err()
        || binding.find(stream, ordinal, &buffers).is_some()
    {
        return Ok(());
    }
    if let Ok(launch) = binding.call(platform, stream, ordinal, &buffers, n_in, Mode::Prepare) {
        binding.keep(Bound::new(stream, ordinal, &buffers, launch));
    }
    Ok(())
}

/// The execute stage: launches the bound kernel on XLA's buffers and stream.
pub(crate) fn execute(frame: &Frame<'_>, platform: Platform) -> Result<(), Failure> {
    let binding = frame
        .state(platform)
        .map_err(|m| (ErrorCode::Internal, m))?;
    let (stream, ordinal) = place(frame, platform)?;
    let mut buffers: SmallVec<[BufferRef<'_>; 8]> = SmallVec::new();
    frame.buffers(false, &mut buffers).map_err(invalid)?;
    let n_in = buffers.len();
    frame.buffers(true, &mut buffers).map_err(invalid)?;
    let Some(bound) = binding.find(stream, ordinal, &buffers) else {
        // The first call of this stream and layout: prepared and run.
        let launch = binding.call(
            platform,
            stream,
            ordinal,
            &buffers,
            n_in,
            Mode::PrepareAndRun,
        )?;
        binding.keep(Bound::new(stream, ordinal, &buffers, launch));
        return Ok(());
    };
    let addrs: SmallVec<[u64; 8]> = buffers.iter().map(|b| b.data).collect();
    match &bound.launch {
        Some(launch) => run_bound(launch, &addrs[..n_in], &addrs[n_in..]).map_err(failure),
        None => binding
            .call(platform, stream, ordinal, &buffers, n_in, Mode::Run)
            .map(|_| ()),
    }
}

/// What [`Binding::call`] does with the call it makes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Runs it (the full call).
    Run,
    /// Makes its rebindable launch, if it has one, and runs the call.
    PrepareAndRun,
    /// Compiles and loads its variant and makes its rebindable launch;
    /// runs nothing.
    Prepare,
}

impl Binding {
    /// The grid of a call with these result buffers: the declared one, its
    /// z extent times the batch when the kernel handles a leading batch
    /// axis and the outputs have one.
    fn grid_for(&self, outputs: &[BufferRef<'_>]) -> Result<[u64; 3], Failure> {
        let mut grid = self.grid;
        if let (true, Some(out), Some(&rank)) =
            (self.batched, outputs.first(), self.out_ranks.first())
        {
            let extra = out.dims.len().saturating_sub(rank);
            let batch: i64 = out.dims[..extra].iter().product();
            grid[2] = grid[2].checked_mul(batch.max(0) as u64).ok_or_else(|| {
                invalid(format!(
                    "kernel `{}`: the batched grid overflows",
                    self.kernel.name()
                ))
            })?;
        }
        Ok(grid)
    }

    /// The launch prepared for this stream and layout, if one was.
    fn find(&self, stream: u64, ordinal: u32, buffers: &[BufferRef<'_>]) -> Option<Arc<Bound>> {
        let kept = self.bound.lock().unwrap_or_else(|p| p.into_inner());
        kept.iter()
            .find(|b| b.fits(stream, ordinal, buffers))
            .cloned()
    }

    /// Keeps a prepared launch (the oldest goes past eight).
    fn keep(&self, bound: Bound) {
        let mut kept = self.bound.lock().unwrap_or_else(|p| p.into_inner());
        if kept.len() >= 8 {
            kept.remove(0);
        }
        kept.push(Arc::new(bound));
    }

    /// The kernelkit call over the buffers, as `mode` says; its rebindable
    /// launch (when one was made) to keep.
    fn call(
        &self,
        platform: Platform,
        stream: u64,
        ordinal: u32,
        buffers: &[BufferRef<'_>],
        n_in: usize,
        mode: Mode,
    ) -> Result<Option<Rebindable>, Failure> {
        let name = self.kernel.name();
        let device = match platform {
            Platform::Cpu => Device::cpu(),
            // The package's device (kk.gpu's), opened when the call was
            // traced; else the process-wide one.
            Platform::Cuda => match crate::device::opened_cuda(ordinal) {
                Some(device) => device,
                None => Device::cuda(ordinal).map_err(failure)?,
            },
        };
        let xla: Option<Stream> = match platform {
            Platform::Cpu => None,
            Platform::Cuda => Some(xla_stream(&device, stream).map_err(failure)?),
        };
        let spec = self.kernel.spec();
        let mut arrays: SmallVec<[Array; 8]> = SmallVec::new();
        for (i, b) in buffers.iter().enumerate() {
            let (role, names, j) = match i.checked_sub(n_in) {
                None => ("input", spec.input_names(), i),
                Some(j) => ("output", spec.output_names(), j),
            };
            let arg = names.get(j).map_or("?", String::as_str);
            let dtype = b.dtype.ok_or_else(|| {
                invalid(format!("kernel `{name}`: {role} `{arg}` has an element type kernelkit has no dtype of (XLA type {})", b.xla_dtype))
            })?;
            let shape = b
                .dims
                .iter()
                .map(|&d| usize::try_from(d))
                .collect::<Result<SmallVec<[usize; 4]>, _>>()
                .map_err(|_| {
                    invalid(format!(
                        "kernel `{name}`: {role} `{arg}` has a negative extent"
                    ))
                })?;
            arrays.push(
                buffer_array(&device, b, dtype, &shape, xla.as_ref(), i < n_in).map_err(failure)?,
            );
        }
        let grid = self.grid_for(&buffers[n_in..])?;
        let mut call = self
            .kernel
            .call(arrays[..n_in].iter())
            .grid(grid)
            .threadgroup(self.threadgroup)
            .shared_memory(self.shared_memory)
            .on(xla.as_ref().unwrap_or_else(|| device.default_stream()));
        for (n, v) in &self.template {
            call = call.template(n.as_str(), *v);
        }
        for a in &arrays[n_in..] {
            call = call.output_into(a);
        }
        call = call.allow_overlap(self.aliased);
        if let Some(v) = self.init_value {
            call = call.init_value(v);
        }
        if mode == Mode::Prepare {
            call.compile().map_err(failure)?;
            return call.rebindable().map_err(failure);
        }
        if mode == Mode::PrepareAndRun {
            if let Some(launch) = call.rebindable().map_err(failure)? {
                let addrs: SmallVec<[u64; 8]> = buffers.iter().map(|b| b.data).collect();
                run_bound(&launch, &addrs[..n_in], &addrs[n_in..]).map_err(failure)?;
                return Ok(Some(launch));
            }
        }
        call.launch().map_err(failure)?;
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_parse_and_refuse_malformed_texts() {
        let t = parse_template(
            "k",
            r#"[["N", "int", 3], ["B", "bool", true], ["T", "dtype", "float32"]]"#,
        )
        .unwrap();
        assert_eq!(t.len(), 3);
        assert!(matches!(t[0].1, TemplateArg::Int(3)));
        assert!(matches!(t[1].1, TemplateArg::Bool(true)));
        assert!(matches!(t[2].1, TemplateArg::DType(DType::F32)));
        for bad in [
            r#"[["N", "int", 1e20]]"#,
            r#"[["T", "dtype", "nope"]]"#,
            "{",
            r#"[["N", "float", 1]]"#,
        ] {
            let err = parse_template("k", bad).unwrap_err();
            assert!(err.contains("kernel `k`"), "{err}");
        }
    }
}
