//! NVRTC's C API, each call behind a small safe function: the only place
//! of the backend that calls `cudarc::nvrtc::sys`. `compile` decides what
//! to compile with which options; this module only talks to the library.
//!
//! NVRTC is a compiler, not a device, so its errors are [`NvrtcError`]s
//! (the call and NVRTC's result), which `compile` turns into the
//! kernel's compile errors. The library and its symbols are checked by
//! `probe` before the first call.

use std::ffi::{c_char, c_int, CString};
use std::fmt;
use std::path::Path;

use cudarc::nvrtc::sys;

/// A failed NVRTC call.
#[derive(Clone, Copy, Debug)]
pub(in crate::backend::cuda) struct NvrtcError {
    call: &'static str,
    result: sys::nvrtcResult,
}

impl NvrtcError {
    /// Whether NVRTC rejected the source (its log says why), as opposed to
    /// failing to run.
    pub(super) fn rejected_source(&self) -> bool {
        self.result == sys::nvrtcResult::NVRTC_ERROR_COMPILATION
    }

    /// NVRTC's result, e.g. `NVRTC_ERROR_OUT_OF_MEMORY`.
    pub(super) fn result(&self) -> String {
        format!("{:?}", self.result)
    }
}

impl fmt::Display for NvrtcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} failed: {:?}", self.call, self.result)
    }
}

/// NVRTC's result as a typed one.
fn check(result: sys::nvrtcResult, call: &'static str) -> Result<(), NvrtcError> {
    if result == sys::nvrtcResult::NVRTC_SUCCESS {
        Ok(())
    } else {
        Err(NvrtcError { call, result })
    }
}

/// Whether the NVRTC library loads (by the names cudarc's loader tries).
#[cfg(not(kernelkit_candle_cuda))]
pub(in crate::backend::cuda) fn library_present() -> bool {
    // SAFETY: a dlopen by name that drops the handle; nothing is called.
    unsafe { sys::is_culib_present() }
}

/// The first of `names` that the NVRTC library lacks (call only when
/// [`library_present`]).
#[cfg(not(kernelkit_candle_cuda))]
pub(in crate::backend::cuda) fn missing_symbol<'a>(names: &[&'a str]) -> Option<&'a str> {
    // SAFETY: present (the caller checked), so `culib` loads it without
    // panicking; looking up symbols runs no code.
    let lib = unsafe { sys::culib() };
    names
        .iter()
        .copied()
        // SAFETY: a symbol lookup only; the pointer is not called here.
        .find(|name| unsafe { lib.get::<*const ()>(name.as_bytes()) }.is_err())
}

/// Linked, not loaded (`--cfg kernelkit_candle_cuda`: candle's CUDA backend
/// turns on cudarc's `dynamic-linking`): the program started, so the
/// NVRTC library is there.
#[cfg(kernelkit_candle_cuda)]
pub(in crate::backend::cuda) fn library_present() -> bool {
    true
}

/// Linked, not loaded: the first of `names` that the process's loaded
/// libraries lack.
#[cfg(kernelkit_candle_cuda)]
pub(in crate::backend::cuda) fn missing_symbol<'a>(names: &[&'a str]) -> Option<&'a str> {
    crate::backend::cuda::linked::missing_symbol(names)
}

/// Loads an NVRTC library file (`libnvrtc`, its builtins) so that the
/// dynamic loader finds it by its soname later; the loader's message if it
/// does not load.
pub(in crate::backend::cuda) fn preload(path: &Path) -> Result<libloading::Library, String> {
    // SAFETY: loading NVIDIA's NVRTC libraries runs only their own
    // initializers (the caller passes nothing else: the file the user's
    // setting names, or `libnvrtc*.so*` of a wheel or toolkit).
    unsafe { libloading::Library::new(path) }.map_err(|e| e.to_string())
}

/// Whether the NVRTC that cudarc calls is `library` (the same
/// `nvrtcVersion`): another one on the loader's path can come first in
/// cudarc's search by name. Call only when [`library_present`].
#[cfg(not(kernelkit_candle_cuda))]
pub(in crate::backend::cuda) fn is_loaded(library: &libloading::Library) -> bool {
    // SAFETY: present (the caller checked), so `culib` loads without
    // panicking; symbol lookups run no code.
    let used = unsafe { sys::culib().get::<*const ()>(b"nvrtcVersion") };
    // SAFETY: a symbol lookup only.
    let kept = unsafe { library.get::<*const ()>(b"nvrtcVersion") };
    match (used, kept) {
        (Ok(used), Ok(kept)) => *used == *kept,
        _ => false,
    }
}

/// Linked, not loaded: the linked NVRTC is the one in use, whatever was
/// loaded beside it.
#[cfg(kernelkit_candle_cuda)]
pub(in crate::backend::cuda) fn is_loaded(_library: &libloading::Library) -> bool {
    true
}

/// `nvrtcVersion`: (major, minor).
pub(in crate::backend::cuda) fn version() -> Result<(i32, i32), NvrtcError> {
    let (mut major, mut minor) = (0 as c_int, 0 as c_int);
    // SAFETY: writes two ints.
    check(
        unsafe { sys::nvrtcVersion(&mut major, &mut minor) },
        "nvrtcVersion",
    )?;
    Ok((major, minor))
}

/// `nvrtcGetSupportedArchs`: the architectures NVRTC compiles for (`90`
/// for `sm_90`).
pub(super) fn supported_archs() -> Result<Vec<i32>, NvrtcError> {
    let mut n = 0 as c_int;
    // SAFETY: writes one int.
    check(
        unsafe { sys::nvrtcGetNumSupportedArchs(&mut n) },
        "nvrtcGetNumSupportedArchs",
    )?;
    let mut archs = vec![0 as c_int; n.max(0) as usize];
    // SAFETY: `archs` has room for the `n` ints NVRTC writes.
    check(
        unsafe { sys::nvrtcGetSupportedArchs(archs.as_mut_ptr()) },
        "nvrtcGetSupportedArchs",
    )?;
    Ok(archs)
}

/// An NVRTC program, destroyed on drop. It borrows the strings it was
/// created from (NVRTC may read them until it is destroyed).
pub(super) struct Program<'a> {
    raw: sys::nvrtcProgram,
    _sources: std::marker::PhantomData<&'a CString>,
}

impl<'a> Program<'a> {
    /// `nvrtcCreateProgram`: a program of `src` (reported as file `name`)
    /// whose `#include`s of `include_names[i]` read `headers[i]` (the two
    /// lists are paired; extra entries of the longer one are ignored).
    pub(super) fn create(
        src: &'a CString,
        name: &'a CString,
        headers: &'a [CString],
        include_names: &'a [CString],
    ) -> Result<Program<'a>, NvrtcError> {
        let count = headers.len().min(include_names.len());
        let headers: Vec<*const c_char> = headers[..count].iter().map(|h| h.as_ptr()).collect();
        let include_names: Vec<*const c_char> =
            include_names[..count].iter().map(|n| n.as_ptr()).collect();
        let count = c_int::try_from(count).unwrap_or(c_int::MAX);
        let mut raw: sys::nvrtcProgram = std::ptr::null_mut();
        // SAFETY: every string is NUL-terminated and outlives the program
        // (the lifetime `'a` ties them to it); NVRTC reads the two arrays,
        // `count` pointers each, during the call.
        check(
            unsafe {
                sys::nvrtcCreateProgram(
                    &mut raw,
                    src.as_ptr(),
                    name.as_ptr(),
                    count,
                    headers.as_ptr(),
                    include_names.as_ptr(),
                )
            },
            "nvrtcCreateProgram",
        )?;
        Ok(Program {
            raw,
            _sources: std::marker::PhantomData,
        })
    }

    /// `nvrtcCompileProgram` with `options`.
    pub(super) fn compile(&self, options: &[CString]) -> Result<(), NvrtcError> {
        let opts: Vec<*const c_char> = options.iter().map(|o| o.as_ptr()).collect();
        let count = c_int::try_from(opts.len()).unwrap_or(c_int::MAX);
        // SAFETY: the program is live; `opts` points at `options`'
        // NUL-terminated strings, which outlive the call.
        check(
            unsafe { sys::nvrtcCompileProgram(self.raw, count, opts.as_ptr()) },
            "nvrtcCompileProgram",
        )
    }

    /// The compile log (empty if NVRTC cannot give it).
    pub(super) fn log(&self) -> String {
        let mut size = 0usize;
        // SAFETY: the program is live; writes one size.
        if unsafe { sys::nvrtcGetProgramLogSize(self.raw, &mut size) }
            != sys::nvrtcResult::NVRTC_SUCCESS
        {
            return String::new();
        }
        let mut buf = vec![0u8; size.max(1)];
        // SAFETY: `buf` holds the `size` bytes NVRTC writes.
        unsafe { sys::nvrtcGetProgramLog(self.raw, buf.as_mut_ptr() as *mut c_char) };
        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        String::from_utf8_lossy(&buf[..end]).into_owned()
    }

    /// The compiled cubin.
    pub(super) fn cubin(&self) -> Result<Vec<u8>, String> {
        // SAFETY: the two functions of a cubin: a size, then that many bytes.
        unsafe { self.output(sys::nvrtcGetCUBINSize, sys::nvrtcGetCUBIN, "CUBIN") }
    }

    /// The compiled PTX, NUL-terminated.
    pub(super) fn ptx(&self) -> Result<Vec<u8>, String> {
        // SAFETY: the two functions of PTX: a size, then that many bytes.
        unsafe { self.output(sys::nvrtcGetPTXSize, sys::nvrtcGetPTX, "PTX") }
    }

    /// An output of the compiled program: its size from `size_of`, its
    /// bytes from `get`.
    ///
    /// # Safety
    ///
    /// `get` must write at most as many bytes as `size_of` reports.
    unsafe fn output(
        &self,
        size_of: unsafe fn(sys::nvrtcProgram, *mut usize) -> sys::nvrtcResult,
        get: unsafe fn(sys::nvrtcProgram, *mut c_char) -> sys::nvrtcResult,
        what: &str,
    ) -> Result<Vec<u8>, String> {
        let mut size = 0usize;
        // SAFETY: the program is live; writes one size.
        check(unsafe { size_of(self.raw, &mut size) }, "nvrtcGet*Size")
            .map_err(|e| e.to_string())?;
        if size == 0 {
            return Err(format!("NVRTC produced an empty {what}"));
        }
        let mut out = vec![0u8; size];
        // SAFETY: `out` holds the `size` bytes `get` writes (the contract).
        check(
            unsafe { get(self.raw, out.as_mut_ptr() as *mut c_char) },
            "nvrtcGet*",
        )
        .map_err(|e| e.to_string())?;
        Ok(out)
    }
}

impl Drop for Program<'_> {
    fn drop(&mut self) {
        // SAFETY: destroys the program this value owns.
        unsafe {
            sys::nvrtcDestroyProgram(&mut self.raw);
        }
    }
}
