//! The settings of a production process: whether it may compile kernels
//! at all (`KERNELKIT_JIT`), and where it records the variants it resolves
//! (`KERNELKIT_RECORD`). Both are the process's (a serving process either
//! may compile or may not), read once, and changed by the program through
//! `kernelkit::kernel::jit` and `kernelkit::kernel::record`.
//!
//! The policy in force lives here ([`jit_policy`], [`set_jit_policy`]), on
//! the base floor, so that every floor that resolves modules applies it:
//! the kernel floor to variants, the device floor to kernelkit's own
//! strided-copy kernel.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

use super::{warn_once, Vars};

static WARNED: AtomicBool = AtomicBool::new(false);

/// What a variant that no cache tier holds does: compile (`allow`, the
/// default), compile and log it once (`warn`), or fail the call before
/// anything is queued (`forbid`, [`CallError::JitForbidden`]).
///
/// [`CallError::JitForbidden`]: crate::CallError::JitForbidden
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum JitPolicy {
    /// Compile what is missing.
    #[default]
    Allow,
    /// Compile what is missing, and log each such variant once.
    Warn,
    /// Never compile: a missing variant is a typed error.
    Forbid,
}

impl JitPolicy {
    /// The policy `allow`, `warn` or `forbid` names (any case).
    pub fn parse(name: &str) -> Option<JitPolicy> {
        match name.trim().to_ascii_lowercase().as_str() {
            "allow" => Some(JitPolicy::Allow),
            "warn" => Some(JitPolicy::Warn),
            "forbid" => Some(JitPolicy::Forbid),
            _ => None,
        }
    }

    /// `allow`, `warn`, `forbid`.
    pub fn as_str(self) -> &'static str {
        match self {
            JitPolicy::Allow => "allow",
            JitPolicy::Warn => "warn",
            JitPolicy::Forbid => "forbid",
        }
    }
}

/// `KERNELKIT_JIT`: `allow`, `warn`, `forbid`; anything else is reported
/// once and read as `allow`.
pub(super) fn jit_from_vars(vars: &Vars<'_>) -> JitPolicy {
    match vars.trimmed("KERNELKIT_JIT") {
        None => JitPolicy::Allow,
        Some(v) => JitPolicy::parse(&v).unwrap_or_else(|| {
            warn_once(
                &WARNED,
                &format!("KERNELKIT_JIT={v:?} is not allow, warn or forbid; using allow"),
            );
            JitPolicy::Allow
        }),
    }
}

/// `KERNELKIT_RECORD`: the manifest file variants are appended to.
pub(super) fn record_from_vars(vars: &Vars<'_>) -> Option<PathBuf> {
    vars.os_nonempty("KERNELKIT_RECORD").map(PathBuf::from)
}

/// The process's policy: not read yet.
const UNSET: u8 = u8::MAX;
static POLICY: AtomicU8 = AtomicU8::new(UNSET);

fn code(p: JitPolicy) -> u8 {
    match p {
        JitPolicy::Allow => 0,
        JitPolicy::Warn => 1,
        JitPolicy::Forbid => 2,
    }
}

/// The process's JIT policy: `KERNELKIT_JIT` at first use, unless
/// [`set_jit_policy`] set one.
pub(crate) fn jit_policy() -> JitPolicy {
    let mut c = POLICY.load(Ordering::Relaxed);
    if c == UNSET {
        let from_env = code(super::Config::from_env().jit);
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

/// Sets the process's JIT policy (from now on; calls in flight keep
/// theirs).
pub(crate) fn set_jit_policy(policy: JitPolicy) {
    POLICY.store(code(policy), Ordering::Relaxed);
}
