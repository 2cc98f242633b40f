//! The CUDA libraries linked into the program rather than loaded at run
//! time: with `--cfg kernelkit_candle_cuda`, candle's CUDA backend turns on
//! cudarc's `dynamic-linking` (cudarc then has no loader to ask), so the
//! probe looks symbols up among the libraries the process has loaded.

/// The first of `names` that no library loaded in the process exports.
pub(super) fn missing_symbol<'a>(names: &[&'a str]) -> Option<&'a str> {
    // The process's own handle: lookups search every library it loaded
    // (the linked CUDA libraries among them).
    let this = libloading::os::unix::Library::this();
    names
        .iter()
        .copied()
        // SAFETY: a symbol lookup only; the pointer is not called here.
        .find(|name| unsafe { this.get::<*const ()>(name.as_bytes()) }.is_err())
}
