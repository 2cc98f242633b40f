//! NVTX ranges for profilers (`KERNELKIT_NVTX`, `NVTX_INJECTION64_PATH`):
//! see the library's `nvtx` module for what is recorded.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

use super::{warn_once, Vars};

/// Whether kernelkit tells a profiler about its compiles, loads and
/// launches, and which profiler library to tell.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct NvtxConfig {
    /// Emit NVTX ranges (`KERNELKIT_NVTX=1`). Off by default: off costs one
    /// relaxed load of a flag per launch.
    pub enabled: bool,
    /// The tool's injection library (`NVTX_INJECTION64_PATH`, the variable
    /// Nsight Systems and other NVTX tools set for the processes they
    /// profile). Without it, `libnvToolsExt.so.1` is used if the loader
    /// finds one; without either, no range is emitted.
    pub injection: Option<PathBuf>,
}

/// Set once `KERNELKIT_NVTX` was warned about.
static WARNED: AtomicBool = AtomicBool::new(false);

impl NvtxConfig {
    pub(super) fn from_vars(vars: &Vars<'_>) -> NvtxConfig {
        let enabled = match vars.trimmed("KERNELKIT_NVTX").as_deref() {
            None | Some("0") | Some("off") | Some("false") | Some("no") => false,
            Some("1") | Some("on") | Some("true") | Some("yes") => true,
            Some(other) => {
                warn_once(
                    &WARNED,
                    &format!("KERNELKIT_NVTX={other:?} is not 0 or 1: NVTX ranges stay off"),
                );
                false
            }
        };
        NvtxConfig {
            enabled,
            injection: vars.os_nonempty("NVTX_INJECTION64_PATH").map(PathBuf::from),
        }
    }
}
