//! The settings of a production process: whether it may compile kernels
//! at all (`KERNELKIT_JIT`), and where it records the variants it resolves
//! (`KERNELKIT_RECORD`). Both are the process's (a serving process either
//! may compile or may not), read once, and changed by the program through
//! `kernelkit::kernel::jit` and `kernelkit::kernel::record`.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

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
