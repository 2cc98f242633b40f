//! Loads an artifact (a kept source) and resolves its functions by name.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::backend::{CompileJob, Function, Module};
use crate::error::CompileError;

/// A loaded artifact: the source it was compiled from, and whether it is
/// still loaded (shared with its functions).
pub(super) struct NullModule {
    source: Box<str>,
    loaded: Arc<AtomicBool>,
}

/// Unloading: from now on a launch of one of its functions is refused, as
/// a GPU faults on a function of an unloaded module.
impl Drop for NullModule {
    fn drop(&mut self) {
        self.loaded.store(false, Ordering::Release);
    }
}

/// A function resolved from a null module: its name, for the records, and
/// whether its module is still loaded. Like a `CUfunction`, it does not
/// keep its module: a launch of it after the module was unloaded is an
/// error (what the null device checks of the unload protocol).
pub(crate) struct NullFunction {
    pub(crate) name: Arc<str>,
    loaded: Arc<AtomicBool>,
}

impl NullFunction {
    /// A function of no module (always loaded), for the models of the
    /// binding protocol.
    #[cfg(all(test, loom))]
    pub(crate) fn detached(name: &str) -> Function {
        Function::Null(Arc::new(NullFunction {
            name: name.into(),
            loaded: Arc::new(AtomicBool::new(true)),
        }))
    }

    /// Whether its module is still loaded.
    pub(super) fn module_loaded(&self) -> bool {
        self.loaded.load(Ordering::Acquire)
    }
}

pub(super) fn load(job: &CompileJob<'_>, artifact: &[u8]) -> Result<Module, CompileError> {
    let source = std::str::from_utf8(artifact).map_err(|e| CompileError::Load {
        kernel: job.kernel.to_string(),
        function: job.function.to_string(),
        reason: format!("the artifact is not a null backend's (not UTF-8 text: {e})"),
    })?;
    Ok(Arc::new(NullModule {
        source: source.into(),
        loaded: Arc::new(AtomicBool::new(true)),
    }))
}

/// The function `name` of `module`, if its source defines one: the name
/// followed by its parameter list, as every dialect writes a kernel's
/// signature.
pub(super) fn function(
    kernel: &str,
    module: &Module,
    name: &str,
) -> Result<Function, CompileError> {
    let fail = |reason: &str| CompileError::Load {
        kernel: kernel.to_string(),
        function: name.to_string(),
        reason: reason.to_string(),
    };
    let module = module
        .downcast_ref::<NullModule>()
        .ok_or_else(|| fail("the module is not a null backend's"))?;
    if !defines(&module.source, name) {
        return Err(fail("the module defines no function of that name"));
    }
    Ok(Function::Null(Arc::new(NullFunction {
        name: name.into(),
        loaded: module.loaded.clone(),
    })))
}

/// Whether `source` holds `name(` with `name` a whole identifier.
fn defines(source: &str, name: &str) -> bool {
    if name.is_empty() {
        return false;
    }
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    source.match_indices(name).any(|(at, _)| {
        let before = source[..at].chars().next_back();
        let after = source[at + name.len()..].trim_start_matches([' ', '\t', '\n']);
        !before.is_some_and(ident) && after.starts_with('(')
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_function_is_a_whole_name_before_its_parameters() {
        let src = "extern \"C\" void custom_kernel_k_1(int x) {}\nvoid other (int);";
        assert!(defines(src, "custom_kernel_k_1"));
        assert!(defines(src, "other"));
        assert!(!defines(src, "kernel_k_1"), "part of a name");
        assert!(!defines(src, "custom_kernel_k"), "a prefix");
        assert!(!defines(src, "x"), "not followed by a parameter list");
        assert!(!defines(src, ""));
    }
}
