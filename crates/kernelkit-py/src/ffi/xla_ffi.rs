//! XLA's FFI, the C ABI of `xla/ffi/api/c_api.h` (shipped with jaxlib,
//! `jax.ffi.include_dir()`), as far as kernelkit's handler uses it: the
//! call frame, buffers, attributes, errors, the stream, the device ordinal
//! and the per-call-site state.
//!
//! The raw structs mirror the header field for field (`#[repr(C)]`); every
//! struct XLA reads carries its `struct_size`, which XLA checks to be at
//! least its own. The rest of the crate sees [`Frame`]: the stage, the
//! attributes as [`Attr`]s, the buffers as [`BufferRef`]s, the stream and
//! the state, each read here once and checked where it can be (counts,
//! kinds, null pointers). The handlers themselves (`extern "C"`) are here
//! too; they call the safe [`crate::jax::handler`] and turn its errors into
//! XLA's, catching any panic (a panic must not unwind into XLA).

use std::cell::UnsafeCell;
use std::ffi::{c_char, c_void, CString};
use std::sync::atomic::{AtomicI32, Ordering};

use kernelkit::DType;
use pyo3::prelude::*;

use crate::jax::handler::{self, Platform};

// ---------------------------------------------------------------------------
// The header's structs (XLA FFI API 0.x).

#[repr(C)]
struct ExtensionBase {
    struct_size: usize,
    kind: i32,
    next: *mut ExtensionBase,
}

/// `XLA_FFI_Extension_Metadata`.
const EXTENSION_METADATA: i32 = 1;

#[repr(C)]
#[derive(Clone, Copy)]
struct ApiVersion {
    struct_size: usize,
    extension_start: *mut ExtensionBase,
    major_version: i32,
    minor_version: i32,
}

#[repr(C)]
struct ByteSpan {
    ptr: *const c_char,
    len: usize,
}

#[repr(C)]
struct RawBuffer {
    struct_size: usize,
    extension_start: *mut ExtensionBase,
    dtype: i32,
    data: *mut c_void,
    rank: i64,
    dims: *mut i64,
}

#[repr(C)]
struct RawScalar {
    dtype: i32,
    value: *mut c_void,
}

#[repr(C)]
struct RawArray {
    dtype: i32,
    size: usize,
    data: *mut c_void,
}

/// `XLA_FFI_TypeId`.
#[repr(C)]
#[derive(Clone, Copy)]
struct TypeId {
    type_id: i64,
}

#[repr(C)]
struct TypeInfo {
    struct_size: usize,
    extension_start: *mut ExtensionBase,
    deleter: Option<unsafe extern "C" fn(*mut c_void)>,
}

#[repr(C)]
struct RawArgs {
    struct_size: usize,
    extension_start: *mut ExtensionBase,
    size: i64,
    types: *mut i32,
    args: *mut *mut c_void,
}

#[repr(C)]
struct RawAttrs {
    struct_size: usize,
    extension_start: *mut ExtensionBase,
    size: i64,
    types: *mut i32,
    names: *mut *mut ByteSpan,
    attrs: *mut *mut c_void,
}

#[repr(C)]
struct CallFrame {
    struct_size: usize,
    extension_start: *mut ExtensionBase,
    api: *const Api,
    ctx: *mut c_void,
    stage: i32,
    args: RawArgs,
    rets: RawArgs,
    attrs: RawAttrs,
    future: *mut c_void,
}

#[repr(C)]
struct Metadata {
    struct_size: usize,
    api_version: ApiVersion,
    traits: u32,
    state_type_id: TypeId,
}

#[repr(C)]
struct MetadataExtension {
    extension_base: ExtensionBase,
    metadata: *mut Metadata,
}

/// `XLA_FFI_Error` is opaque.
#[repr(C)]
pub(crate) struct XlaError {
    _opaque: [u8; 0],
}

#[repr(C)]
struct ErrorCreateArgs {
    struct_size: usize,
    extension_start: *mut ExtensionBase,
    message: *const c_char,
    errc: i32,
}

#[repr(C)]
struct StreamGetArgs {
    struct_size: usize,
    extension_start: *mut ExtensionBase,
    ctx: *mut c_void,
    stream: *mut c_void,
}

#[repr(C)]
struct StateArgs {
    struct_size: usize,
    extension_start: *mut ExtensionBase,
    ctx: *mut c_void,
    stage: i32,
    type_id: *mut TypeId,
    state: *mut c_void,
}

#[repr(C)]
struct DeviceOrdinalArgs {
    struct_size: usize,
    extension_start: *mut ExtensionBase,
    ctx: *mut c_void,
    device_ordinal: i32,
}

type ApiFn<A> = Option<unsafe extern "C" fn(*mut A) -> *mut XlaError>;

/// `XLA_FFI_Api`: the function table, in the header's order, up to the
/// last entry used here and the one after it (whose presence says the
/// table is long enough: see [`Frame::device_ordinal`]).
#[repr(C)]
struct Api {
    struct_size: usize,
    extension_start: *mut ExtensionBase,
    api_version: ApiVersion,
    internal_api: *const c_void,
    error_create: ApiFn<ErrorCreateArgs>,
    error_get_message: *const c_void,
    error_destroy: *const c_void,
    handler_register: *const c_void,
    stream_get: ApiFn<StreamGetArgs>,
    type_register: *const c_void,
    execution_context_get: *const c_void,
    state_set: ApiFn<StateArgs>,
    state_get: ApiFn<StateArgs>,
    device_memory_allocate: *const c_void,
    device_memory_free: *const c_void,
    thread_pool_schedule: *const c_void,
    thread_pool_num_threads: *const c_void,
    future_create: *const c_void,
    future_set_available: *const c_void,
    future_set_error: *const c_void,
    run_id_get: *const c_void,
    device_ordinal_get: ApiFn<DeviceOrdinalArgs>,
}

const STAGE_INSTANTIATE: i32 = 0;
const STAGE_INITIALIZE: i32 = 2;
const STAGE_EXECUTE: i32 = 3;
const ATTR_ARRAY: i32 = 1;
const ATTR_SCALAR: i32 = 3;
const ATTR_STRING: i32 = 4;
const BUFFER: i32 = 1;
/// `XLA_FFI_HANDLER_TRAITS_COMMAND_BUFFER_COMPATIBLE`.
const COMMAND_BUFFER_COMPATIBLE: u32 = 1;

/// XLA's error codes that kernelkit's errors map to.
#[derive(Clone, Copy, Debug)]
pub(crate) enum ErrorCode {
    /// `INVALID_ARGUMENT`: a wrong call (kernel, arguments, attributes).
    InvalidArgument = 3,
    /// `FAILED_PRECONDITION`: a setup the call cannot run in.
    FailedPrecondition = 9,
    /// `INTERNAL`: kernelkit failed (a compile, the device).
    Internal = 13,
}

// ---------------------------------------------------------------------------
// The handler's process-wide settings: the FFI version XLA speaks, and the
// state's type id per platform (written by XLA at type registration).

static API_MAJOR: AtomicI32 = AtomicI32::new(0);
static API_MINOR: AtomicI32 = AtomicI32::new(3);

/// A type id XLA writes once, at registration, through the pointer in the
/// capsule handed to `jax.ffi.register_ffi_type`.
#[repr(transparent)]
struct TypeIdCell(UnsafeCell<TypeId>);

// SAFETY: XLA writes the id once, while the type is registered (before
// any handler that reads it is registered, so before it can run); every
// later access is a read.
unsafe impl Sync for TypeIdCell {}

impl TypeIdCell {
    const fn new() -> Self {
        TypeIdCell(UnsafeCell::new(TypeId { type_id: 0 }))
    }

    fn get(&self) -> TypeId {
        // SAFETY: see the `Sync` impl: no write races with this read.
        unsafe { std::ptr::read_volatile(self.0.get()) }
    }
}

static STATE_TYPE_CPU: TypeIdCell = TypeIdCell::new();
static STATE_TYPE_CUDA: TypeIdCell = TypeIdCell::new();

fn state_type(platform: Platform) -> &'static TypeIdCell {
    match platform {
        Platform::Cpu => &STATE_TYPE_CPU,
        Platform::Cuda => &STATE_TYPE_CUDA,
    }
}

/// Frees a state XLA owned (a call site's binding), when its executable goes.
unsafe extern "C" fn drop_state(state: *mut c_void) {
    if !state.is_null() {
        // SAFETY: every state set by the instantiate handler is a
        // `Box<handler::Binding>` turned into a raw pointer there; XLA calls
        // the deleter once per state.
        drop(unsafe { Box::from_raw(state.cast::<handler::Binding>()) });
    }
}

struct TypeInfoCell(TypeInfo);
// SAFETY: read-only after construction (XLA only reads it).
unsafe impl Sync for TypeInfoCell {}

static STATE_TYPE_INFO: TypeInfoCell = TypeInfoCell(TypeInfo {
    struct_size: std::mem::size_of::<TypeInfo>(),
    extension_start: std::ptr::null_mut(),
    deleter: Some(drop_state),
});

/// Sets the FFI version the metadata answers with: the one of the jaxlib
/// whose XLA loads the handler (read from its header by the caller), since
/// XLA refuses a handler of another version.
pub(crate) fn set_api_version(major: i32, minor: i32) {
    API_MAJOR.store(major, Ordering::Relaxed);
    API_MINOR.store(minor, Ordering::Relaxed);
}

/// A capsule holding the bare pointer `ptr` (no name, no destructor): the
/// form `jax.ffi.register_ffi_target` and `register_ffi_type` take.
fn bare_capsule(py: Python<'_>, ptr: *mut c_void) -> PyResult<Py<PyAny>> {
    // SAFETY: `ptr` points to a static or a function (never freed), and a
    // capsule without a destructor owns nothing; the result is checked.
    unsafe {
        let raw = pyo3::ffi::PyCapsule_New(ptr, std::ptr::null(), None);
        Bound::from_owned_ptr_or_err(py, raw).map(Bound::unbind)
    }
}

/// The capsules of one platform's handler and state type.
pub(crate) struct Capsules {
    /// The instantiate stage's handler.
    pub instantiate: Py<PyAny>,
    /// The initialize stage's handler.
    pub initialize: Py<PyAny>,
    /// The execute stage's handler.
    pub execute: Py<PyAny>,
    /// The state type's id (XLA writes it at registration).
    pub type_id: Py<PyAny>,
    /// The state type's deleter.
    pub type_info: Py<PyAny>,
}

/// The capsules of one platform's handler.
pub(crate) fn capsules(py: Python<'_>, platform: Platform) -> PyResult<Capsules> {
    type Handler = unsafe extern "C" fn(*mut CallFrame) -> *mut XlaError;
    let (instantiate, initialize, execute): (Handler, Handler, Handler) = match platform {
        Platform::Cpu => (instantiate_cpu, initialize_cpu, execute_cpu),
        Platform::Cuda => (instantiate_cuda, initialize_cuda, execute_cuda),
    };
    Ok(Capsules {
        instantiate: bare_capsule(py, instantiate as *mut c_void)?,
        initialize: bare_capsule(py, initialize as *mut c_void)?,
        execute: bare_capsule(py, execute as *mut c_void)?,
        type_id: bare_capsule(py, state_type(platform).0.get().cast())?,
        type_info: bare_capsule(
            py,
            (&STATE_TYPE_INFO.0 as *const TypeInfo).cast_mut().cast(),
        )?,
    })
}

// ---------------------------------------------------------------------------
// The safe view of a call frame.

/// One attribute's value, as the handler reads it.
#[derive(Debug)]
pub(crate) enum Attr<'a> {
    /// A string.
    Str(&'a str),
    /// An integer scalar (any width, sign-extended).
    Int(i64),
    /// A floating-point scalar.
    Float(f64),
    /// An array of 64-bit integers.
    Ints(&'a [i64]),
    /// Anything else (named in errors by its kind).
    Other(&'static str),
}

impl Attr<'_> {
    /// What it is, for an error that expected something else.
    pub(crate) fn kind(&self) -> String {
        match self {
            Attr::Str(s) => format!("the string {s:?}"),
            Attr::Int(v) => format!("the integer {v}"),
            Attr::Float(v) => format!("the number {v}"),
            Attr::Ints(v) => format!("the integers {v:?}"),
            Attr::Other(what) => what.to_string(),
        }
    }
}

/// One argument or result buffer.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BufferRef<'a> {
    /// The element type, `None` for one kernelkit has no dtype of.
    pub dtype: Option<DType>,
    /// XLA's name of the element type (for errors).
    pub xla_dtype: i32,
    /// The address of element 0 (row-major, dense).
    pub data: u64,
    /// The extents.
    pub dims: &'a [i64],
}

/// A call frame XLA passed to a handler, read through checked accessors.
pub(crate) struct Frame<'a> {
    frame: &'a CallFrame,
    api: &'a Api,
}

/// kernelkit's dtype of an XLA element type.
fn dtype_of(xla: i32) -> Option<DType> {
    Some(match xla {
        1 => DType::Bool,
        2 => DType::I8,
        3 => DType::I16,
        4 => DType::I32,
        5 => DType::I64,
        6 => DType::U8,
        7 => DType::U16,
        8 => DType::U32,
        9 => DType::U64,
        10 => DType::F16,
        11 => DType::F32,
        12 => DType::F64,
        16 => DType::BF16,
        15 => DType::Complex64,
        _ => return None,
    })
}

impl<'a> Frame<'a> {
    /// The attributes, by name.
    pub(crate) fn attrs(&self) -> Result<Vec<(&'a str, Attr<'a>)>, String> {
        let a = &self.frame.attrs;
        let n = usize::try_from(a.size).map_err(|_| "a negative attribute count".to_string())?;
        if n > 0 && (a.types.is_null() || a.names.is_null() || a.attrs.is_null()) {
            return Err("attributes without their lists".into());
        }
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            // SAFETY: XLA's attribute lists hold `size` entries each, alive
            // for the call; names are byte spans, values point to the
            // struct their type names (scalar, array, byte span).
            unsafe {
                let name = span_str(&**a.names.add(i))?;
                let value = *a.attrs.add(i);
                let attr = match *a.types.add(i) {
                    ATTR_STRING => Attr::Str(span_str(&*value.cast::<ByteSpan>())?),
                    ATTR_SCALAR => scalar(&*value.cast::<RawScalar>()),
                    ATTR_ARRAY => array(&*value.cast::<RawArray>()),
                    _ => Attr::Other("a dictionary"),
                };
                out.push((name, attr));
            }
        }
        Ok(out)
    }

    /// The argument buffers (`rets == false`) or the result buffers.
    pub(crate) fn buffers(
        &self,
        rets: bool,
        out: &mut smallvec::SmallVec<[BufferRef<'a>; 8]>,
    ) -> Result<(), String> {
        let list = if rets {
            &self.frame.rets
        } else {
            &self.frame.args
        };
        let n = usize::try_from(list.size).map_err(|_| "a negative buffer count".to_string())?;
        if n > 0 && (list.types.is_null() || list.args.is_null()) {
            return Err("buffers without their lists".into());
        }
        for i in 0..n {
            // SAFETY: `size` entries, each a buffer (checked by its type),
            // alive for the call; `dims` holds `rank` extents.
            unsafe {
                if *list.types.add(i) != BUFFER {
                    return Err(format!("argument {i} is not a buffer"));
                }
                let b = &*(*list.args.add(i)).cast::<RawBuffer>();
                let rank = usize::try_from(b.rank).map_err(|_| "a negative rank".to_string())?;
                let dims = if rank == 0 {
                    &[][..]
                } else if b.dims.is_null() {
                    return Err(format!("buffer {i} has no extents"));
                } else {
                    std::slice::from_raw_parts(b.dims, rank)
                };
                out.push(BufferRef {
                    dtype: dtype_of(b.dtype),
                    xla_dtype: b.dtype,
                    data: b.data as u64,
                    dims,
                });
            }
        }
        Ok(())
    }

    /// The GPU stream XLA runs the call on (`CUstream`), on CUDA.
    pub(crate) fn stream(&self) -> Result<u64, String> {
        let get = self.api.stream_get.ok_or("XLA's API has no stream")?;
        let mut args = StreamGetArgs {
            struct_size: std::mem::size_of::<StreamGetArgs>(),
            extension_start: std::ptr::null_mut(),
            ctx: self.frame.ctx,
            stream: std::ptr::null_mut(),
        };
        // SAFETY: XLA's own function, with its argument struct and the
        // call's context.
        let err = unsafe { get(&mut args) };
        self.check(err)?;
        Ok(args.stream as u64)
    }

    /// The device ordinal XLA runs the call on.
    pub(crate) fn device_ordinal(&self) -> Result<u32, String> {
        let needed = std::mem::size_of::<Api>();
        let get = match self.api.struct_size >= needed {
            true => self.api.device_ordinal_get,
            false => None,
        };
        let get = get.ok_or("this XLA does not say the device ordinal")?;
        let mut args = DeviceOrdinalArgs {
            struct_size: std::mem::size_of::<DeviceOrdinalArgs>(),
            extension_start: std::ptr::null_mut(),
            ctx: self.frame.ctx,
            device_ordinal: -1,
        };
        // SAFETY: as in `stream`.
        let err = unsafe { get(&mut args) };
        self.check(err)?;
        u32::try_from(args.device_ordinal).map_err(|_| "no device ordinal".to_string())
    }

    /// Hands `binding` to XLA as this call site's state (instantiate stage).
    pub(crate) fn set_state(
        &self,
        platform: Platform,
        binding: handler::Binding,
    ) -> Result<(), String> {
        let set = self.api.state_set.ok_or("XLA's API has no state")?;
        let mut id = state_type(platform).get();
        if id.type_id == 0 {
            return Err("kernelkit's state type is not registered with XLA".into());
        }
        let raw = Box::into_raw(Box::new(binding));
        let mut args = StateArgs {
            struct_size: std::mem::size_of::<StateArgs>(),
            extension_start: std::ptr::null_mut(),
            ctx: self.frame.ctx,
            stage: STAGE_INSTANTIATE,
            type_id: &mut id,
            state: raw.cast(),
        };
        // SAFETY: as in `stream`; on success XLA owns the box and frees it
        // through the registered deleter (`drop_state`).
        let err = unsafe { set(&mut args) };
        if !err.is_null() {
            // SAFETY: XLA refused it, so the box is still ours.
            drop(unsafe { Box::from_raw(raw) });
        }
        self.check(err)
    }

    /// This call site's state, set by the instantiate stage.
    pub(crate) fn state(&self, platform: Platform) -> Result<&'a handler::Binding, String> {
        let get = self.api.state_get.ok_or("XLA's API has no state")?;
        let mut id = state_type(platform).get();
        let mut args = StateArgs {
            struct_size: std::mem::size_of::<StateArgs>(),
            extension_start: std::ptr::null_mut(),
            ctx: self.frame.ctx,
            stage: STAGE_INSTANTIATE,
            type_id: &mut id,
            state: std::ptr::null_mut(),
        };
        // SAFETY: as in `stream`.
        let err = unsafe { get(&mut args) };
        self.check(err)?;
        if args.state.is_null() {
            return Err("the call site has no kernelkit binding".into());
        }
        // SAFETY: the state of this type is a `Binding` set by
        // `set_state`, owned by the executable, which outlives its calls.
        Ok(unsafe { &*args.state.cast::<handler::Binding>() })
    }

    /// `Ok` for no error; an error XLA returned becomes its message (and
    /// is handed back to XLA's error path as ours).
    fn check(&self, err: *mut XlaError) -> Result<(), String> {
        match err.is_null() {
            true => Ok(()),
            // XLA's error is passed on as is: the caller returns it.
            false => Err(XLA_ERROR.with(|e| {
                e.set(err);
                String::new()
            })),
        }
    }

    /// An XLA error with `message` (or the XLA error a call just returned).
    fn error(&self, code: ErrorCode, message: &str) -> *mut XlaError {
        let pending = XLA_ERROR.with(|e| e.replace(std::ptr::null_mut()));
        if !pending.is_null() {
            return pending;
        }
        let Some(create) = self.api.error_create else {
            // No way to report: XLA's API always has this entry.
            return std::ptr::null_mut();
        };
        let text = CString::new(message.replace('\0', " ")).unwrap_or_default();
        let mut args = ErrorCreateArgs {
            struct_size: std::mem::size_of::<ErrorCreateArgs>(),
            extension_start: std::ptr::null_mut(),
            message: text.as_ptr(),
            errc: code as i32,
        };
        // SAFETY: XLA's function copies the message into its own status.
        unsafe { create(&mut args) }
    }
}

thread_local! {
    /// An error an XLA function returned during this handler call, to
    /// return as the handler's own.
    static XLA_ERROR: std::cell::Cell<*mut XlaError> = const { std::cell::Cell::new(std::ptr::null_mut()) };
}

/// A byte span as text.
///
/// # Safety
///
/// `span` points to `len` readable bytes (or is empty), alive for `'a`.
unsafe fn span_str<'a>(span: &ByteSpan) -> Result<&'a str, String> {
    if span.len == 0 {
        return Ok("");
    }
    if span.ptr.is_null() {
        return Err("a null attribute string".into());
    }
    // SAFETY: the caller's promise.
    let bytes = unsafe { std::slice::from_raw_parts(span.ptr.cast::<u8>(), span.len) };
    std::str::from_utf8(bytes).map_err(|_| "an attribute string that is not UTF-8".into())
}

/// A scalar attribute.
///
/// # Safety
///
/// `s.value` points to one value of `s.dtype`.
unsafe fn scalar<'a>(s: &RawScalar) -> Attr<'a> {
    if s.value.is_null() {
        return Attr::Other("a null scalar");
    }
    // SAFETY: the caller's promise: one value of the named type.
    unsafe {
        match s.dtype {
            1 | 2 | 6 => Attr::Int(i64::from(*s.value.cast::<i8>())),
            3 | 7 => Attr::Int(i64::from(*s.value.cast::<i16>())),
            4 | 8 => Attr::Int(i64::from(*s.value.cast::<i32>())),
            5 | 9 => Attr::Int(*s.value.cast::<i64>()),
            11 => Attr::Float(f64::from(*s.value.cast::<f32>())),
            12 => Attr::Float(*s.value.cast::<f64>()),
            _ => Attr::Other("a scalar of another type"),
        }
    }
}

/// An array attribute.
///
/// # Safety
///
/// `a.data` points to `a.size` values of `a.dtype`.
unsafe fn array<'a>(a: &RawArray) -> Attr<'a> {
    match (a.dtype, a.size) {
        (5, 0) => Attr::Ints(&[]),
        // SAFETY: the caller's promise.
        (5, n) if !a.data.is_null() => {
            Attr::Ints(unsafe { std::slice::from_raw_parts(a.data.cast(), n) })
        }
        _ => Attr::Other("an array that is not of int64"),
    }
}

// ---------------------------------------------------------------------------
// The handlers.

/// Answers XLA's metadata query (a frame whose extension is the metadata
/// one); `true` if it was one.
///
/// # Safety
///
/// `frame` is the call frame XLA passed.
unsafe fn metadata(frame: *mut CallFrame, platform: Platform, stateful: bool) -> bool {
    // SAFETY: XLA's call frame; the extension chain is XLA's.
    unsafe {
        let ext = (*frame).extension_start;
        if ext.is_null() || (*ext).kind != EXTENSION_METADATA {
            return false;
        }
        let meta = (*ext.cast::<MetadataExtension>()).metadata;
        if meta.is_null() {
            return true;
        }
        (*meta).api_version = ApiVersion {
            struct_size: std::mem::size_of::<ApiVersion>(),
            extension_start: std::ptr::null_mut(),
            major_version: API_MAJOR.load(Ordering::Relaxed),
            minor_version: API_MINOR.load(Ordering::Relaxed),
        };
        (*meta).traits = match platform {
            Platform::Cuda => COMMAND_BUFFER_COMPATIBLE,
            Platform::Cpu => 0,
        };
        let struct_size = (*meta).struct_size;
        let has_state_id = struct_size >= std::mem::size_of::<Metadata>();
        if has_state_id {
            (*meta).state_type_id = match stateful {
                true => state_type(platform).get(),
                false => TypeId { type_id: 0 },
            };
        }
        true
    }
}

/// A stage of the handler, in safe Rust.
type Stage = fn(&Frame<'_>, Platform) -> Result<(), (ErrorCode, String)>;

/// Runs `body` on the frame, turning its error (or a panic) into XLA's.
///
/// # Safety
///
/// `frame` is the call frame XLA passed, valid for the call.
unsafe fn handle(
    frame: *mut CallFrame,
    platform: Platform,
    stage: i32,
    body: Stage,
) -> *mut XlaError {
    if frame.is_null() {
        return std::ptr::null_mut();
    }
    // SAFETY: the caller's promise.
    if unsafe { metadata(frame, platform, stage == STAGE_INSTANTIATE) } {
        return std::ptr::null_mut();
    }
    // SAFETY: a call frame XLA built, with its API table, for the call.
    let (frame, api) = unsafe {
        let f = &*frame;
        if f.api.is_null() {
            return std::ptr::null_mut();
        }
        (f, &*f.api)
    };
    let frame = Frame { frame, api };
    if frame.frame.stage != stage {
        let message = format!(
            "kernelkit: a handler of stage {stage} called in stage {}",
            frame.frame.stage
        );
        return frame.error(ErrorCode::Internal, &message);
    }
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body(&frame, platform)));
    match result {
        Ok(Ok(())) => std::ptr::null_mut(),
        Ok(Err((code, message))) => frame.error(code, &message),
        Err(_) => frame.error(
            ErrorCode::Internal,
            "kernelkit: the FFI handler panicked (a bug in kernelkit)",
        ),
    }
}

unsafe extern "C" fn instantiate_cpu(frame: *mut CallFrame) -> *mut XlaError {
    // SAFETY: XLA calls with its call frame.
    unsafe {
        handle(
            frame,
            Platform::Cpu,
            STAGE_INSTANTIATE,
            handler::instantiate,
        )
    }
}

unsafe extern "C" fn instantiate_cuda(frame: *mut CallFrame) -> *mut XlaError {
    // SAFETY: XLA calls with its call frame.
    unsafe {
        handle(
            frame,
            Platform::Cuda,
            STAGE_INSTANTIATE,
            handler::instantiate,
        )
    }
}

unsafe extern "C" fn initialize_cpu(frame: *mut CallFrame) -> *mut XlaError {
    // SAFETY: XLA calls with its call frame.
    unsafe { handle(frame, Platform::Cpu, STAGE_INITIALIZE, handler::initialize) }
}

unsafe extern "C" fn initialize_cuda(frame: *mut CallFrame) -> *mut XlaError {
    // SAFETY: XLA calls with its call frame.
    unsafe { handle(frame, Platform::Cuda, STAGE_INITIALIZE, handler::initialize) }
}

unsafe extern "C" fn execute_cpu(frame: *mut CallFrame) -> *mut XlaError {
    // SAFETY: XLA calls with its call frame.
    unsafe { handle(frame, Platform::Cpu, STAGE_EXECUTE, handler::execute) }
}

unsafe extern "C" fn execute_cuda(frame: *mut CallFrame) -> *mut XlaError {
    // SAFETY: XLA calls with its call frame.
    unsafe { handle(frame, Platform::Cuda, STAGE_EXECUTE, handler::execute) }
}

/// Runs a rebindable launch with the buffers' addresses.
pub(crate) fn run_bound(
    launch: &kernelkit::Rebindable,
    inputs: &[u64],
    outputs: &[u64],
) -> kernelkit::Result<()> {
    // SAFETY: the addresses are XLA's buffers of this call, whose dtypes
    // and extents the handler checked against the layouts the launch was
    // made for (`handler::Bound::fits`); XLA keeps them alive and orders
    // their other uses on the call's stream (the launch's: it was made for
    // that stream), and result buffers are writable.
    unsafe { launch.run(inputs, outputs) }
}

/// A kernelkit array over one of XLA's buffers of this call.
pub(crate) fn buffer_array(
    device: &kernelkit::Device,
    buffer: &BufferRef<'_>,
    dtype: DType,
    shape: &[usize],
    stream: Option<&kernelkit::Stream>,
    read_only: bool,
) -> kernelkit::Result<kernelkit::Array> {
    let layout = kernelkit::interop::ForeignLayout {
        data: buffer.data,
        dtype,
        shape,
        strides: None,
        stream,
        read_only,
        device_known: false,
    };
    // SAFETY: XLA's buffer of this call: dense row-major memory of the
    // device (the call's platform and ordinal) of these extents and dtype,
    // alive until the call's work on `stream` has run (the array is
    // dropped before the handler returns, so owned by no one here); XLA
    // orders its other uses of it on that stream.
    unsafe {
        kernelkit::interop::foreign_array(device, layout, kernelkit::interop::ForeignOwner::none())
    }
}

/// A kernelkit stream over the `CUstream` XLA gave the call.
pub(crate) fn xla_stream(
    device: &kernelkit::Device,
    raw: u64,
) -> kernelkit::Result<kernelkit::Stream> {
    // SAFETY: XLA's stream of the call, alive as long as its executor,
    // which outlives the executable and so the binding that keeps this
    // wrapper; the driver checks its context; kernelkit never destroys it.
    unsafe { kernelkit::Stream::from_raw_cuda(device, raw as usize as *mut c_void) }
}

/// The handler driven through its C ABI by a stand-in for XLA's side (the
/// API table's functions, call frames built as XLA builds them), on the
/// CPU: metadata, instantiate, execute, errors.
#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// States the stand-in XLA keeps (one test at a time).
    static STATE: Mutex<usize> = Mutex::new(0);
    static LOCK: Mutex<()> = Mutex::new(());

    /// The stand-in's errors: a boxed message.
    unsafe extern "C" fn error_create(args: *mut ErrorCreateArgs) -> *mut XlaError {
        // SAFETY: the handler passes a valid NUL-terminated message.
        let message = unsafe { std::ffi::CStr::from_ptr((*args).message) };
        Box::into_raw(Box::new(message.to_string_lossy().into_owned())).cast()
    }

    unsafe extern "C" fn state_set(args: *mut StateArgs) -> *mut XlaError {
        // SAFETY: the handler's argument struct.
        *STATE.lock().unwrap() = unsafe { (*args).state } as usize;
        std::ptr::null_mut()
    }

    unsafe extern "C" fn state_get(args: *mut StateArgs) -> *mut XlaError {
        // SAFETY: the handler's argument struct.
        unsafe { (*args).state = *STATE.lock().unwrap() as *mut c_void };
        std::ptr::null_mut()
    }

    fn api() -> Api {
        // SAFETY: all-zero is a valid `Api` (null pointers, `None`s).
        let mut api: Api = unsafe { std::mem::zeroed() };
        api.struct_size = std::mem::size_of::<Api>();
        api.error_create = Some(error_create);
        api.state_set = Some(state_set);
        api.state_get = Some(state_get);
        api
    }

    /// Takes the stand-in's error message (or `None` for success).
    fn message(err: *mut XlaError) -> Option<String> {
        // SAFETY: the stand-in's errors are boxed strings.
        (!err.is_null()).then(|| *unsafe { Box::from_raw(err.cast::<String>()) })
    }

    fn span(s: &str) -> ByteSpan {
        ByteSpan {
            ptr: s.as_ptr().cast(),
            len: s.len(),
        }
    }

    fn empty_args() -> RawArgs {
        RawArgs {
            struct_size: std::mem::size_of::<RawArgs>(),
            extension_start: std::ptr::null_mut(),
            size: 0,
            types: std::ptr::null_mut(),
            args: std::ptr::null_mut(),
        }
    }

    fn frame(api: &Api, stage: i32, args: RawArgs, rets: RawArgs, attrs: RawAttrs) -> CallFrame {
        CallFrame {
            struct_size: std::mem::size_of::<CallFrame>(),
            extension_start: std::ptr::null_mut(),
            api,
            ctx: std::ptr::null_mut(),
            stage,
            args,
            rets,
            attrs,
            future: std::ptr::null_mut(),
        }
    }

    #[test]
    fn the_handler_answers_xlas_calls_on_the_cpu() {
        let _one = LOCK.lock().unwrap();
        // SAFETY: XLA's registration writes the id; no handler runs yet.
        unsafe { *STATE_TYPE_CPU.0.get() = TypeId { type_id: 7 } };
        set_api_version(0, 3);
        let api = api();

        // Metadata: version, traits, the state's type.
        let mut meta = Metadata {
            struct_size: std::mem::size_of::<Metadata>(),
            api_version: ApiVersion {
                struct_size: 0,
                extension_start: std::ptr::null_mut(),
                major_version: -1,
                minor_version: -1,
            },
            traits: 99,
            state_type_id: TypeId { type_id: 0 },
        };
        let mut ext = MetadataExtension {
            extension_base: ExtensionBase {
                struct_size: std::mem::size_of::<MetadataExtension>(),
                kind: EXTENSION_METADATA,
                next: std::ptr::null_mut(),
            },
            metadata: &mut meta,
        };
        let mut f = frame(&api, STAGE_EXECUTE, empty_args(), empty_args(), unsafe {
            std::mem::zeroed()
        });
        f.extension_start = &mut ext.extension_base;
        // SAFETY: a frame built as XLA builds its metadata query.
        assert_eq!(message(unsafe { instantiate_cpu(&mut f) }), None);
        assert_eq!(
            (
                meta.api_version.major_version,
                meta.api_version.minor_version
            ),
            (0, 3)
        );
        assert_eq!((meta.traits, meta.state_type_id.type_id), (0, 7));

        // Instantiate: the attributes of kernelkit.jax's lowering.
        let spec = crate::jax::identity::JaxSpec {
            name: "abi_add".into(),
            inputs: vec!["x".into()],
            outputs: vec!["y".into()],
            source: "uint i = thread_position_in_grid.x; y[i] = x[i] + OFFSET;".into(),
            header: String::new(),
            ensure_row_contiguous: true,
            atomic_outputs: false,
            language: "metal".into(),
            math_mode: "safe".into(),
            shared_memory: 0,
            batched: false,
        };
        let text = spec.text();
        let id = crate::jax::identity::JaxSpec::identity_of(&text);
        let template = r#"[["OFFSET", "int", 5]]"#;
        let (grid, tg, ranks) = ([4i64, 1, 1], [4i64, 1, 1], [1i64]);
        let arr = |v: &[i64]| RawArray {
            dtype: 5,
            size: v.len(),
            data: v.as_ptr().cast_mut().cast(),
        };
        let (mut sk, mut ss, mut st, mut si) = (span(&id), span(&text), span(template), span(""));
        let (mut ag, mut at, mut ar) = (arr(&grid), arr(&tg), arr(&ranks));
        let names = [
            "kernel",
            "spec",
            "template",
            "init_value",
            "grid",
            "threadgroup",
            "out_ranks",
        ];
        let mut name_spans: Vec<ByteSpan> = names.iter().map(|n| span(n)).collect();
        let mut name_ptrs: Vec<*mut ByteSpan> =
            name_spans.iter_mut().map(|s| s as *mut _).collect();
        let mut types = [
            ATTR_STRING,
            ATTR_STRING,
            ATTR_STRING,
            ATTR_STRING,
            ATTR_ARRAY,
            ATTR_ARRAY,
            ATTR_ARRAY,
        ];
        let mut values: Vec<*mut c_void> = vec![
            (&mut sk as *mut ByteSpan).cast(),
            (&mut ss as *mut ByteSpan).cast(),
            (&mut st as *mut ByteSpan).cast(),
            (&mut si as *mut ByteSpan).cast(),
            (&mut ag as *mut RawArray).cast(),
            (&mut at as *mut RawArray).cast(),
            (&mut ar as *mut RawArray).cast(),
        ];
        let attrs = RawAttrs {
            struct_size: std::mem::size_of::<RawAttrs>(),
            extension_start: std::ptr::null_mut(),
            size: names.len() as i64,
            types: types.as_mut_ptr(),
            names: name_ptrs.as_mut_ptr(),
            attrs: values.as_mut_ptr(),
        };
        let mut f = frame(&api, STAGE_INSTANTIATE, empty_args(), empty_args(), attrs);
        // SAFETY: a frame of the stage, its attributes alive.
        assert_eq!(message(unsafe { instantiate_cpu(&mut f) }), None);
        assert_ne!(*STATE.lock().unwrap(), 0);

        // Execute, twice (the second through the kept launch).
        let x = [1.0f32, 2.0, 3.0, 4.0];
        let mut y = [0.0f32; 4];
        let mut dims = [4i64];
        let mut bx = RawBuffer {
            struct_size: std::mem::size_of::<RawBuffer>(),
            extension_start: std::ptr::null_mut(),
            dtype: 11,
            data: x.as_ptr().cast_mut().cast(),
            rank: 1,
            dims: dims.as_mut_ptr(),
        };
        let mut by = RawBuffer {
            data: y.as_mut_ptr().cast(),
            ..bx
        };
        let (mut in_types, mut out_types) = ([BUFFER], [BUFFER]);
        let mut in_ptrs = [(&mut bx as *mut RawBuffer).cast::<c_void>()];
        let mut out_ptrs = [(&mut by as *mut RawBuffer).cast::<c_void>()];
        let list = |types: &mut [i32; 1], ptrs: &mut [*mut c_void; 1]| RawArgs {
            size: 1,
            types: types.as_mut_ptr(),
            args: ptrs.as_mut_ptr(),
            ..empty_args()
        };
        for _ in 0..2 {
            let args = list(&mut in_types, &mut in_ptrs);
            let rets = list(&mut out_types, &mut out_ptrs);
            let mut f = frame(&api, STAGE_EXECUTE, args, rets, unsafe {
                std::mem::zeroed()
            });
            // SAFETY: a frame of the stage, its buffers alive.
            assert_eq!(message(unsafe { execute_cpu(&mut f) }), None);
            // SAFETY: the kernel wrote `y` through its pointer and returned.
            let got = unsafe { std::ptr::read_volatile(&y) };
            assert_eq!(got, [6.0, 7.0, 8.0, 9.0]);
            y = [0.0; 4];
        }

        // Buffers of another layout (a call site's second shape): a launch
        // prepared for it, the grid the call site's.
        // SAFETY: both buffers' `dims` point to `dims`, alive here.
        unsafe { *bx.dims = 3 };
        let args = list(&mut in_types, &mut in_ptrs);
        let rets = list(&mut out_types, &mut out_ptrs);
        let mut f = frame(&api, STAGE_EXECUTE, args, rets, unsafe {
            std::mem::zeroed()
        });
        // SAFETY: as above (the memory holds the grid's four elements).
        assert_eq!(message(unsafe { execute_cpu(&mut f) }), None);
        // SAFETY: as above.
        assert_eq!(unsafe { std::ptr::read_volatile(&y) }[..3], [6.0, 7.0, 8.0]);

        // A handler called in another stage, and a call site whose
        // attributes do not hash to its identity: errors, no crash.
        let mut f = frame(
            &api,
            STAGE_INSTANTIATE,
            empty_args(),
            empty_args(),
            unsafe { std::mem::zeroed() },
        );
        // SAFETY: a frame without attributes or buffers.
        let err = message(unsafe { execute_cpu(&mut f) }).unwrap();
        assert!(err.contains("stage"), "{err}");
        let mut bad = span("0123");
        values[0] = (&mut bad as *mut ByteSpan).cast();
        let attrs = RawAttrs {
            struct_size: std::mem::size_of::<RawAttrs>(),
            extension_start: std::ptr::null_mut(),
            size: names.len() as i64,
            types: types.as_mut_ptr(),
            names: name_ptrs.as_mut_ptr(),
            attrs: values.as_mut_ptr(),
        };
        let mut f = frame(&api, STAGE_INSTANTIATE, empty_args(), empty_args(), attrs);
        // SAFETY: as above.
        let err = message(unsafe { instantiate_cpu(&mut f) }).unwrap();
        assert!(err.contains("do not match"), "{err}");
        // The state the stand-in kept, freed as XLA frees it.
        let state = std::mem::take(&mut *STATE.lock().unwrap());
        // SAFETY: the state set by instantiate, freed once.
        unsafe { drop_state(state as *mut c_void) };
    }
}
