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

use super::compile::nvrtc;
use super::driver;

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
    "cuStreamQuery",
    "cuStreamWaitEvent",
    "cuStreamGetCtx",
    "cuStreamIsCapturing",
    "cuPointerGetAttribute",
    "cuEventCreate",
    "cuEventRecord",
    "cuEventDestroy_v2",
    "cuEventSynchronize",
    "cuEventQuery",
    "cuThreadExchangeStreamCaptureMode",
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
    if !driver::library_present() {
        return Err("the CUDA driver library (libcuda.so.1) could not be loaded".into());
    }
    if let Some(name) = driver::missing_symbol(DRIVER_SYMBOLS) {
        return Err(format!(
            "the CUDA driver is too old: it has no `{name}` (update the NVIDIA driver)"
        ));
    }
    let has_pools = driver::missing_symbol(POOL_SYMBOLS).is_none();

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
    if !nvrtc::library_present() {
        preload_nvrtc(toolkit);
        if !nvrtc::library_present() {
            return Err(format!(
                "NVRTC (libnvrtc.so) could not be loaded: put the CUDA toolkit's library \
                 directory on LD_LIBRARY_PATH or set CUDA_HOME (looked in {:?})",
                toolkit
            ));
        }
    }
    match nvrtc::missing_symbol(NVRTC_SYMBOLS) {
        Some(name) => Err(format!("NVRTC is too old: it has no `{name}`")),
        None => Ok(()),
    }
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
                let kept: Vec<_> = files.iter().filter_map(|f| nvrtc::preload(f)).collect();
                if !kept.is_empty() {
                    return kept;
                }
            }
        }
        Vec::new()
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The functions `source` names as `sys::PREFIXName` (an upper-case
    /// letter after the prefix: `cuInit`, not `culib`), less `types`.
    fn calls<'a>(source: &'a str, prefix: &str, types: &[&str]) -> Vec<&'a str> {
        let needle = format!("sys::{prefix}");
        source
            .match_indices(&needle)
            .map(|(at, _)| {
                let name = &source[at + "sys::".len()..];
                let end = name
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(name.len());
                &name[..end]
            })
            .filter(|name| {
                name[prefix.len()..].starts_with(|c: char| c.is_ascii_uppercase())
                    && !types.contains(name)
            })
            .collect()
    }

    /// Every driver and NVRTC function the wrappers call is checked by the
    /// probe, so none of them can reach cudarc's panicking loader.
    #[test]
    fn every_call_of_the_wrappers_is_probed() {
        let sources = [
            include_str!("driver/mod.rs"),
            include_str!("driver/context.rs"),
            include_str!("driver/stream.rs"),
            include_str!("driver/memory.rs"),
            include_str!("driver/module.rs"),
        ];
        let driver: Vec<&str> = sources
            .iter()
            .flat_map(|source| calls(source, "cu", &[]))
            .collect();
        assert!(driver.contains(&"cuLaunchKernel"), "{driver:?}");
        for name in driver {
            assert!(
                DRIVER_SYMBOLS.contains(&name) || POOL_SYMBOLS.contains(&name),
                "driver/ calls `{name}`, which the probe does not check"
            );
        }
        let nvrtc = calls(
            include_str!("compile/nvrtc.rs"),
            "nvrtc",
            &["nvrtcResult", "nvrtcProgram"],
        );
        assert!(nvrtc.contains(&"nvrtcCompileProgram"), "{nvrtc:?}");
        for name in nvrtc {
            assert!(
                NVRTC_SYMBOLS.contains(&name),
                "nvrtc.rs calls `{name}`, which the probe does not check"
            );
        }
    }
}
