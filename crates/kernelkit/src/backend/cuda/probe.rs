//! Makes sure the CUDA libraries are there before anything calls them.
//!
//! cudarc loads `libcuda` and `libnvrtc` at run time and *panics* when a
//! library or one of its symbols is missing. kernelkit must answer "no CUDA
//! here" with a typed error instead, so that `Device::default_device()` can
//! fall back to the CPU. So before the first driver or NVRTC call this module
//! asks cudarc's own `is_culib_present()` (same library names as its loader,
//! no panic), and then looks up, through the library cudarc loaded, every
//! symbol kernelkit calls: after that no cudarc call can hit a missing
//! library or symbol. `CudaBackend::open` also runs inside `catch_unwind` as
//! a second guard.
//!
//! When NVRTC is not on the loader's path, it is preloaded from the
//! configured CUDA toolkits ([`CudaConfig::toolkit_dirs`]: `CUDA_HOME`,
//! `CUDA_PATH`, `/usr/local/cuda`): the dynamic loader then finds it by its
//! soname when cudarc asks for it by name. Libraries are loaded once per
//! process, so the first caller's toolkits are the ones searched.
//!
//! [`CudaConfig::toolkit_dirs`]: crate::config::CudaConfig::toolkit_dirs

use std::path::PathBuf;
use std::sync::OnceLock;

/// Driver symbols kernelkit calls (through `cudarc::driver::sys`).
const DRIVER_SYMBOLS: &[&str] = &[
    "cuInit",
    "cuDriverGetVersion",
    "cuDeviceGet",
    "cuDeviceGetCount",
    "cuDeviceGetAttribute",
    "cuDeviceGetName",
    "cuDeviceTotalMem_v2",
    "cuDevicePrimaryCtxRetain",
    "cuDevicePrimaryCtxRelease_v2",
    "cuCtxSetCurrent",
    "cuCtxSynchronize",
    "cuStreamCreate",
    "cuStreamDestroy_v2",
    "cuStreamSynchronize",
    "cuStreamWaitEvent",
    "cuEventCreate",
    "cuEventRecord",
    "cuEventDestroy_v2",
    "cuEventSynchronize",
    "cuEventElapsedTime",
    "cuMemAlloc_v2",
    "cuMemFree_v2",
    "cuMemcpyHtoDAsync_v2",
    "cuMemcpyDtoHAsync_v2",
    "cuMemcpyDtoDAsync_v2",
    "cuMemsetD8Async",
    "cuMemsetD16Async",
    "cuMemsetD32Async",
    "cuMemsetD2D32Async",
    "cuModuleLoadData",
    "cuModuleUnload",
    "cuModuleGetFunction",
    "cuFuncSetAttribute",
    "cuLaunchKernel",
    "cuGetErrorName",
    "cuGetErrorString",
];

/// Stream-ordered allocation symbols (CUDA 11.2+); without them kernelkit
/// allocates with `cuMemAlloc`.
pub(super) const POOL_SYMBOLS: &[&str] = &[
    "cuMemPoolCreate",
    "cuMemPoolDestroy",
    "cuMemPoolSetAttribute",
    "cuMemAllocFromPoolAsync",
    "cuMemFreeAsync",
];

/// NVRTC symbols kernelkit calls (through `cudarc::nvrtc::sys`).
const NVRTC_SYMBOLS: &[&str] = &[
    "nvrtcVersion",
    "nvrtcGetNumSupportedArchs",
    "nvrtcGetSupportedArchs",
    "nvrtcCreateProgram",
    "nvrtcCompileProgram",
    "nvrtcDestroyProgram",
    "nvrtcGetProgramLogSize",
    "nvrtcGetProgramLog",
    "nvrtcGetCUBINSize",
    "nvrtcGetCUBIN",
    "nvrtcGetPTXSize",
    "nvrtcGetPTX",
];

/// What the probe found.
pub(super) struct Libraries {
    /// The driver has the stream-ordered allocator's symbols.
    pub(super) has_pools: bool,
}

/// Checks the driver and NVRTC (found in `toolkit` if the loader does not
/// find it) once per process; the answer is cached.
pub(super) fn libraries(toolkit: &[PathBuf]) -> Result<&'static Libraries, String> {
    static ANSWER: OnceLock<Result<Libraries, String>> = OnceLock::new();
    ANSWER
        .get_or_init(|| probe(toolkit))
        .as_ref()
        .map_err(Clone::clone)
}

fn probe(toolkit: &[PathBuf]) -> Result<Libraries, String> {
    // SAFETY: `is_culib_present` only tries to dlopen the driver library by
    // its usual names and drops the handle; it calls nothing in it.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err("the CUDA driver library (libcuda.so.1) could not be loaded".into());
    }
    // SAFETY: the library is present (checked above), so `culib` loads it
    // without panicking; looking up symbols runs no code.
    let driver = unsafe { cudarc::driver::sys::culib() };
    for name in DRIVER_SYMBOLS {
        // SAFETY: a symbol lookup only; the pointer is not called here.
        if unsafe { driver.get::<*const ()>(name.as_bytes()) }.is_err() {
            return Err(format!(
                "the CUDA driver is too old: it has no `{name}` (update the NVIDIA driver)"
            ));
        }
    }
    // SAFETY: as above, lookups only.
    let has_pools = POOL_SYMBOLS
        .iter()
        .all(|name| unsafe { driver.get::<*const ()>(name.as_bytes()) }.is_ok());

    nvrtc(toolkit)?;
    Ok(Libraries { has_pools })
}

/// Checks (once) that NVRTC and every symbol kernelkit calls in it load,
/// preloading it from the first of the `toolkit` roots that has it if
/// needed. Needs no driver or GPU.
pub(super) fn nvrtc(toolkit: &[PathBuf]) -> Result<(), String> {
    static ANSWER: OnceLock<Result<(), String>> = OnceLock::new();
    ANSWER.get_or_init(|| probe_nvrtc(toolkit)).clone()
}

fn probe_nvrtc(toolkit: &[PathBuf]) -> Result<(), String> {
    // SAFETY: as for the driver: a dlopen by name, nothing called.
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        preload_nvrtc(toolkit);
        // SAFETY: as above.
        if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
            return Err(format!(
                "NVRTC (libnvrtc.so) could not be loaded: put the CUDA toolkit's library \
                 directory on LD_LIBRARY_PATH or set CUDA_HOME (looked in {:?})",
                toolkit
            ));
        }
    }
    // SAFETY: present (checked above), so no panic; lookups only.
    let nvrtc = unsafe { cudarc::nvrtc::sys::culib() };
    for name in NVRTC_SYMBOLS {
        // SAFETY: a symbol lookup only.
        if unsafe { nvrtc.get::<*const ()>(name.as_bytes()) }.is_err() {
            return Err(format!("NVRTC is too old: it has no `{name}`"));
        }
    }
    Ok(())
}

/// Loads `libnvrtc-builtins` and `libnvrtc` from the first toolkit that has
/// them and keeps them loaded for the life of the process.
fn preload_nvrtc(toolkit: &[PathBuf]) {
    static KEPT: OnceLock<Vec<libloading::Library>> = OnceLock::new();
    KEPT.get_or_init(|| {
        for home in toolkit {
            for sub in ["lib64", "lib"] {
                let dir = home.join(sub);
                let Ok(entries) = std::fs::read_dir(&dir) else {
                    continue;
                };
                let mut files: Vec<PathBuf> = entries
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| {
                        p.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                            n.starts_with("libnvrtc") && n.contains(".so") && !n.contains(".alt.")
                        })
                    })
                    .collect();
                // Builtins first: libnvrtc opens them by name when it compiles.
                files.sort_by_key(|p| {
                    let n = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
                    (!n.contains("builtins"), n.len())
                });
                let mut kept = Vec::new();
                for f in files {
                    // SAFETY: loading NVIDIA's NVRTC libraries runs only their
                    // own initializers.
                    if let Ok(lib) = unsafe { libloading::Library::new(&f) } {
                        kept.push(lib);
                    }
                }
                if !kept.is_empty() {
                    return kept;
                }
            }
        }
        Vec::new()
    });
}
