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
//! NVRTC is first loaded from the file `nvrtc_path` chooses (the setting,
//! NVIDIA's wheels, a toolkit): the dynamic loader then finds it by its
//! soname when cudarc asks for it by name. Libraries are loaded once per
//! process, so the first caller's configuration is the one followed.

use std::sync::OnceLock;

use super::compile::nvrtc;
use super::{driver, nvrtc_path};
use crate::config::CudaConfig;

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
    "cuFuncGetAttribute",
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

/// Driver symbols of newer drivers that a wrapper asks for itself before
/// calling (`driver::missing_symbol`) and does without: event timing
/// (CUDA 12.8+; tuning falls back to the host's clock).
pub(in crate::backend::cuda) const OPTIONAL_SYMBOLS: &[&str] = &["cuEventElapsedTime_v2"];

/// Driver symbols of the graphs kernelkit captures itself (autotuning's
/// timed batches), asked for before the first capture; without one of
/// them batches are timed as launched.
pub(in crate::backend::cuda) const GRAPH_SYMBOLS: &[&str] = &[
    "cuStreamBeginCapture_v2",
    "cuStreamEndCapture",
    "cuGraphInstantiateWithFlags",
    "cuGraphLaunch",
    "cuGraphExecDestroy",
    "cuGraphDestroy",
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

/// The oldest NVRTC that compiles the generated CUDA prelude: 12.0 to 12.6
/// reject its vector types (anonymous structs inside unions), so an older
/// one is refused when it is loaded rather than at every compile.
pub(super) const MIN_NVRTC: (i32, i32) = (12, 8);

/// What the probe found.
pub(super) struct Libraries {
    /// The driver has the stream-ordered allocator's symbols.
    pub(super) has_pools: bool,
}

/// Checks the driver and NVRTC (found where `config` says, see
/// `nvrtc_path`) once per process; the answer is cached.
pub(super) fn libraries(config: &CudaConfig) -> Result<&'static Libraries, String> {
    static ANSWER: OnceLock<Result<Libraries, String>> = OnceLock::new();
    ANSWER
        .get_or_init(|| probe(config))
        .as_ref()
        .map_err(Clone::clone)
}

fn probe(config: &CudaConfig) -> Result<Libraries, String> {
    if !driver::library_present() {
        return Err(
            "the CUDA driver library (libcuda.so.1, installed with the NVIDIA \
                    driver) could not be loaded: this machine has no NVIDIA driver, or its \
                    library directory is not on the loader's path"
                .into(),
        );
    }
    if let Some(name) = driver::missing_symbol(DRIVER_SYMBOLS) {
        return Err(format!(
            "the CUDA driver is too old: it has no `{name}` (update the NVIDIA driver)"
        ));
    }
    let has_pools = driver::missing_symbol(POOL_SYMBOLS).is_none();

    nvrtc(config)?;
    Ok(Libraries { has_pools })
}

/// Checks (once) that NVRTC and every symbol kernelkit calls in it load,
/// loading it first from where `config` says (see `nvrtc_path`). Needs no
/// driver or GPU. Libraries are loaded once per process, so the first
/// caller's configuration is the one followed.
pub(super) fn nvrtc(config: &CudaConfig) -> Result<(), String> {
    static ANSWER: OnceLock<Result<(), String>> = OnceLock::new();
    ANSWER.get_or_init(|| probe_nvrtc(config)).clone()
}

fn probe_nvrtc(config: &CudaConfig) -> Result<(), String> {
    let chosen = nvrtc_path::choose(config);
    let kept = match &chosen {
        Some(chosen) => Some(preload_nvrtc(chosen)?),
        None => None,
    };
    if !nvrtc::library_present() {
        return Err(nvrtc_path::not_found(config));
    }
    if let Some(name) = nvrtc::missing_symbol(NVRTC_SYMBOLS) {
        return Err(format!(
            "NVRTC is too old: it has no `{name}` (kernelkit needs NVRTC {}.{} or newer)",
            MIN_NVRTC.0, MIN_NVRTC.1
        ));
    }
    let version = nvrtc::version().map_err(|e| e.to_string())?;
    if version < MIN_NVRTC {
        let from = chosen
            .as_ref()
            .map_or_else(|| "the loader's path".to_string(), |c| c.describe());
        return Err(format!(
            "NVRTC {}.{} (from {from}) is too old: kernelkit's generated CUDA code needs \
             NVRTC {}.{} or newer. Get one with `pip install 'nvidia-cuda-nvrtc-cu12>=12.8'` \
             (NVIDIA driver 525 or newer) or `pip install nvidia-cuda-nvrtc` (CUDA 13, driver \
             580 or newer), or point KERNELKIT_NVRTC_PATH at one",
            version.0, version.1, MIN_NVRTC.0, MIN_NVRTC.1
        ));
    }
    if let (Some(chosen), Some(kept)) = (chosen, kept) {
        if !nvrtc::is_loaded(kept) {
            // cudarc asks for `libnvrtc.so` before the versioned names, so
            // an unversioned one on the loader's path comes first.
            let message = format!(
                "{} was loaded, but another NVRTC on the loader's path (a `libnvrtc.so` in \
                 LD_LIBRARY_PATH or the system's library directories) is the one in use; to \
                 use the chosen one, start the program with a directory first on \
                 LD_LIBRARY_PATH that holds a link named `libnvrtc.so` to {}",
                chosen.describe(),
                chosen.path.display()
            );
            if chosen.source == nvrtc_path::Source::Setting {
                return Err(message);
            }
            tracing::warn!("{message}");
        }
    }
    Ok(())
}

/// Loads `chosen` (its builtins first) and keeps it loaded for the life of
/// the process: the dynamic loader then gives it to cudarc by its soname.
fn preload_nvrtc(chosen: &nvrtc_path::Chosen) -> Result<&'static libloading::Library, String> {
    static KEPT: OnceLock<Result<Vec<libloading::Library>, String>> = OnceLock::new();
    let kept = KEPT.get_or_init(|| {
        let mut kept: Vec<libloading::Library> = nvrtc_path::builtins_beside(&chosen.path)
            .iter()
            .filter_map(|f| nvrtc::preload(f).ok())
            .collect();
        let library = nvrtc::preload(&chosen.path).map_err(|e| {
            format!(
                "NVRTC could not be loaded from {}: {e}. {}",
                chosen.describe(),
                if chosen.source == nvrtc_path::Source::Setting {
                    "Point KERNELKIT_NVRTC_PATH at a libnvrtc.so.* file (e.g. \
                     site-packages/nvidia/cu13/lib/libnvrtc.so.13), or unset it"
                } else {
                    "Reinstall it, or set KERNELKIT_NVRTC_PATH to another libnvrtc.so.*"
                }
            )
        })?;
        kept.push(library);
        Ok(kept)
    });
    match kept {
        Ok(libraries) => libraries
            .last()
            .ok_or_else(|| "NVRTC was not kept loaded".to_string()),
        Err(e) => Err(e.clone()),
    }
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
                DRIVER_SYMBOLS.contains(&name)
                    || POOL_SYMBOLS.contains(&name)
                    || OPTIONAL_SYMBOLS.contains(&name),
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
