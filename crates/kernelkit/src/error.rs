//! Typed errors, one small enum per concern, joined in [`Error`].
//!
//! Every message names the kernel and the argument at fault and says what was
//! expected, because a user reading it has the kernel's spec in front of them,
//! not kernelkit's source.

use std::sync::Arc;

use crate::dtype::DType;

/// Any error kernelkit returns.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The kernel spec is invalid (found by [`KernelBuilder::build`](crate::KernelBuilder::build)).
    #[error(transparent)]
    Build(#[from] BuildError),
    /// A call's arguments do not fit the kernel or the device.
    #[error(transparent)]
    Call(#[from] CallError),
    /// The backend compiler rejected the generated source, or could not run.
    #[error(transparent)]
    Compile(#[from] CompileError),
    /// An array operation (view, copy, read back) failed.
    #[error(transparent)]
    Array(#[from] ArrayError),
    /// A device could not be opened or failed while running work.
    #[error(transparent)]
    Device(#[from] DeviceError),
    /// Autotuning could not choose a launch configuration.
    #[error(transparent)]
    Tune(#[from] TuneError),
}

/// Why autotuning a call (`Call::tuned`) could not choose a launch
/// configuration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TuneError {
    /// The tuning lists no configuration.
    #[error("kernel `{kernel}`: autotune needs at least one configuration")]
    NoConfigs {
        /// The kernel's name.
        kernel: String,
    },
    /// A configuration cannot be applied to the call.
    #[error("kernel `{kernel}`: configuration `{config}` is not usable: {reason}")]
    BadConfig {
        /// The kernel's name.
        kernel: String,
        /// The configuration (its canonical text).
        config: String,
        /// What is wrong with it.
        reason: String,
    },
    /// No record exists for the call's tuning key although a choice was
    /// made (the choice was the untimed fallback: compiling forbidden, or
    /// the fleet's lease not granted in time).
    #[error("kernel `{kernel}`: tuning key `{key}` has no record (its configuration was chosen untimed)")]
    NoRecord {
        /// The kernel's name.
        kernel: String,
        /// The tuning key's text.
        key: String,
    },
    /// Every configuration failed to compile or launch.
    #[error("kernel `{kernel}`: every autotune configuration failed: {errors}")]
    AllFailed {
        /// The kernel's name.
        kernel: String,
        /// Each configuration and its error, `; `-separated.
        errors: String,
    },
}

/// Shorthand for results in this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A kernel spec that cannot become a kernel.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// A name is not a C identifier, or is a reserved word.
    #[error("kernel `{kernel}`: {role} name `{name}` is not usable: {reason}")]
    InvalidName {
        /// The kernel's name (may itself be the bad name).
        kernel: String,
        /// `kernel`, `input`, `output` or `template`.
        role: &'static str,
        /// The offending name (escaped for display).
        name: String,
        /// Why it is refused.
        reason: &'static str,
    },
    /// Two names collide in the generated source.
    #[error("kernel `{kernel}`: {role} name `{name}` collides with {other}")]
    DuplicateName {
        /// The kernel's name.
        kernel: String,
        /// Role of the second name.
        role: &'static str,
        /// The name.
        name: String,
        /// What it collides with, e.g. "input `inp`" or "the generated `inp_shape`".
        other: String,
    },
    /// The output list is empty.
    #[error("kernel `{kernel}`: at least one output name is required")]
    NoOutputs {
        /// The kernel's name.
        kernel: String,
    },
    /// The body or header contains a NUL byte, which cannot be compiled.
    #[error("kernel `{kernel}`: the {field} contains a NUL byte at offset {offset}")]
    NulByte {
        /// The kernel's name.
        kernel: String,
        /// `source` or `header`.
        field: &'static str,
        /// Byte offset of the first NUL.
        offset: usize,
    },
}

/// What a bounds-checked call found outside an argument
/// ([`CallError::OutOfBounds`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum OutOfBounds {
    /// An access through the argument's checked view (its name in the
    /// body): the element index, relative to the pointer the kernel got,
    /// outside the view's span of indices `[lo, hi)`.
    View {
        /// The element index.
        index: i64,
        /// The view's span: the lowest index and one past the highest.
        span: (i64, i64),
        /// `thread_position_in_threadgroup` of the thread.
        thread: [u32; 3],
        /// `threadgroup_position_in_grid` of the thread.
        group: [u32; 3],
    },
    /// A write past the end of a buffer kernelkit allocated (an output, a
    /// copy of an input), found in the guard region after it once the
    /// launch ended: made through a raw pointer or a cast, so no thread is
    /// known.
    Guard {
        /// The first changed byte, from the start of the buffer.
        byte_offset: u64,
        /// The buffer's size in bytes.
        bytes: u64,
    },
}

impl std::fmt::Display for OutOfBounds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OutOfBounds::View {
                index,
                span: (lo, hi),
                thread,
                group,
            } => write!(
                f,
                "accessed out of bounds at index {index} (its view spans [{lo}, {hi}), {} \
                 element(s)) by thread ({}, {}, {}) of threadgroup ({}, {}, {})",
                hi - lo,
                thread[0],
                thread[1],
                thread[2],
                group[0],
                group[1],
                group[2]
            ),
            OutOfBounds::Guard { byte_offset, bytes } => write!(
                f,
                "written past its end at byte {byte_offset} of its {bytes}-byte buffer (found \
                 in the guard region after the launch: a write through a raw pointer or a cast)"
            ),
        }
    }
}

/// A launch limit a call broke ([`CallError::Dims`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LaunchLimit {
    /// The device's most threads in one threadgroup
    /// ([`Limits::max_threads_per_group`](crate::Limits::max_threads_per_group)).
    ThreadsPerGroup,
    /// The device's most threads along each axis of a threadgroup
    /// ([`Limits::max_group_dims`](crate::Limits::max_group_dims)).
    GroupDims,
    /// The device's most threadgroups along each axis
    /// ([`Limits::max_groups`](crate::Limits::max_groups)).
    Groups,
    /// Shared memory per threadgroup
    /// ([`Limits::max_shared_bytes`](crate::Limits::max_shared_bytes)): on
    /// CUDA, the function's static and the call's dynamic bytes together.
    SharedBytes,
    /// CUDA: the most threads per block the compiled function allows (its
    /// registers can make it fewer than the device's).
    FunctionThreads,
}

impl LaunchLimit {
    /// The limit's name, as in [`Limits`](crate::Limits) (and, for the
    /// function's, as the driver's attribute).
    pub fn name(self) -> &'static str {
        match self {
            LaunchLimit::ThreadsPerGroup => "max_threads_per_group",
            LaunchLimit::GroupDims => "max_group_dims",
            LaunchLimit::Groups => "max_groups",
            LaunchLimit::SharedBytes => "max_shared_bytes",
            LaunchLimit::FunctionThreads => "the compiled function's max_threads_per_block",
        }
    }
}

/// A call whose arguments do not fit its kernel, its device or the backend.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    /// Wrong number of inputs.
    #[error("kernel `{kernel}`: expected {expected} input(s) ({names}), got {got}")]
    InputCount {
        /// The kernel's name.
        kernel: String,
        /// Inputs the kernel declares.
        expected: usize,
        /// Inputs given.
        got: usize,
        /// The declared input names, comma separated.
        names: String,
    },
    /// Wrong number of outputs.
    #[error("kernel `{kernel}`: expected {expected} output(s) ({names}), got {got}")]
    OutputCount {
        /// The kernel's name.
        kernel: String,
        /// Outputs the kernel declares.
        expected: usize,
        /// Outputs given (shape + dtype pairs).
        got: usize,
        /// The declared output names, comma separated.
        names: String,
    },
    /// An output shape has a zero or negative extent, or its size overflows.
    #[error("kernel `{kernel}`: output `{output}` has shape {shape:?}: {reason}")]
    OutputShape {
        /// The kernel's name.
        kernel: String,
        /// The output's name.
        output: String,
        /// The shape given.
        shape: Vec<i64>,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// An input's layout cannot be passed to the kernel as declared.
    #[error("kernel `{kernel}`: input `{input}` has shape {shape:?}: {reason}")]
    InputShape {
        /// The kernel's name.
        kernel: String,
        /// The input's name.
        input: String,
        /// The input's shape.
        shape: Vec<usize>,
        /// What does not fit.
        reason: &'static str,
    },
    /// A template argument name is invalid or collides.
    #[error("kernel `{kernel}`: template argument `{name}` {reason}")]
    TemplateName {
        /// The kernel's name.
        kernel: String,
        /// The template argument's name (escaped).
        name: String,
        /// Why it is refused.
        reason: String,
    },
    /// A grid or threadgroup extent is zero or over the device's limit, or
    /// shared memory over it (or, on CUDA, over the compiled function's
    /// own): refused before anything is launched.
    #[error(
        "kernel `{kernel}`: {what} {dims:?} on {device}: {reason}{}",
        .limit.map(|l| format!(" (limit: {})", l.name())).unwrap_or_default()
    )]
    Dims {
        /// The kernel's name.
        kernel: String,
        /// `grid` or `threadgroup`.
        what: &'static str,
        /// The extents given.
        dims: [u64; 3],
        /// The device label.
        device: String,
        /// Which limit is broken; `None` for a value no device takes (a
        /// zero extent, an overflow).
        limit: Option<LaunchLimit>,
        /// What limit is broken, in words, with its value.
        reason: String,
    },
    /// The backend has no such element type.
    #[error(
        "kernel `{kernel}`: {arg} has dtype {dtype}, which the {backend} backend does not support"
    )]
    UnsupportedDType {
        /// The kernel's name.
        kernel: String,
        /// "input `x`", "output `y`" or "template argument `T`".
        arg: String,
        /// The dtype.
        dtype: DType,
        /// The backend's name.
        backend: &'static str,
    },
    /// An array lives on another device than the call runs on.
    #[error("kernel `{kernel}`: input `{input}` is {dtype} on device {array_device}, but the call runs on {call_device}")]
    WrongDevice {
        /// The kernel's name.
        kernel: String,
        /// The input's name.
        input: String,
        /// The input's dtype.
        dtype: DType,
        /// Where the array lives.
        array_device: String,
        /// Where the call runs.
        call_device: String,
    },
    /// A kernel with bounds checks
    /// ([`KernelBuilder::check_bounds`](crate::KernelBuilder::check_bounds))
    /// accessed an argument outside its view, or wrote past the end of a
    /// buffer kernelkit allocated for the call. The first violation of the
    /// launch; the access was skipped (a view) or landed in the guard
    /// region (a buffer), so nothing outside the arguments was written.
    #[error("kernel `{kernel}`: {role} `{argument}` {access}")]
    OutOfBounds {
        /// The kernel's name.
        kernel: String,
        /// `input` or `output`.
        role: &'static str,
        /// The argument's name.
        argument: String,
        /// What was accessed, and by which thread (boxed: it is the
        /// largest field of any error, and errors travel in `Result`s).
        access: Box<OutOfBounds>,
    },
    /// The body needs something this backend cannot provide.
    #[error("kernel `{kernel}`: the {backend} backend cannot run this body: {reason}")]
    Unsupported {
        /// The kernel's name.
        kernel: String,
        /// The backend's name.
        backend: &'static str,
        /// What is missing.
        reason: String,
    },
    /// `init_value` is not representable in an output's dtype.
    #[error(
        "kernel `{kernel}`: init_value {value} does not fit output `{output}` of dtype {dtype}"
    )]
    InitValue {
        /// The kernel's name.
        kernel: String,
        /// The output's name.
        output: String,
        /// The output's dtype.
        dtype: DType,
        /// The value given.
        value: f64,
    },
    /// An output's memory could not be allocated (its shape asks for more
    /// than the device can hold).
    #[error("kernel `{kernel}`: cannot allocate output `{output}` ({bytes} bytes) on {device}: {reason}")]
    OutputAlloc {
        /// The kernel's name.
        kernel: String,
        /// The output's name.
        output: String,
        /// The bytes asked for.
        bytes: usize,
        /// The device label.
        device: String,
        /// The device's error.
        reason: String,
    },
    /// A call on a stream that is being captured into a CUDA graph would
    /// do something a capture forbids: compile or load its variant, wait
    /// on the host for another stream, or allocate memory on a device that
    /// cannot allocate under a capture (no stream-ordered memory pool; or,
    /// for a strided input's copy, a copy kernel not loaded yet). Refused
    /// before anything is queued, so the capture stays valid.
    ///
    /// What a capture allows: a warm call is captured as a kernel node;
    /// outputs given with `Call::output_into` are written in place; outputs
    /// kernelkit allocates are *graph allocations* (allocation nodes of the
    /// graph, from the device's stream-ordered pool, never shared with
    /// ordinary arrays), with CUDA's rules: read such an array only after
    /// a launch of the graph; dropped during the capture it is freed by the
    /// graph itself (a free node); kept past the capture it must be dropped
    /// before the graph is launched again, unless the graph was
    /// instantiated with `CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH`
    /// (then each launch makes it again at the same address and the array
    /// holds the latest results; drop it after the last launch, ordered
    /// after it). `docs/pytorch.md` ("CUDA graphs") has the details.
    #[error(
        "kernel `{kernel}`: {what} while a stream it uses is being captured into a CUDA graph: \
         {advice}"
    )]
    Capturing {
        /// The kernel's name.
        kernel: String,
        /// What the call would have done (names the argument, if any).
        what: String,
        /// How to make the call capturable.
        advice: &'static str,
    },
    /// An array given to `output_into` cannot take the output.
    #[error(
        "kernel `{kernel}`: output `{output}` cannot be written into the array given: {reason}"
    )]
    OutputTarget {
        /// The kernel's name.
        kernel: String,
        /// The output's name.
        output: String,
        /// What does not fit.
        reason: String,
    },
    /// A donation (`Call::donate`: an output that is an input's own
    /// buffer) the call cannot make: a name that is not the kernel's, an
    /// input donated twice, an input that is read-only or that the call
    /// would copy (not row-contiguous), or a shape, dtype or fill that
    /// does not fit.
    #[error("kernel `{kernel}`: output `{output}` cannot be input `{input}`'s buffer: {reason}")]
    Donation {
        /// The kernel's name.
        kernel: String,
        /// The output's name, as the call gave it.
        output: String,
        /// The input's name, as the call gave it.
        input: String,
        /// What does not fit.
        reason: String,
    },
    /// An argument views memory another library owns and cannot be used
    /// as the call asks (its borrow ended, its owner's stream is missing).
    #[error("kernel `{kernel}`: {arg} {reason}")]
    Foreign {
        /// The kernel's name.
        kernel: String,
        /// "input `x`" or "output `y`".
        arg: String,
        /// What is wrong.
        reason: String,
    },
    /// The variant is in no cache tier (memory, artifact store, fleet)
    /// and the process forbids compiles (`KERNELKIT_JIT=forbid`). Raised
    /// before anything is allocated or queued.
    #[error(
        "kernel `{kernel}`: variant {variant} is not compiled for {arch} on {device}, and JIT is \
         forbidden (KERNELKIT_JIT=forbid): record it, precompile it \
         (`kernelkit precompile --manifest`) and import the bundle"
    )]
    JitForbidden {
        /// The kernel's name.
        kernel: String,
        /// The variant: its template values, input dtypes and shapes, output
        /// dtypes and shapes.
        variant: String,
        /// The architecture it would be compiled for (`sm_90a`, `native`).
        arch: String,
        /// The device (`cpu`, `cuda:0`).
        device: String,
    },
    /// No grid was given.
    #[error("kernel `{kernel}`: the call has no grid; set one with `.grid([x, y, z])`")]
    MissingGrid {
        /// The kernel's name.
        kernel: String,
    },
}

/// The compiler did not produce a loadable artifact.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum CompileError {
    /// The compiler ran and rejected the source.
    #[error("kernel `{kernel}`: {compiler} failed to compile `{function}`:\n{log}")]
    Rejected {
        /// The kernel's name.
        kernel: String,
        /// The generated function (variant) name.
        function: String,
        /// The compiler that ran (`c++`, `nvrtc 13.0`, ...).
        compiler: String,
        /// The compiler's log, with line numbers mapped into the user's body
        /// where they fall inside it.
        log: String,
        /// The generated source, for [`CompileError::source_code`].
        generated: Arc<str>,
    },
    /// The compiler could not be started, timed out or crashed.
    #[error("kernel `{kernel}`: compiler `{compiler}` could not run: {reason}")]
    Compiler {
        /// The kernel's name.
        kernel: String,
        /// The compiler command.
        compiler: String,
        /// What went wrong.
        reason: String,
    },
    /// The artifact was produced but could not be loaded.
    #[error("kernel `{kernel}`: could not load `{function}`: {reason}")]
    Load {
        /// The kernel's name.
        kernel: String,
        /// The function name.
        function: String,
        /// What went wrong.
        reason: String,
    },
}

impl CompileError {
    /// The generated source the compiler saw, where known.
    pub fn source_code(&self) -> Option<&str> {
        match self {
            CompileError::Rejected { generated, .. } => Some(generated),
            _ => None,
        }
    }

    /// The compiler's log, where there is one.
    pub fn log(&self) -> Option<&str> {
        match self {
            CompileError::Rejected { log, .. } => Some(log),
            _ => None,
        }
    }
}

/// An array operation that cannot be done.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ArrayError {
    /// The data length does not match the shape.
    #[error("array: {len} elements given for shape {shape:?} ({expected} elements)")]
    Length {
        /// Elements given.
        len: usize,
        /// The shape.
        shape: Vec<usize>,
        /// Elements the shape holds.
        expected: usize,
    },
    /// The element type asked for is not the array's.
    #[error("array: read as {asked}, but the array is {actual}")]
    DType {
        /// The Rust element's dtype.
        asked: DType,
        /// The array's dtype.
        actual: DType,
    },
    /// A view's arguments do not fit the array.
    #[error("array: {0}")]
    View(String),
    /// The shape's element count or byte size overflows.
    #[error("array: shape {0:?} is too large")]
    Overflow(Vec<usize>),
    /// A description of foreign memory (a pointer, its layout, its device)
    /// that kernelkit cannot use safely.
    #[error("foreign array: {0}")]
    Foreign(String),
    /// The array views borrowed memory whose borrow has ended.
    #[error("array: it views borrowed memory whose scope has ended")]
    Revoked,
    /// One of a call's arguments, named: the array a caller passed as it
    /// (an address given to a prepared launch, a binding's foreign array)
    /// cannot be used.
    #[error("kernel `{kernel}`: {argument}: {error}")]
    Argument {
        /// The kernel called.
        kernel: String,
        /// Which argument: ``input `x` ``, ``output `y` ``.
        argument: String,
        /// What is wrong with it.
        error: Box<ArrayError>,
    },
}

impl ArrayError {
    /// `error`, said of `kernel`'s `argument` (``input `x` ``); errors of
    /// other kinds are left as they are.
    pub fn of_argument(error: Error, kernel: &str, argument: &dyn std::fmt::Display) -> Error {
        match error {
            Error::Array(error) => ArrayError::Argument {
                kernel: kernel.to_string(),
                argument: argument.to_string(),
                error: Box::new(error),
            }
            .into(),
            other => other,
        }
    }
}

/// A device that cannot be opened or used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DeviceError {
    /// The backend was not compiled in.
    #[error("device {device}: kernelkit was built without the `{feature}` feature")]
    NotBuilt {
        /// The device asked for.
        device: String,
        /// The cargo feature that would add it.
        feature: &'static str,
    },
    /// The driver or device is not there.
    #[error("device {device} is not available: {reason}")]
    Unavailable {
        /// The device asked for.
        device: String,
        /// Why.
        reason: String,
    },
    /// The device failed while running work; it cannot be used any more.
    #[error("device {device} failed and is no longer usable: {reason}")]
    Faulted {
        /// The device.
        device: String,
        /// The driver's error.
        reason: String,
    },
    /// Work did not finish in the time a caller allowed
    /// ([`Stream::synchronize_timeout`](crate::Stream::synchronize_timeout)).
    /// It may still be running: the device is no longer usable (later
    /// operations fail at once, as after a fault).
    #[error("device {device}: work on the stream did not finish within {after:?}; the device is no longer usable")]
    TimedOut {
        /// The device.
        device: String,
        /// The time allowed.
        after: std::time::Duration,
    },
    /// A driver call failed.
    #[error("device {device}: {operation} failed: {reason}")]
    Driver {
        /// The device.
        device: String,
        /// What was being done.
        operation: &'static str,
        /// The driver's error.
        reason: String,
    },
}

/// Escapes a user-supplied name for display in an error message.
pub(crate) fn shown(name: &str) -> String {
    name.escape_debug().to_string()
}
