//! The loader's side of NVTX v3's injection protocol, written from its
//! published types (`nvtxDetail/nvtxTypes.h`): kernelkit is an NVTX client
//! without linking an NVTX library.
//!
//! The protocol: the client `dlopen`s the tool's library (the path in
//! `NVTX_INJECTION64_PATH`) and calls its `InitializeInjectionNvtx2` with a
//! function that hands out *export tables*. From the callbacks table the
//! tool asks, per module (core, CUDA, ...), for the client's table of
//! function-pointer slots and writes its own functions into the slots of
//! the calls it implements; the client then calls through the slots. The
//! client owns the slots; the tool fills them once, during its
//! initialization, before this module reads any.
//!
//! Without an injection path, a `libnvToolsExt.so.1` (NVTX v2's library,
//! which runs the same protocol itself) is used if the loader finds one.

use std::ffi::{c_char, c_int, c_uint, c_void};
use std::path::Path;
use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};

/// An NVTX function-pointer slot (`NvtxFunctionPointer`): null until the
/// tool writes its function. Atomic so that the client may read it from
/// any thread without a data race (the tool writes during initialization,
/// which happens before any read).
type Slot = AtomicPtr<c_void>;

/// `NVTX_CB_MODULE_*` and the number of callback ids of each
/// (`NVTX_CBID_*_SIZE`).
const MODULE_SIZES: [(c_int, usize); 6] = [
    (1, 16), // core
    (2, 9),  // CUDA driver naming
    (3, 15), // OpenCL naming
    (4, 7),  // CUDA runtime naming
    (5, 16), // core 2 (domains)
    (6, 7),  // sync
];
/// The largest table's entries: its ids 1..16, and null entries 0 and 16.
const MAX_SLOTS: usize = 17;
/// Core callback ids kernelkit calls.
const CORE_RANGE_PUSH_EX: usize = 8;
const CORE_RANGE_PUSH_A: usize = 9;
const CORE_RANGE_POP: usize = 11;
/// `NVTX_ETID_CALLBACKS`, `NVTX_ETID_VERSIONINFO`.
const ETID_CALLBACKS: u32 = 1;
const ETID_VERSIONINFO: u32 = 3;
/// The NVTX API version this client speaks (`NVTX_VERSION`).
const NVTX_VERSION: u32 = 3;

/// The slots of every module, and for each module the array of pointers
/// to its slots that `GetModuleFunctionTable` hands out (index 0 unused,
/// as in NVTX's own tables).
struct Tables {
    slots: [[Slot; MAX_SLOTS]; 6],
    pointers: [[AtomicPtr<Slot>; MAX_SLOTS]; 6],
}

#[allow(clippy::declare_interior_mutable_const)]
const NULL_SLOT: Slot = AtomicPtr::new(ptr::null_mut());
#[allow(clippy::declare_interior_mutable_const)]
const NULL_POINTER: AtomicPtr<Slot> = AtomicPtr::new(ptr::null_mut());
#[allow(clippy::declare_interior_mutable_const)]
const NULL_SLOTS: [Slot; MAX_SLOTS] = [NULL_SLOT; MAX_SLOTS];
#[allow(clippy::declare_interior_mutable_const)]
const NULL_POINTERS: [AtomicPtr<Slot>; MAX_SLOTS] = [NULL_POINTER; MAX_SLOTS];

/// The process's one set of tables (a process loads one tool).
static TABLES: Tables = Tables {
    slots: [NULL_SLOTS; 6],
    pointers: [NULL_POINTERS; 6],
};

/// `NvtxExportTableCallbacks`.
#[repr(C)]
struct CallbacksTable {
    struct_size: usize,
    get_module_function_table: unsafe extern "C" fn(
        module: c_int,
        out_table: *mut *mut AtomicPtr<Slot>,
        out_size: *mut c_uint,
    ) -> c_int,
}

/// `NvtxExportTableVersionInfo`.
#[repr(C)]
struct VersionTable {
    struct_size: usize,
    version: u32,
    reserved0: u32,
    set_injection_nvtx_version: unsafe extern "C" fn(version: u32),
}

static CALLBACKS: CallbacksTable = CallbacksTable {
    struct_size: std::mem::size_of::<CallbacksTable>(),
    get_module_function_table,
};

static VERSION: VersionTable = VersionTable {
    struct_size: std::mem::size_of::<VersionTable>(),
    version: NVTX_VERSION,
    reserved0: 0,
    set_injection_nvtx_version,
};

/// `NvtxGetExportTableFunc_t`: the export tables this client has.
unsafe extern "C" fn get_export_table(id: u32) -> *const c_void {
    match id {
        ETID_CALLBACKS => (&CALLBACKS as *const CallbacksTable).cast(),
        ETID_VERSIONINFO => (&VERSION as *const VersionTable).cast(),
        _ => ptr::null(),
    }
}

/// The tool says which version it is (NVTX ignores it too).
unsafe extern "C" fn set_injection_nvtx_version(_version: u32) {}

/// `GetModuleFunctionTable`: the pointers to `module`'s slots.
unsafe extern "C" fn get_module_function_table(
    module: c_int,
    out_table: *mut *mut AtomicPtr<Slot>,
    out_size: *mut c_uint,
) -> c_int {
    let Some(index) = MODULE_SIZES.iter().position(|(m, _)| *m == module) else {
        return 0;
    };
    if out_table.is_null() || out_size.is_null() {
        return 0;
    }
    let size = MODULE_SIZES[index].1;
    let pointers = &TABLES.pointers[index];
    // As NVTX's own tables: entry 0 and entry `size` are null, entries
    // 1..size point to the slots of the callback ids 1..size.
    for (id, (pointer, slot)) in pointers.iter().zip(&TABLES.slots[index]).enumerate() {
        let to = match id {
            1.. if id < size => (slot as *const Slot).cast_mut(),
            _ => ptr::null_mut(),
        };
        pointer.store(to, Ordering::Relaxed);
    }
    // SAFETY: both pointers are non-null (checked) and, per the protocol,
    // point to the tool's writable locals of these types.
    unsafe {
        *out_table = pointers.as_ptr().cast_mut();
        *out_size = size as c_uint;
    }
    1
}

/// `nvtxEventAttributes_t` (version 3, its `_v2` layout), for a tool that
/// implements `RangePushEx` but not `RangePushA`.
#[repr(C)]
struct EventAttributes {
    version: u16,
    size: u16,
    category: u32,
    color_type: i32,
    color: u32,
    payload_type: i32,
    reserved0: i32,
    payload: u64,
    message_type: i32,
    message: *const c_char,
}

/// `NVTX_MESSAGE_TYPE_ASCII`.
const MESSAGE_ASCII: i32 = 1;

type PushA = unsafe extern "C" fn(*const c_char) -> c_int;
type PushEx = unsafe extern "C" fn(*const EventAttributes) -> c_int;
type Pop = unsafe extern "C" fn() -> c_int;

/// How ranges are pushed.
enum Push {
    A(PushA),
    Ex(PushEx),
}

/// A loaded NVTX tool: its push and pop, and the library that holds them
/// (never unloaded: a tool is loaded once per process).
pub(super) struct Tool {
    push: Push,
    pop: Pop,
    from: String,
    _library: libloading::Library,
}

impl Tool {
    /// Loads the tool at `injection`, else `libnvToolsExt.so.1`.
    pub(super) fn load(injection: Option<&Path>) -> Result<Tool, String> {
        match injection {
            Some(path) => Tool::inject(path),
            None => Tool::nvtools_ext().map_err(|why| {
                format!(
                    "NVTX_INJECTION64_PATH is not set (an NVTX tool such as Nsight Systems sets \
                     it) and {why}"
                )
            }),
        }
    }

    /// Loads the injection library and runs its initialization.
    fn inject(path: &Path) -> Result<Tool, String> {
        let shown = path.display();
        // SAFETY: loading a library runs its initializers; the path is the
        // tool library the user's profiler named for this purpose.
        let library = unsafe { libloading::Library::new(path) }
            .map_err(|e| format!("NVTX_INJECTION64_PATH={shown} does not load: {e}"))?;
        type Init = unsafe extern "C" fn(unsafe extern "C" fn(u32) -> *const c_void) -> c_int;
        // SAFETY: `InitializeInjectionNvtx2` has this signature in the
        // protocol (`NvtxInitializeInjectionNvtxFunc_t`).
        let init: Init = unsafe {
            *library
                .get::<Init>(b"InitializeInjectionNvtx2\0")
                .map_err(|e| format!("{shown} has no InitializeInjectionNvtx2: {e}"))?
        };
        // SAFETY: the tool's initializer, called once per process (the
        // caller's `OnceLock`), with the export-table function it expects.
        if unsafe { init(get_export_table) } == 0 {
            return Err(format!("{shown}: InitializeInjectionNvtx2 refused"));
        }
        let core = &TABLES.slots[0];
        let read = |id: usize| core[id].load(Ordering::Acquire);
        let (push_a, push_ex, pop) = (
            read(CORE_RANGE_PUSH_A),
            read(CORE_RANGE_PUSH_EX),
            read(CORE_RANGE_POP),
        );
        if pop.is_null() || (push_a.is_null() && push_ex.is_null()) {
            return Err(format!("{shown} implements no push/pop ranges"));
        }
        // SAFETY: the tool wrote its implementations of these core calls
        // into their slots; their C signatures are the protocol's.
        let push = unsafe {
            if !push_a.is_null() {
                Push::A(std::mem::transmute::<*mut c_void, PushA>(push_a))
            } else {
                Push::Ex(std::mem::transmute::<*mut c_void, PushEx>(push_ex))
            }
        };
        // SAFETY: as above.
        let pop = unsafe { std::mem::transmute::<*mut c_void, Pop>(pop) };
        Ok(Tool {
            push,
            pop,
            from: format!("the injection library {shown}"),
            _library: library,
        })
    }

    /// NVTX v2's library, if the loader finds one.
    fn nvtools_ext() -> Result<Tool, String> {
        const NAME: &str = "libnvToolsExt.so.1";
        // SAFETY: loading NVIDIA's NVTX library runs its initializers only.
        let library = unsafe { libloading::Library::new(NAME) }
            .map_err(|e| format!("no {NAME} was found ({e})"))?;
        // SAFETY: the library's exported NVTX calls, with their C
        // signatures.
        let (push, pop) = unsafe {
            let push = *library
                .get::<PushA>(b"nvtxRangePushA\0")
                .map_err(|e| format!("{NAME}: {e}"))?;
            let pop = *library
                .get::<Pop>(b"nvtxRangePop\0")
                .map_err(|e| format!("{NAME}: {e}"))?;
            (push, pop)
        };
        Ok(Tool {
            push: Push::A(push),
            pop,
            from: NAME.to_string(),
            _library: library,
        })
    }

    /// Where the tool came from, for the log.
    pub(super) fn describe(&self) -> &str {
        &self.from
    }

    /// Pushes a range named by `message`, which ends with its NUL.
    pub(super) fn push(&self, message: &[u8]) {
        debug_assert_eq!(message.last(), Some(&0));
        let text = message.as_ptr().cast::<c_char>();
        match self.push {
            // SAFETY: a NUL-terminated string that lives through the call
            // (tools copy it), to the tool's push.
            Push::A(push) => unsafe {
                push(text);
            },
            Push::Ex(push) => {
                let attributes = EventAttributes {
                    version: NVTX_VERSION as u16,
                    size: std::mem::size_of::<EventAttributes>() as u16,
                    category: 0,
                    color_type: 0,
                    color: 0,
                    payload_type: 0,
                    reserved0: 0,
                    payload: 0,
                    message_type: MESSAGE_ASCII,
                    message: text,
                };
                // SAFETY: attributes of the protocol's layout whose
                // message lives through the call.
                unsafe {
                    push(&attributes);
                }
            }
        }
    }

    /// Pops this thread's innermost range.
    pub(super) fn pop(&self) {
        // SAFETY: the tool's pop, which takes nothing.
        unsafe {
            (self.pop)();
        }
    }
}
