//! The process's JIT policy ([`JitPolicy`]): whether a variant that no
//! cache tier holds (not loaded, not in the artifact store, not in the
//! fleet tier) is compiled, compiled and logged, or refused. The same
//! policy covers kernelkit's own strided-copy kernel (GPUs copy strided
//! inputs with it): the device floor applies it there.
//!
//! Read from `KERNELKIT_JIT` at first use; [`set_policy`] changes it. The
//! check (`device::jit`) runs where a call resolves its function and the
//! variant has none on the device yet (a warm call never comes here),
//! before anything is allocated or queued: a refused call leaves the
//! device as it was.
//!
//! Compiles asked for ahead of time (`Precompile`, `kernelkit precompile`)
//! are exempt: they are where the policy moves compiles to. Under `warn`, each variant is
//! logged once per device (kernel, variant, architecture).

pub use crate::config::JitPolicy;
pub(crate) use crate::device::jit::{check, Pending};

/// The process's policy.
pub fn policy() -> JitPolicy {
    crate::config::jit_policy()
}

/// Sets the process's policy (from now on; calls in flight keep theirs).
pub fn set_policy(policy: JitPolicy) {
    crate::config::set_jit_policy(policy)
}
