//! Which sections of the CUDA prelude a Metal variant needs.
//!
//! A section is pulled in by any identifier of its text that a body or
//! header names (the text's locals, listed per section, excepted; words of
//! one or two characters and C++'s own words never count), by the names
//! its macros paste together (`simd_sum`, `float4x4`: rules below), and by
//! what the wrapper itself uses (atomic outputs, vector operators on a
//! position). Then every section a chosen one depends on comes too. The
//! rule errs on the side of inclusion: a word that only looks like a
//! section's name costs that section's parse, never a failed compile.
//! Where the text can hide names from a scan (a `##` of the user's, an
//! `#include` of a file kernelkit does not read), every section is taken.

use std::collections::HashMap;
use std::sync::OnceLock;

use super::{Id, Section, CUDA_METAL_SECTIONS};
use crate::codegen::lex::{tokens, Kind, CXX_KEYWORDS};

/// What the generated wrapper itself needs of the prelude, besides what
/// the body and header name.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Needs {
    /// Outputs are `atomic<T>*` (`atomic_outputs`).
    pub(crate) atomic_outputs: bool,
}

/// A set of sections of [`CUDA_METAL_SECTIONS`] (bit `i`: section `i`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Selection(u32);

impl Selection {
    /// Every section.
    pub(crate) fn all() -> Selection {
        Selection((1u32 << CUDA_METAL_SECTIONS.len()) - 1)
    }

    #[cfg(test)]
    /// `ids` and every section they depend on (and those in every source).
    pub(crate) fn of(ids: &[Id]) -> Selection {
        Selection(ids.iter().fold(0, |b, id| b | 1 << *id as u32)).closed()
    }

    #[cfg(test)]
    /// Section `index` of the table with every section it depends on (and
    /// those in every source).
    pub(crate) fn of_index(index: usize) -> Selection {
        Selection(1 << index).closed()
    }

    #[cfg(test)]
    /// Whether `id` is chosen.
    pub(crate) fn contains(self, id: Id) -> bool {
        self.0 & (1 << id as u32) != 0
    }

    /// The chosen sections, in the table's order.
    pub(crate) fn sections(self) -> impl Iterator<Item = &'static Section> {
        CUDA_METAL_SECTIONS
            .iter()
            .enumerate()
            .filter(move |(i, _)| self.0 & (1 << i) != 0)
            .map(|(_, s)| s)
    }

    /// With every section the chosen ones depend on (the table lists
    /// dependencies before their dependents, so one pass from the end
    /// closes the set).
    fn closed(self) -> Selection {
        let mut bits = self.0;
        for (i, s) in CUDA_METAL_SECTIONS.iter().enumerate().rev() {
            if s.always {
                bits |= 1 << i;
            }
            if bits & (1 << i) != 0 {
                for d in s.deps {
                    bits |= 1 << *d as u32;
                }
            }
        }
        Selection(bits)
    }
}

/// The sections a Metal variant needs: `texts` are its lowered body and
/// header, `positions` the names of its `uint3` position attributes
/// (a value of theirs used whole needs the vector operators).
pub(crate) fn select(texts: &[&str], positions: &[&str], needs: Needs) -> Selection {
    let table = triggers();
    let mut bits = 0u32;
    if needs.atomic_outputs {
        bits |= 1 << Id::Atomic as u32;
    }
    for text in texts {
        let toks = tokens(text);
        for (i, t) in toks.iter().enumerate() {
            let word = t.text(text);
            if t.kind == Kind::Punct {
                // A pasted name, or a file kernelkit does not read: any name
                // may come of them.
                let include = word == "#"
                    && t.directive
                    && toks.get(i + 1).is_some_and(|n| n.text(text) == "include");
                if word == "##" || include {
                    return Selection::all();
                }
                continue;
            }
            if t.kind != Kind::Ident {
                continue;
            }
            if let Some(m) = table.get(word) {
                bits |= m;
            }
            bits |= pasted(word);
            if positions.contains(&word) && !component(text, &toks, i) {
                bits |= 1 << Id::VecOps as u32;
            }
        }
    }
    Selection(bits).closed()
}

/// Whether the identifier at `at` is read as one component
/// (`pos.x`, `pos[0]`), not as a vector.
fn component(text: &str, toks: &[crate::codegen::lex::Token], at: usize) -> bool {
    match toks.get(at + 1).map(|t| t.text(text)) {
        Some("[") => true,
        Some(".") => toks
            .get(at + 2)
            .is_some_and(|t| matches!(t.text(text), "x" | "y" | "z" | "r" | "g" | "b")),
        _ => false,
    }
}

/// The sections of names a section's macros paste together, which its
/// text never spells: the SIMD-group and quad families (`P##_sum`) and
/// the matrix type names (`NAME##4x4`).
fn pasted(word: &str) -> u32 {
    let mut bits = 0;
    if word.starts_with("simd_") || word.starts_with("quad_") {
        bits |= 1 << Id::Simd as u32;
    }
    let matrix = ["float", "half", "bfloat"].iter().any(|e| {
        word.strip_prefix(e).is_some_and(|rest| {
            let b = rest.as_bytes();
            b.len() == 3 && b[0].is_ascii_digit() && b[1] == b'x' && b[2].is_ascii_digit()
        })
    });
    if matrix {
        bits |= 1 << Id::Matrix as u32;
    }
    bits
}

/// Words that never pull a section in, besides C++'s keywords
/// ([`CXX_KEYWORDS`]; see [`common`]): the preprocessor's words, CUDA's
/// own names, and names that only the sections in every source declare
/// (the base types and kernelkit's own qualifiers).
pub(super) const COMMON: &[&str] = &[
    // the preprocessor
    "define",
    "undef",
    "ifdef",
    "ifndef",
    "endif",
    "elif",
    "defined",
    "include",
    "pragma",
    "_Pragma",
    // CUDA's own
    "__device__",
    "__host__",
    "__forceinline__",
    "__global__",
    "__shared__",
    "threadIdx",
    "blockIdx",
    "blockDim",
    "gridDim",
    "memcpy",
    "__builtin_bit_cast",
    "std",
    // the sections in every source
    "uint",
    "int8_t",
    "int16_t",
    "int32_t",
    "int64_t",
    "uint8_t",
    "uint16_t",
    "uint32_t",
    "uint64_t",
    "float16_t",
    "bfloat16_t",
    "complex64_t",
    "KK_FN",
    "KK_HD",
    "KK_CFN",
    "KK_FORCE",
    "KK_CUDA",
    "KK_CPU",
    "KK_HALF_TYPES",
    "metal",
    "uint3",
];

/// Extra words of a section besides those of its text.
fn extra_triggers(index: usize) -> Vec<String> {
    const VEC_OPS: usize = Id::VecOps as usize;
    const CONDITIONAL: usize = Id::Conditional as usize;
    match index {
        // The vector operators serve every vector type name and the
        // lowered swizzles.
        VEC_OPS => super::vector_type_names()
            .flat_map(|n| [format!("kk_{n}"), n])
            .chain(["kk_swz", "kk_swr"].map(String::from))
            .collect(),
        // The lowering's typed conditionals (`kk::tc<...>(x)`).
        CONDITIONAL => vec!["tc".to_string()],
        _ => Vec::new(),
    }
}

/// Names of the sections in every source that a section by need declares
/// again (an overload, Metal's own `metal::` spelling of a kernelkit
/// trait, the vector templates whose operators it holds): in that section
/// they stay triggers.
pub(super) const REDECLARED: &[(&str, Id)] = &[
    ("conditional", Id::Traits),
    ("declval", Id::Traits),
    ("enable_if", Id::Traits),
    ("enable_if_t", Id::Traits),
    ("remove_cv", Id::Traits),
    ("elem_to_loc", Id::Mlx),
    ("vec", Id::VecOps),
    ("packed_vec", Id::VecOps),
];

/// The words of the sections in every source: what those sections declare
/// is there anyway, so a word of theirs pulls nothing in (but see
/// [`REDECLARED`]).
pub(super) fn base_words() -> &'static std::collections::HashSet<&'static str> {
    static WORDS: OnceLock<std::collections::HashSet<&'static str>> = OnceLock::new();
    WORDS.get_or_init(|| {
        CUDA_METAL_SECTIONS
            .iter()
            .filter(|s| s.always)
            .flat_map(|s| {
                tokens(s.text)
                    .into_iter()
                    .filter(|t| t.kind == Kind::Ident)
                    .map(|t| t.text(s.text))
            })
            .collect()
    })
}

/// Whether an identifier of a section's text can be a trigger at all
/// (see the module documentation).
pub(super) fn counts(word: &str) -> bool {
    word.len() > 2 && !common(word)
}

/// Whether `word` never pulls a section in: a C++ keyword or one of
/// [`COMMON`].
pub(super) fn common(word: &str) -> bool {
    CXX_KEYWORDS.contains(&word) || COMMON.contains(&word)
}

/// Whether an identifier of section `index` can be one of its triggers.
fn counts_in(index: usize, word: &str) -> bool {
    counts(word)
        && (!base_words().contains(word)
            || REDECLARED
                .iter()
                .any(|(w, id)| *w == word && *id as usize == index))
}

/// The words of section `index` that pull it in: those of its text that
/// count, less its locals.
pub(super) fn names(index: usize) -> std::collections::BTreeSet<&'static str> {
    let s = &CUDA_METAL_SECTIONS[index];
    words(index)
        .into_iter()
        .filter(|w| !s.locals.contains(w))
        .collect()
}

/// The words of section `index`'s text that count (see [`counts_in`]).
pub(super) fn words(index: usize) -> std::collections::BTreeSet<&'static str> {
    let text = CUDA_METAL_SECTIONS[index].text;
    tokens(text)
        .iter()
        .filter(|t| t.kind == Kind::Ident)
        .map(|t| t.text(text))
        .filter(|w| counts_in(index, w))
        .collect()
}

/// Identifier -> the sections it pulls in, built once.
fn triggers() -> &'static HashMap<&'static str, u32> {
    static TABLE: OnceLock<HashMap<&'static str, u32>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut table: HashMap<&'static str, u32> = HashMap::new();
        for (i, s) in CUDA_METAL_SECTIONS.iter().enumerate() {
            if s.always {
                continue;
            }
            for word in names(i) {
                *table.entry(word).or_default() |= 1 << i;
            }
            for w in extra_triggers(i) {
                let w: &'static str = Box::leak(w.into_boxed_str());
                *table.entry(w).or_default() |= 1 << i;
            }
        }
        table
    })
}

// Locals per section: words of the text that are not names the section
// declares for a body to reach (parameters, locals, members, kernelkit's
// internal names, and uses of names other sections declare), so a body's
// own variable of that name does not pull the section in. A use of
// another section's name must still come with the dependency (checked by
// `tests::a_section_names_only_what_its_dependencies_declare`).

pub(super) const ATOMIC_LOCALS: &[&str] = &["bits", "u64"];
pub(super) const VEC_OPS_LOCALS: &[&str] = &[];
pub(super) const TRAITS_LOCALS: &[&str] = &[];
pub(super) const LIMITS_LOCALS: &[&str] = &["is_signed", "max", "min"];
pub(super) const MATH_LOCALS: &[&str] = &["cos", "sin", "val"];
pub(super) const MATH_FLOAT_LOCALS: &[&str] =
    &["KK_DECL_F1", "KK_DECL_F2", "KK_DECL_F3", "KK_P", "mathy"];
pub(super) const MATH_COMMON_LOCALS: &[&str] =
    &["KK_DECL_G1", "KK_DECL_G2", "KK_DECL_G3", "KK_P", "fabs"];
pub(super) const MATH_RELATIONAL_LOCALS: &[&str] = &[
    "KK_DECL_G1",
    "KK_DECL_G2",
    "as_type",
    "mathy",
    "min",
    "numeric_limits",
    "per",
    "vec_n",
];
pub(super) const MATH_INTEGER_LOCALS: &[&str] = &[
    "base",
    "bits",
    "max",
    "min",
    "numeric_limits",
    "offset",
    "u64",
];
pub(super) const GEOMETRIC_LOCALS: &[&str] = &[];
pub(super) const CONDITIONAL_LOCALS: &[&str] = &[];
pub(super) const MATRIX_LOCALS: &[&str] = &[];
pub(super) const SIMD_COMMON_LOCALS: &[&str] = &["base", "bits"];
pub(super) const GROUP_CUDA_LOCALS: &[&str] = &["simd"];
pub(super) const SIMD_LOCALS: &[&str] = &["max", "min", "simd"];
pub(super) const SIMDGROUP_MATRIX_LOCALS: &[&str] = &[];
pub(super) const MLX_LOCALS: &[&str] = &["max", "min", "offset", "val"];
pub(super) const UNSUPPORTED_LOCALS: &[&str] = &[];
