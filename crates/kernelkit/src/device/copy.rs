//! kernelkit's strided-copy kernel on a device (`backend::copy`): a GPU
//! copies a strided input of a kernel that asks for row-contiguous inputs
//! (and a checked kernel's output, see `device::bounds`) with it. Its
//! module is resolved as a variant's is: the device's loaded modules, the
//! artifact tiers (disk store, fleet tier; bundles import into them; PTX
//! of the virtual architecture as the fallback, counted in `ptx_loads`),
//! then a compile, keyed by the backend's identity and the source's hash
//! like any module (no paths). Each entry point (one per element size) is
//! kept in a slot of the device's, so a warm copy takes no lookup.
//!
//! On the way to a compile it passes what a variant passes: the process's
//! JIT policy (`device::jit`; under `forbid`, a copy kernel that no tier
//! holds refuses the call before anything is queued), and recording (a
//! manifest line naming it, once per backend and architecture:
//! [`copy_line`]). A backend that copies on the host (the CPU) needs no
//! kernel; its strided copies are recorded too, so a manifest of a CPU
//! run says that the workload copies.

use std::sync::Arc;

use crate::backend::copy::{entry_index, BuiltinKernel, ENTRIES, STRIDED_COPY};
use crate::cache::loaded::{FunctionRef, FunctionSlots};
use crate::cache::resolver::ModuleRequest;
use crate::device::{jit, record_sink, Device};
use crate::dtype::DType;
use crate::error::Result;

/// One slot set per entry point of the copy kernel (see [`ENTRIES`]).
pub(crate) type CopySlots = [Arc<FunctionSlots>; 4];

/// Why a copy cannot be made on a stream that is being captured: the
/// device would load (or compile) the copy kernel's module, which a
/// capture forbids.
pub(crate) const NOT_LOADED_FOR_CAPTURE: &str =
    "kernelkit's strided-copy kernel is not loaded on this device for that element size yet \
     (make one strided copy of that dtype before the capture, or call \
     `Device::prepare_strided_copy`)";

impl Device {
    /// The copy kernel's entry point for elements of `dtype` on this
    /// device, held for one call: `None` where the backend copies on the
    /// host. From the device's slot when it is warm; else through the
    /// JIT policy and the module resolver (see the module documentation).
    pub(crate) fn copy_function(&self, dtype: DType) -> Result<Option<FunctionRef>> {
        let Some(copy) = self.backend().copy_kernel() else {
            if record_sink::active() {
                record_sink::append(&copy_line(self.backend().name(), self.target()));
            }
            return Ok(None);
        };
        let index = entry_index(dtype.size());
        if let Some(f) = self.kept_function(&self.0.copy_slots[index]) {
            return Ok(Some(f));
        }
        self.resolve_copy(copy, dtype, true).map(Some)
    }

    /// [`Device::copy_function`] for a call on a stream that is being
    /// captured: the kept entry point only (nothing may be loaded or
    /// compiled now), or why there is none.
    pub(crate) fn kept_copy_function(
        &self,
        dtype: DType,
    ) -> std::result::Result<Option<FunctionRef>, &'static str> {
        if self.backend().copy_kernel().is_none() {
            return Ok(None);
        }
        let index = entry_index(dtype.size());
        self.kept_function(&self.0.copy_slots[index])
            .map(Some)
            .ok_or(NOT_LOADED_FOR_CAPTURE)
    }

    /// Loads (or compiles, whatever the JIT policy: a compile asked for
    /// ahead of time) kernelkit's strided-copy kernel on this device, every
    /// entry point of it, so that no call pays for it later: a warm-up
    /// before serving or before a CUDA graph capture, and what
    /// `kernelkit precompile` runs for each GPU architecture. Nothing to do
    /// on a device that copies on the host (the CPU): returns false there,
    /// true where the kernel is ready.
    pub fn prepare_strided_copy(&self) -> Result<bool> {
        let Some(copy) = self.backend().copy_kernel() else {
            return Ok(false);
        };
        for size in [1, 2, 4, 8] {
            let dtype = DType::ALL
                .into_iter()
                .find(|d| d.size() == size)
                .expect("a dtype of each element size");
            if self
                .kept_function(&self.0.copy_slots[entry_index(size)])
                .is_none()
            {
                self.resolve_copy(copy, dtype, false)?;
            }
        }
        Ok(true)
    }

    /// Resolves the entry point for `dtype` of `copy` (this backend's copy
    /// kernel) and keeps it in its slot; with `checked`, through the JIT
    /// policy first.
    #[cold]
    #[inline(never)]
    fn resolve_copy(
        &self,
        copy: &BuiltinKernel,
        dtype: DType,
        checked: bool,
    ) -> Result<FunctionRef> {
        let index = entry_index(dtype.size());
        if record_sink::active() {
            record_sink::append(&copy_line(self.backend().name(), self.target()));
        }
        let source_hash = copy.source_hash();
        if checked {
            let detail = format!(
                "{} (kernelkit's strided copy of {}-byte elements, for a strided {} input)",
                ENTRIES[index],
                dtype.size(),
                dtype.name()
            );
            jit::check(
                self,
                &jit::Pending {
                    kernel: copy.kernel,
                    function: copy.function,
                    source_hash,
                    detail: &detail,
                },
            )?;
        }
        let source = || Arc::<str>::from(copy.source);
        let request = ModuleRequest {
            kernel: copy.kernel,
            function: copy.function,
            source_hash,
            source: &source,
        };
        Ok(self.resolve_entry(&request, ENTRIES[index], &self.0.copy_slots[index])?)
    }
}

/// The manifest line that names kernelkit's strided copy as used by a
/// process on `backend` for `arch`: `{"builtin": "strided_copy", ...}`
/// (read by `manifest`; no path, user or host name).
pub(crate) fn copy_line(backend: &str, arch: &str) -> String {
    serde_json::json!({
        "builtin": STRIDED_COPY.manifest_name,
        "backend": backend,
        "arch": arch,
        "function": STRIDED_COPY.function,
    })
    .to_string()
}
