//! A generated source in parts: what every variant of a kernel shares, held
//! once, and what one variant adds, held per variant.
//!
//! ```text
//! source = prefix (prelude, macros, header) ─ shared, hashed once
//!        + before (signature, template values, locals) ─ the variant's own
//!        + body (the user's body, lowered) ─ shared
//!        + after (closing lines, entry point) ─ the variant's own
//! ```
//!
//! The shared part depends on the kernel, the dialect and one bit of the
//! variant (whether 16-bit floats are about, [`super::small_floats`]: it
//! turns on the half headers and changes how conditionals are lowered), so
//! a kernel has at most two per dialect. It also keeps the xxh3 state after
//! hashing its prefix: a variant's hashes are that state, cloned, fed the
//! variant's parts, which give the hashes of the whole text without the
//! text ever being built. The whole text is built only when something needs
//! it ([`Source::text`]: a compile, an inspection).

use std::borrow::Cow;
use std::sync::Arc;

use xxhash_rust::xxh3::Xxh3;

/// What the variants of one kernel share in one dialect and class (see the
/// module documentation).
pub(crate) struct SharedText {
    /// The text before each variant's own part, in pieces: the preludes
    /// are `'static` and never copied.
    prefix: Vec<Cow<'static, str>>,
    /// The body, placed between each variant's `before` and `after`.
    body: String,
    /// The hash state after the prefix, computed by the first variant that
    /// needs it (a text only joined, [`super::generate`], never does).
    state: std::sync::OnceLock<Xxh3>,
    /// Newlines in the prefix, counted by the first variant that places a
    /// `#line` directive after the body ([`SharedText::line_after_body`]).
    prefix_newlines: std::sync::OnceLock<usize>,
    /// CUDA: the macro words each variant `#undef`s after its kernel.
    pub(crate) macros: Vec<String>,
}

impl std::fmt::Debug for SharedText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedText")
            .field("prefix_len", &self.prefix_len())
            .field("body_len", &self.body.len())
            .finish_non_exhaustive()
    }
}

impl SharedText {
    /// A shared part from its prefix pieces and body.
    pub(crate) fn new(
        prefix: Vec<Cow<'static, str>>,
        body: String,
        macros: Vec<String>,
    ) -> SharedText {
        SharedText {
            prefix,
            body,
            state: std::sync::OnceLock::new(),
            prefix_newlines: std::sync::OnceLock::new(),
            macros,
        }
    }

    /// The hash state after the prefix (hashed on first use).
    fn state(&self) -> &Xxh3 {
        self.state.get_or_init(|| {
            let mut state = Xxh3::new();
            for piece in &self.prefix {
                state.update(piece.as_bytes());
            }
            state
        })
    }

    /// The whole text of a variant whose own parts are `before` and
    /// `after`.
    pub(crate) fn join(&self, before: &str, after: &str) -> String {
        let len = self.prefix_len() + before.len() + self.body.len() + after.len();
        let mut out = String::with_capacity(len);
        for piece in &self.prefix {
            out.push_str(piece);
        }
        out.push_str(before);
        out.push_str(&self.body);
        out.push_str(after);
        out
    }

    /// The `#line` directive (with its newline) that gives the generated
    /// lines after the body their own numbers in `file` again, for a
    /// variant whose text before the body is `before` and whose text after
    /// it starts with `preceding` and then this directive. The body names
    /// its own lines (`super::marked_body`); without this, a compiler
    /// would number the generated lines after it as lines of the body.
    pub(crate) fn line_after_body(&self, before: &str, preceding: &str, file: &str) -> String {
        let prefix = *self.prefix_newlines.get_or_init(|| {
            self.prefix
                .iter()
                .map(|p| p.bytes().filter(|&b| b == b'\n').count())
                .sum()
        });
        let newlines = |t: &str| t.bytes().filter(|&b| b == b'\n').count();
        // The directive's own line is the one after every newline so far;
        // the number it sets is that of the line after it.
        let line = prefix + newlines(before) + newlines(&self.body) + newlines(preceding) + 2;
        format!("#line {line} \"{file}\"\n")
    }

    /// Bytes of the prefix text.
    pub(crate) fn prefix_len(&self) -> usize {
        self.prefix.iter().map(|p| p.len()).sum()
    }

    /// Heap bytes this part holds: the pieces that are not `'static`, the
    /// body, the macro words and the hash state. What a memo charges once
    /// for all the variants that share it.
    pub(crate) fn heap_bytes(&self) -> usize {
        let owned: usize = self
            .prefix
            .iter()
            .map(|p| match p {
                Cow::Owned(s) => s.capacity(),
                Cow::Borrowed(_) => 0,
            })
            .sum();
        owned
            + self.prefix.capacity() * std::mem::size_of::<Cow<'static, str>>()
            + self.body.capacity()
            + self.macros.iter().map(|m| m.capacity() + 24).sum::<usize>()
            + std::mem::size_of::<SharedText>()
    }
}

/// What one variant adds to its kernel's shared part: its name and the
/// text around the body.
#[derive(Debug)]
pub(crate) struct VariantText {
    /// The function (host) name.
    pub(crate) name: String,
    /// Between the prefix and the body.
    pub(crate) before: String,
    /// After the body.
    pub(crate) after: String,
}

/// A variant's source: a shared part and the variant's own text, with the
/// hashes of the whole, computed from the shared state.
pub(crate) struct Source {
    shared: Arc<SharedText>,
    before: Box<str>,
    after: Box<str>,
    len: usize,
    hash64: u64,
    hash128: u128,
}

impl std::fmt::Debug for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Source")
            .field("len", &self.len)
            .field("hash128", &format_args!("{:032x}", self.hash128))
            .finish_non_exhaustive()
    }
}

impl Source {
    /// The source of `shared` with this variant's `before` and `after`:
    /// hashes only the variant's part and the body.
    pub(crate) fn new(shared: Arc<SharedText>, before: String, after: String) -> Source {
        let mut state = shared.state().clone();
        state.update(before.as_bytes());
        state.update(shared.body.as_bytes());
        state.update(after.as_bytes());
        let len = shared.prefix_len() + before.len() + shared.body.len() + after.len();
        Source {
            before: before.into_boxed_str(),
            after: after.into_boxed_str(),
            len,
            hash64: state.digest(),
            hash128: state.digest128(),
            shared,
        }
    }

    /// A source given whole (no shared part): tests and the seed's
    /// full-copy memo of the benchmarks.
    pub(crate) fn whole(text: String) -> Source {
        Source::new(
            Arc::new(SharedText::new(Vec::new(), String::new(), Vec::new())),
            text,
            String::new(),
        )
    }

    /// Builds the whole text.
    pub(crate) fn text(&self) -> String {
        self.shared.join(&self.before, &self.after)
    }

    /// Bytes of the whole text.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// xxh3-64 of the whole text.
    pub(crate) fn hash64(&self) -> u64 {
        self.hash64
    }

    /// xxh3-128 of the whole text: what a module key is derived from.
    pub(crate) fn hash128(&self) -> u128 {
        self.hash128
    }

    /// Heap bytes of this variant's own text (the shared part not counted).
    pub(crate) fn own_bytes(&self) -> usize {
        self.before.len() + self.after.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_of_the_parts_equal_hashes_of_the_whole() {
        let big = "x".repeat(5000);
        let shared = Arc::new(SharedText::new(
            vec![Cow::Borrowed("prelude\n"), Cow::Owned(big.clone())],
            "BODY".to_string(),
            Vec::new(),
        ));
        for before in ["", "short", &"b".repeat(300)] {
            let s = Source::new(shared.clone(), before.to_string(), "tail".to_string());
            let text = s.text();
            assert_eq!(text, format!("prelude\n{big}{before}BODYtail"));
            assert_eq!(s.len(), text.len());
            assert_eq!(s.hash64(), xxhash_rust::xxh3::xxh3_64(text.as_bytes()));
            assert_eq!(s.hash128(), xxhash_rust::xxh3::xxh3_128(text.as_bytes()));
        }
        let small = Source::whole("tiny".to_string());
        assert_eq!(small.text(), "tiny");
        assert_eq!(small.hash128(), xxhash_rust::xxh3::xxh3_128(b"tiny"));
    }
}
