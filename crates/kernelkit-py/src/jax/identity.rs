//! A kernel's identity under JAX: its spec as one canonical JSON text and
//! the 128-bit hash of that text, both carried as FFI attributes of every
//! call, so that a lowered program names its kernel by content (not by a
//! process-local number) and a process that loads it (`jax.export`, the
//! persistent compilation cache) rebuilds the same kernel from the text.
//!
//! The process keeps one [`Kernel`] per identity ([`kernel_for`]), so every
//! call site of one kernel, and the Python object that traced it, share its
//! variant memo and its compiled modules.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use kernelkit::{BodyLanguage, Kernel, MathMode};
use serde::{Deserialize, Serialize};

/// What makes a kernel: the constructor's arguments.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct JaxSpec {
    pub name: String,
    pub inputs: Vec<String>,
    pub outputs: Vec<String>,
    pub source: String,
    pub header: String,
    pub ensure_row_contiguous: bool,
    pub atomic_outputs: bool,
    /// `metal` (an MLX Metal body) or `cuda` (a CUDA C++ body).
    pub language: String,
    /// `safe`, `relaxed` or `fast`.
    pub math_mode: String,
    /// Bytes of dynamic shared memory per threadgroup (CUDA bodies).
    pub shared_memory: u32,
    /// The kernel handles a leading batch axis itself (`vmap` calls it once
    /// on the batched arrays, the grid's z extent multiplied by the batch).
    pub batched: bool,
}

impl JaxSpec {
    /// The canonical text (field order fixed by the struct).
    pub(crate) fn text(&self) -> String {
        // Serializing plain strings, bools and ints cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The kernel's identity: the hash of its canonical text, in hex.
    pub(crate) fn identity_of(text: &str) -> String {
        format!("{:032x}", xxhash_rust::xxh3::xxh3_128(text.as_bytes()))
    }

    /// The kernelkit kernel it describes (names checked, body scanned).
    pub(crate) fn build(&self) -> kernelkit::Result<Kernel> {
        let mut builder = Kernel::builder(self.name.clone())
            .inputs(self.inputs.iter().cloned())
            .outputs(self.outputs.iter().cloned())
            .source(self.source.clone())
            .header(self.header.clone())
            .ensure_row_contiguous(self.ensure_row_contiguous)
            .atomic_outputs(self.atomic_outputs)
            .math_mode(MathMode::from_name(&self.math_mode).unwrap_or(MathMode::Safe));
        if self.language == "cuda" {
            builder = builder.language(BodyLanguage::Cuda);
        }
        builder.build()
    }
}

/// Kernels by identity, for the whole process.
fn registry() -> &'static Mutex<HashMap<String, Kernel>> {
    static KERNELS: OnceLock<Mutex<HashMap<String, Kernel>>> = OnceLock::new();
    KERNELS.get_or_init(Default::default)
}

/// Records `kernel` as the one of `identity` (the Python constructor's), so
/// that call sites bind the very kernel that traced them.
pub(crate) fn remember(identity: &str, kernel: &Kernel) -> Kernel {
    let mut map = registry().lock().unwrap_or_else(|p| p.into_inner());
    map.entry(identity.to_string())
        .or_insert_with(|| kernel.clone())
        .clone()
}

/// The kernel of `identity`, rebuilt from `text` when this process has
/// not made it yet; an error when the text does not hash to the identity
/// (a program edited by hand) or does not describe a kernel.
pub(crate) fn kernel_for(identity: &str, text: &str) -> Result<(Kernel, JaxSpec), String> {
    if JaxSpec::identity_of(text) != identity {
        return Err(format!(
            "kernelkit: the kernel attributes do not match: `spec` hashes to {}, not to `kernel` {identity}",
            JaxSpec::identity_of(text)
        ));
    }
    let spec: JaxSpec = serde_json::from_str(text)
        .map_err(|e| format!("kernelkit: the `spec` attribute is not a kernel spec: {e}"))?;
    let mut map = registry().lock().unwrap_or_else(|p| p.into_inner());
    if let Some(k) = map.get(identity) {
        return Ok((k.clone(), spec));
    }
    let kernel = spec
        .build()
        .map_err(|e| format!("kernelkit.BuildError: {e}"))?;
    map.insert(identity.to_string(), kernel.clone());
    Ok((kernel, spec))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> JaxSpec {
        JaxSpec {
            name: "k".into(),
            inputs: vec!["a".into()],
            outputs: vec!["b".into()],
            source: "uint i = thread_position_in_grid.x; b[i] = a[i];".into(),
            header: String::new(),
            ensure_row_contiguous: true,
            atomic_outputs: false,
            language: "metal".into(),
            math_mode: "safe".into(),
            shared_memory: 0,
            batched: false,
        }
    }

    #[test]
    fn identity_is_content_addressed() {
        let a = spec();
        let mut b = spec();
        assert_eq!(
            JaxSpec::identity_of(&a.text()),
            JaxSpec::identity_of(&b.text())
        );
        b.source.push(' ');
        assert_ne!(
            JaxSpec::identity_of(&a.text()),
            JaxSpec::identity_of(&b.text())
        );
    }

    #[test]
    fn a_text_that_does_not_hash_to_the_identity_is_refused() {
        let text = spec().text();
        let err = kernel_for("0123", &text).unwrap_err();
        assert!(err.contains("do not match"), "{err}");
        let id = JaxSpec::identity_of(&text);
        let (kernel, back) = kernel_for(&id, &text).unwrap();
        assert_eq!(kernel.name(), "k");
        assert_eq!(back, spec());
    }
}
