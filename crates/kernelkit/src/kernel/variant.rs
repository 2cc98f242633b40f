//! Variants: one kernel specialised for one call's dtypes, pass modes and
//! template arguments, with its generated name and source.

use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};

use crate::cache::loaded::{FunctionRef, FunctionSlots};
use crate::cache::resolver::ModuleRequest;
use crate::codegen::parts::Source;
use crate::codegen::Dialect;
use crate::device::Device;
use crate::error::{CompileError, Error};
use crate::kernel::jit;
use crate::sync::AtomicBool;

/// One kernel specialised for one call signature.
///
/// Built once per key (the memo), then shared by every launch through an
/// `Arc`: a launch prepared before its memo entry was evicted still owns
/// its source and runs.
///
/// The source is held in parts (see `codegen::parts`): the prelude, header
/// and body once per kernel, shared by its variants, and this variant's own
/// text around the body, with the hashes of the whole. The whole text is
/// built only when it is needed: for a compile or an artifact load (then
/// dropped again), or when asked for ([`Variant::source`], then kept).
pub struct Variant {
    pub(crate) dialect: Dialect,
    pub(crate) name: Arc<str>,
    pub(crate) source: Source,
    /// The whole text, once [`Variant::source`] was asked for.
    text: OnceLock<Arc<str>>,
    /// The function on each device this variant ran on, one slot per
    /// device ordinal, so that a hit on any device takes no lock and no
    /// cache lookup. A slot does not keep its module past an unload: the
    /// device clears it, and the next call there reloads (see
    /// `cache::loaded`).
    pub(crate) functions: Arc<FunctionSlots>,
    /// Set by every hit on the variant (the memo's and each thread's recent
    /// variants'), cleared by the memo's clock hand: the memo's
    /// *referenced* bit, kept here so that a hit reads a line it reads
    /// anyway.
    referenced: AtomicBool,
    /// The template values and the shapes of the call that made it, for
    /// messages (`KERNELKIT_JIT`); set once when the call builds it.
    detail: OnceLock<Box<str>>,
}

impl std::fmt::Debug for Variant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Variant")
            .field("dialect", &self.dialect)
            .field("name", &self.name)
            .field("source_hash", &format_args!("{:016x}", self.source_hash()))
            .finish_non_exhaustive()
    }
}

impl Variant {
    /// A variant whose source is given whole (tests, benchmarks).
    #[cfg_attr(not(any(test, feature = "bench")), allow(dead_code))]
    pub(crate) fn new(dialect: Dialect, name: String, source: String) -> Variant {
        Variant::from_parts(dialect, name, Source::whole(source))
    }

    /// A variant from its name and source in parts.
    pub(crate) fn from_parts(dialect: Dialect, name: String, source: Source) -> Variant {
        Variant {
            dialect,
            name: name.into(),
            source,
            text: OnceLock::new(),
            functions: Arc::default(),
            referenced: AtomicBool::new(false),
            detail: OnceLock::new(),
        }
    }

    /// Marks the variant used since the memo's hand last passed (no store
    /// when it is marked already, so that a hot variant's line is not
    /// written by every hit).
    #[inline]
    pub(crate) fn touch(&self) {
        if !self.referenced.load(Ordering::Relaxed) {
            self.referenced.store(true, Ordering::Relaxed);
        }
    }

    /// Whether the variant was used since the last call (the memo's hand);
    /// clears the mark.
    pub(crate) fn take_reference(&self) -> bool {
        self.referenced.swap(false, Ordering::Relaxed)
    }

    /// Sets what the call that made this variant says of it (template
    /// values, shapes): the first setting stays.
    pub(crate) fn set_detail(&self, detail: String) {
        let _ = self.detail.set(detail.into());
    }

    /// The template values and shapes of the call that made the variant
    /// (its function name when no call said).
    pub fn detail(&self) -> &str {
        self.detail.get().map_or(&*self.name, |d| d)
    }

    /// The generated function name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The generated source. Built from its parts on first use and kept
    /// with the variant from then on (an inspection path: calls never need
    /// it, and a compile builds its own copy and drops it).
    pub fn source(&self) -> &str {
        self.shared_source()
    }
    /// The source, shared: it lives as long as any launch holds it. Built
    /// and kept as [`Variant::source`] is.
    pub fn shared_source(&self) -> &Arc<str> {
        self.text.get_or_init(|| self.source.text().into())
    }
    /// The hash of the source (xxh3-64), computed once, from the kernel's
    /// hashed prefix and this variant's part: the hash in the library key
    /// MLX formats for a variant. kernelkit's own caches key modules by the
    /// 128-bit [`ModuleKey`](crate::cache::key::ModuleKey), derived from
    /// [`Variant::source_hash128`].
    pub fn source_hash(&self) -> u64 {
        self.source.hash64()
    }
    /// The xxh3-128 hash of the source, computed with
    /// [`Variant::source_hash`].
    pub fn source_hash128(&self) -> u128 {
        self.source.hash128()
    }
    /// Bytes of the whole source (whether or not it was built).
    pub fn source_len(&self) -> usize {
        self.source.len()
    }
    /// The dialect the source is written in.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// Heap bytes this variant holds apart from what it shares with the
    /// other variants of its kernel (an estimate: the struct, the name, its
    /// own text, and the whole text if it was built): what the memo charges
    /// for it.
    pub(crate) fn own_bytes(&self) -> usize {
        std::mem::size_of::<Variant>()
            + 16 // the Arc's counts
            + std::mem::size_of::<FunctionSlots>()
            + 16
            + self.name.len()
            + 16
            + self.source.own_bytes()
            + self.text.get().map_or(0, |t| t.len() + 16)
    }

    /// Whether the whole text was built and kept.
    #[cfg(test)]
    pub(crate) fn text_kept(&self) -> bool {
        self.text.get().is_some()
    }

    /// The whole source for a compile: the kept text if there is one, else
    /// built for the compile and dropped after it.
    fn text_for_compile(&self) -> Arc<str> {
        match self.text.get() {
            Some(text) => text.clone(),
            None => self.source.text().into(),
        }
    }

    /// The function this variant kept for `device`, if it did (a call
    /// there needs no lookup, compile or load).
    #[inline]
    pub(crate) fn kept_on(&self, device: &Device) -> Option<FunctionRef> {
        device.kept_function(&self.functions)
    }

    /// This variant's function on `device`, for kernel `kernel`, held for
    /// one call: the one it kept for the device (no lock), or resolved by
    /// the device and kept. The source text is built only if the device
    /// has no module for it loaded. The result keeps the module loaded
    /// while it lives: hold it across the launch only.
    ///
    /// A variant the device has no function for yet passes the process's
    /// JIT policy first ([`jit`]): under `forbid`, one that no tier holds
    /// is [`CallError::JitForbidden`](crate::CallError::JitForbidden).
    #[inline(always)]
    pub(crate) fn function_on(&self, device: &Device, kernel: &str) -> Result<FunctionRef, Error> {
        if let Some(f) = device.kept_function(&self.functions) {
            return Ok(f);
        }
        self.resolve_on(device, kernel)
    }

    /// [`Variant::function_on`] past the kept function: the JIT policy,
    /// then the device's resolver.
    #[inline(never)]
    fn resolve_on(&self, device: &Device, kernel: &str) -> Result<FunctionRef, Error> {
        jit::check(
            device,
            &jit::Pending {
                kernel,
                function: &self.name,
                source_hash: self.source.hash128(),
                detail: self.detail(),
            },
        )?;
        self.resolve_unchecked(device, kernel)
    }

    /// This variant's function on `device`, compiled if no tier holds it,
    /// whatever the JIT policy: for compiles asked for ahead of time
    /// (`Precompile`), which are what the policy moves compiles to.
    pub(crate) fn compile_on(&self, device: &Device, kernel: &str) -> Result<FunctionRef, Error> {
        if let Some(f) = device.kept_function(&self.functions) {
            return Ok(f);
        }
        self.resolve_unchecked(device, kernel)
    }

    /// The device's resolver, without the JIT policy.
    fn resolve_unchecked(&self, device: &Device, kernel: &str) -> Result<FunctionRef, Error> {
        let text = || self.text_for_compile();
        Ok(device.function(
            || ModuleRequest {
                kernel,
                function: &self.name,
                source_hash: self.source.hash128(),
                source: &text,
            },
            &self.functions,
        )?)
    }

    /// Pins this variant's module on `device` (loading it if needed): it
    /// is never unloaded while the device lives, whatever
    /// `max_loaded_modules` says. For work that launches it without asking
    /// kernelkit again (a captured CUDA graph).
    pub(crate) fn pin_on(&self, device: &Device, kernel: &str) -> Result<(), Error> {
        // A module unloaded between the resolve and the pin is resolved
        // again (a reload: the newest module is never the one unloaded).
        for _ in 0..8 {
            if self.function_on(device, kernel)?.bound().loaded.pin() {
                return Ok(());
            }
        }
        Err(CompileError::Load {
            kernel: kernel.to_string(),
            function: self.name.to_string(),
            reason: "its module was unloaded each time it was about to be pinned (raise \
                     max_loaded_modules)"
                .into(),
        }
        .into())
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use crate::{DType, Device, Kernel, MemoConfig};

    /// A miss of the memo whose module the device has loaded builds no
    /// source text: the module is found by the hash of the source, which
    /// the variant computed from its kernel's hashed prefix. The compile
    /// built the text for itself and did not keep it.
    #[test]
    fn a_loaded_module_is_found_without_building_the_text() {
        let device = Device::new_null();
        let kernel = Kernel::builder("lazy_text")
            .inputs(["inp"])
            .outputs(["out"])
            .source("uint i = thread_position_in_grid.x; out[i] = inp[i] + V;")
            .header(format!("// {}\n", "a long header line ".repeat(4000)))
            .memo(MemoConfig::default().max_entries(2))
            .build()
            .unwrap();
        let x = device.array_from_slice(&[1i32; 4], [4]).unwrap();
        let call = |v: i32| {
            kernel
                .call([&x])
                .template("V", v)
                .output([4], DType::I32)
                .grid([4, 1, 1])
        };
        for v in 0..3 {
            call(v).compile().unwrap();
        }
        assert_eq!(device.cache_stats().compiles, 3);
        // Variant 0 was evicted (two entries); asked again, it is rebuilt
        // and finds its module.
        call(0).compile().unwrap();
        assert_eq!(device.cache_stats().compiles, 3);
        let v = call(0).variant_on(&device).unwrap();
        assert!(!v.text_kept(), "no text built for a loaded module");
        assert!(v.source_len() > 70_000);
        // Asked for, the text is built, kept, and hashes as computed.
        assert_eq!(
            xxhash_rust::xxh3::xxh3_128(v.source().as_bytes()),
            v.source_hash128()
        );
        assert!(v.text_kept());
        assert_eq!(v.source().len(), v.source_len());
    }
}
