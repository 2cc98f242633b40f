//! The process's JIT policy ([`JitPolicy`]): whether a variant that no
//! cache tier holds (not loaded, not in the artifact store, not in the
//! fleet tier) is compiled, compiled and logged, or refused.
//!
//! Read from `KERNELKIT_JIT` at first use; [`set_policy`] changes it. The
//! check runs where a call resolves its function and the variant has none
//! on the device yet (a warm call never comes here), before anything is
//! allocated or queued: a refused call leaves the device as it was.
//!
//! Compiles asked for ahead of time (`Precompile`, `kernelkit precompile`)
//! are exempt: they are where the policy moves compiles to. Under `warn`, each variant is
//! logged once per device (kernel, variant, architecture).

use std::collections::HashSet;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Mutex, OnceLock};

use crate::config::Config;
pub use crate::config::JitPolicy;
use crate::device::Device;
use crate::error::CallError;

/// Not read yet.
const UNSET: u8 = u8::MAX;
static POLICY: AtomicU8 = AtomicU8::new(UNSET);

fn code(p: JitPolicy) -> u8 {
    match p {
        JitPolicy::Allow => 0,
        JitPolicy::Warn => 1,
        JitPolicy::Forbid => 2,
    }
}

/// The process's policy.
pub fn policy() -> JitPolicy {
    let mut c = POLICY.load(Ordering::Relaxed);
    if c == UNSET {
        let from_env = code(Config::from_env().jit);
        c = match POLICY.compare_exchange(UNSET, from_env, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => from_env,
            Err(set) => set,
        };
    }
    match c {
        1 => JitPolicy::Warn,
        2 => JitPolicy::Forbid,
        _ => JitPolicy::Allow,
    }
}

/// Sets the process's policy (from now on; calls in flight keep theirs).
pub fn set_policy(policy: JitPolicy) {
    POLICY.store(code(policy), Ordering::Relaxed);
}

/// What the check needs to name a variant.
pub(crate) struct Pending<'a> {
    pub(crate) kernel: &'a str,
    pub(crate) function: &'a str,
    pub(crate) source_hash: u128,
    /// Template values and shapes (see `Variant::detail`).
    pub(crate) detail: &'a str,
}

/// Applies the policy to a variant about to be resolved on `device`.
pub(crate) fn check(device: &Device, pending: &Pending<'_>) -> Result<(), CallError> {
    let policy = policy();
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
    static WARNED: OnceLock<Mutex<HashSet<(String, String, String)>>> = OnceLock::new();
    let first = WARNED
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert((
            pending.function.to_string(),
            pending.kernel.to_string(),
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
