//! The JIT policy applied to one module about to be resolved on a device
//! ([`check`]): a variant's (the kernel floor asks, see `kernel::jit`) or
//! kernelkit's own strided-copy kernel's (`device::copy`). The policy is
//! the process's setting (`config`: `KERNELKIT_JIT`).
//!
//! The check runs where the device has no function for the module yet (a
//! warm call never comes here), before anything is allocated or queued: a
//! refused call leaves the device as it was. Under `warn`, each module is
//! logged once per device (kernel, variant, architecture).

use std::collections::HashSet;
use std::sync::{Mutex, OnceLock};

use crate::config::{jit_policy, JitPolicy};
use crate::device::Device;
use crate::error::CallError;

/// What the check needs to name a module.
pub(crate) struct Pending<'a> {
    /// The kernel (`kernelkit's strided copy` for the copy kernel).
    pub(crate) kernel: &'a str,
    /// The module's name in its key.
    pub(crate) function: &'a str,
    pub(crate) source_hash: u128,
    /// Template values and shapes (see `Variant::detail`), or the copy
    /// kernel's entry point and element type.
    pub(crate) detail: &'a str,
}

/// Applies the process's policy to a module about to be resolved on
/// `device`: under `forbid`, one that no tier holds (neither its own
/// artifact nor a fallback) is [`CallError::JitForbidden`].
pub(crate) fn check(device: &Device, pending: &Pending<'_>) -> Result<(), CallError> {
    let policy = jit_policy();
    if policy == JitPolicy::Allow {
        return Ok(());
    }
    if device
        .cache_state(pending.function, pending.source_hash)
        .compiled()
    {
        return Ok(());
    }
    let arch = device.backend().target().to_string();
    if policy == JitPolicy::Forbid {
        return Err(CallError::JitForbidden {
            kernel: pending.kernel.to_string(),
            variant: pending.detail.to_string(),
            arch,
            device: device.label().to_string(),
        });
    }
    // Once per module, entry point (the copy kernel's detail names it) and
    // device.
    type Seen = HashSet<(String, String, String)>;
    static WARNED: OnceLock<Mutex<Seen>> = OnceLock::new();
    let first = WARNED
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert((
            pending.function.to_string(),
            pending.detail.to_string(),
            device.label().to_string(),
        ));
    if first {
        tracing::warn!(
            "kernel `{}`: compiling variant {} for {arch} on {} (KERNELKIT_JIT=warn; \
             precompile it to keep compiles out of serving)",
            pending.kernel,
            pending.detail,
            device.label()
        );
    }
    Ok(())
}
