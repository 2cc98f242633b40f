//! Bounds checks in generated code (`KernelBuilder::check_bounds`): the
//! body of a checked kernel sees *checked views* of its array arguments.
//!
//! A view (`kk::view<T>`, in `prelude/bounds.h`) is a pointer with the
//! span its argument's view covers (from its shape and strides, not its
//! allocation). The body keeps its own text; only the accesses made
//! through an argument's name go through the view, found here on the
//! body's tokens and renamed to the view's name (`kk_v_NAME`):
//!
//! - indexing: `a[i]`, and so the element references atomics take,
//!   `&out[i]`;
//! - pointer arithmetic used through the name: `*(a + k)`, `(a + k)[j]`,
//!   and `*a`;
//!
//! Every other use of the name (a call, a cast, `p = a + k`, a template
//! that deduces a pointer type) is the raw pointer, as before, so every
//! body that compiles unchecked compiles checked. A body that assigns to
//! an argument's name (`a += n`) keeps that argument unchecked: its view
//! would no longer be where the name points.
//!
//! The host hands the kernel one block ([`BLOCK_HEADER`] bytes of record,
//! then the spans): [`block`] writes it, [`Violation::parse`] reads the
//! record back. The record holds the first access outside a span; the
//! access itself is skipped (a read gives a scratch value, a write lands
//! in scratch).

use super::lex::{tokens, Kind, Token};
use super::spec::KernelSpec;
use super::variant::{PassMode, VariantDesc};

/// The C++ of the views (compiled only into checked kernels' sources).
pub(crate) const VIEWS: &str = include_str!("prelude/bounds.h");

/// Bytes of the record at the head of the block (`kk::bounds_record`).
pub const BLOCK_HEADER: usize = 64;

/// The name of argument `name`'s view in a checked body.
/// Each array argument of a checked kernel, inputs then outputs: its
/// name, the element type its view holds (`const T` for an input,
/// `atomic<T>` for an output of a kernel with atomic outputs) and whether
/// it is passed by value (a scalar input). The CPU and CUDA generators
/// declare their views from it.
pub(crate) fn view_args<'a>(
    spec: &'a KernelSpec,
    desc: &'a VariantDesc<'_>,
) -> impl Iterator<Item = (&'a str, String, bool)> + 'a {
    let inputs = spec.input_names.iter().zip(desc.inputs).map(|(n, d)| {
        let scalar = d.mode == PassMode::Scalar;
        (n.as_str(), format!("const {}", d.dtype.c_name()), scalar)
    });
    let outputs = spec.output_names.iter().zip(desc.outputs).map(|(n, d)| {
        let ty = if spec.atomic_outputs {
            format!("atomic<{}>", d.c_name())
        } else {
            d.c_name().to_string()
        };
        (n.as_str(), ty, false)
    });
    inputs.chain(outputs)
}

pub(crate) fn view_name(name: &str) -> String {
    format!("kk_v_{name}")
}

/// The body with the accesses through `names` (the array arguments) going
/// through their views (see the module documentation). Returns the body
/// and, per name, whether it is checked.
pub(crate) fn checked_body(body: &str, names: &[&str]) -> (String, Vec<bool>) {
    let toks: Vec<Token> = tokens(body).into_iter().filter(|t| !t.directive).collect();
    let text = |i: usize| toks.get(i).map(|t| t.text(body)).unwrap_or("");
    let is_name = |i: usize| {
        toks[i].kind == Kind::Ident
            && !matches!(
                i.checked_sub(1).map(text),
                Some("." | "->" | "::" | ".*" | "->*")
            )
            && text(i + 1) != "::"
    };
    // Whether the `*` at token `i` is the unary dereference.
    let unary_star = |i: usize| {
        text(i) == "*"
            && i.checked_sub(1).is_none_or(|p| {
                let t = &toks[p];
                !(matches!(t.kind, Kind::Ident | Kind::Number | Kind::Literal)
                    || matches!(t.text(body), ")" | "]"))
                    || matches!(t.text(body), "return" | "case")
            })
    };
    // An argument whose name is assigned to is left unchecked.
    let mut checked: Vec<bool> = vec![true; names.len()];
    for i in 0..toks.len() {
        if !is_name(i) {
            continue;
        }
        let Some(k) = names.iter().position(|n| *n == text(i)) else {
            continue;
        };
        let next = text(i + 1);
        let prev = i.checked_sub(1).map(text).unwrap_or("");
        let dereferenced = i > 0 && unary_star(i - 1);
        if (matches!(next, "=" | "+=" | "-=" | "++" | "--") && !dereferenced)
            || matches!(prev, "++" | "--")
        {
            checked[k] = false;
        }
    }
    // Whether the `(` at token `i` groups (rather than calls or casts).
    let grouping = |i: usize| {
        i.checked_sub(1).is_none_or(|p| {
            let t = &toks[p];
            !(t.kind == Kind::Ident || matches!(t.text(body), ")" | "]" | ">"))
                || matches!(t.text(body), "return" | "case")
        })
    };
    let mut edits: Vec<(usize, usize, String)> = Vec::new();
    for i in 0..toks.len() {
        if !is_name(i) {
            continue;
        }
        let Some(k) = names.iter().position(|n| *n == text(i)) else {
            continue;
        };
        if !checked[k] {
            continue;
        }
        let next = text(i + 1);
        let rename = if next == "[" {
            true
        } else if i > 0 && unary_star(i - 1) {
            // `*a`.
            true
        } else if i > 0 && text(i - 1) == "(" && matches!(next, "+" | "-") && grouping(i - 1) {
            // `*(a + k)` or `(a + k)[j]`.
            let close = matching_paren(&toks, body, i - 1);
            let deref = i >= 2 && unary_star(i - 2);
            let indexed = close.is_some_and(|c| text(c + 1) == "[");
            deref || indexed
        } else {
            false
        };
        if rename {
            edits.push((toks[i].start, toks[i].end, view_name(names[k])));
        }
    }
    (super::lex::apply(body, &edits), checked)
}

/// The token closing the parenthesis opened at token `open`.
fn matching_paren(toks: &[Token], body: &str, open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (j, t) in toks.iter().enumerate().skip(open) {
        match t.text(body) {
            "(" => depth += 1,
            ")" => {
                depth -= 1;
                if depth == 0 {
                    return Some(j);
                }
            }
            _ => {}
        }
    }
    None
}

/// The span `[lo, hi)` of element indices, relative to element 0 (the
/// pointer the kernel gets), that a view of `shape` and `strides` (in
/// elements) covers: the lowest and one past the highest offset it
/// reaches. An empty view spans nothing.
pub fn span(shape: &[usize], strides: &[isize]) -> (i64, i64) {
    if shape.contains(&0) {
        return (0, 0);
    }
    let (mut lo, mut hi) = (0i64, 0i64);
    for (&n, &s) in shape.iter().zip(strides) {
        let reach = (n as i64 - 1).saturating_mul(s as i64);
        if reach < 0 {
            lo = lo.saturating_add(reach);
        } else {
            hi = hi.saturating_add(reach);
        }
    }
    (lo, hi.saturating_add(1))
}

/// The block a checked launch hands its kernel: a zeroed record, then
/// `spans` (one per argument, inputs then outputs) as little-endian words.
pub fn block(spans: &[(i64, i64)]) -> Vec<u8> {
    let mut out = vec![0u8; BLOCK_HEADER + 16 * spans.len()];
    for (k, (lo, hi)) in spans.iter().enumerate() {
        let at = BLOCK_HEADER + 16 * k;
        out[at..at + 8].copy_from_slice(&lo.to_le_bytes());
        out[at + 8..at + 16].copy_from_slice(&hi.to_le_bytes());
    }
    out
}

/// The first access outside a view that a checked kernel recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The argument's position: inputs first, then outputs.
    pub arg: usize,
    /// The element index, relative to the pointer the kernel got.
    pub index: i64,
    /// The view's span `[lo, hi)`.
    pub span: (i64, i64),
    /// `thread_position_in_threadgroup`.
    pub thread: [u32; 3],
    /// `threadgroup_position_in_grid`.
    pub group: [u32; 3],
}

impl Violation {
    /// The record at the head of a block read back after the launch, if
    /// the kernel recorded one.
    pub fn parse(record: &[u8]) -> Option<Violation> {
        let word = |k: usize| -> Option<i64> {
            Some(i64::from_le_bytes(
                record.get(8 * k..8 * k + 8)?.try_into().ok()?,
            ))
        };
        let half = |k: usize| -> Option<u32> {
            Some(u32::from_le_bytes(
                record.get(40 + 4 * k..44 + 4 * k)?.try_into().ok()?,
            ))
        };
        if word(0)? == 0 {
            return None;
        }
        Some(Violation {
            arg: usize::try_from(word(1)?).ok()?,
            index: word(2)?,
            span: (word(3)?, word(4)?),
            thread: [half(0)?, half(1)?, half(2)?],
            group: [half(3)?, half(4)?, half(5)?],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checked(body: &str) -> String {
        checked_body(body, &["a", "out"]).0
    }

    #[test]
    fn accesses_through_the_name_go_through_the_view() {
        assert_eq!(
            checked("out[i] = a[i + 1];"),
            "kk_v_out[i] = kk_v_a[i + 1];"
        );
        assert_eq!(
            checked("atomic_fetch_add_explicit(&out[i], 1, memory_order_relaxed);"),
            "atomic_fetch_add_explicit(&kk_v_out[i], 1, memory_order_relaxed);"
        );
        assert_eq!(checked("x = *(a + k) * 2;"), "x = *(kk_v_a + k) * 2;");
        assert_eq!(checked("x = (a + k * n)[j];"), "x = (kk_v_a + k * n)[j];");
        assert_eq!(checked("*out = 1;"), "*kk_v_out = 1;");
        assert_eq!(checked("return *a;"), "return *kk_v_a;");
    }

    #[test]
    fn other_uses_keep_the_raw_pointer() {
        for body in [
            "f(a, out);",
            "const float* p = a + k; p[0] = 1;",
            "x = y * (a + k);",
            "float b = c.a[0]; s.out[1] = 2;",
            "x = n *a;",
            "#define A a[0]\nx = 1;",
            "auto q = (float*)(a + 1);",
            "x = f(a + 1)[0];",
        ] {
            assert_eq!(checked(body), body);
        }
    }

    #[test]
    fn an_argument_assigned_to_stays_unchecked() {
        let (body, which) = checked_body("a += 4; out[0] = a[0];", &["a", "out"]);
        assert_eq!(body, "a += 4; kk_v_out[0] = a[0];");
        assert_eq!(which, [false, true]);
        let (_, which) = checked_body("out++; out[0] = 1;", &["out"]);
        assert_eq!(which, [false]);
    }

    #[test]
    fn spans_follow_shape_and_strides() {
        assert_eq!(span(&[4, 3], &[3, 1]), (0, 12));
        assert_eq!(span(&[3, 4], &[1, 3]), (0, 12));
        assert_eq!(span(&[4], &[-1]), (-3, 1));
        assert_eq!(span(&[2, 3], &[6, 1]), (0, 9));
        assert_eq!(span(&[], &[]), (0, 1));
        assert_eq!(span(&[0, 3], &[3, 1]), (0, 0));
        assert_eq!(span(&[5], &[0]), (0, 1));
    }

    #[test]
    fn a_record_reads_back() {
        let mut b = block(&[(0, 10), (-2, 3)]);
        assert_eq!(b.len(), BLOCK_HEADER + 32);
        assert_eq!(Violation::parse(&b), None);
        b[0] = 1;
        b[8] = 1;
        b[16..24].copy_from_slice(&(-1i64).to_le_bytes());
        b[24..32].copy_from_slice(&(-2i64).to_le_bytes());
        b[32..40].copy_from_slice(&3i64.to_le_bytes());
        b[40] = 7;
        b[52] = 2;
        assert_eq!(
            Violation::parse(&b),
            Some(Violation {
                arg: 1,
                index: -1,
                span: (-2, 3),
                thread: [7, 0, 0],
                group: [2, 0, 0],
            })
        );
    }
}

#[cfg(test)]
mod generated {
    use crate::codegen::spec::KernelSpec;
    use crate::codegen::variant::{InputDesc, PassMode, VariantDesc};
    use crate::codegen::{generate, Dialect};
    use crate::dtype::DType;

    fn spec(check: bool) -> KernelSpec {
        let mut spec = KernelSpec::new(
            "k".into(),
            vec!["a".into(), "s".into()],
            vec!["out".into()],
            "uint i = thread_position_in_grid.x;\nout[i] = a[i] * s;".into(),
            String::new(),
            true,
            false,
        )
        .unwrap();
        spec.check_bounds = check;
        spec
    }

    fn source(dialect: Dialect, check: bool) -> String {
        let inputs = [
            InputDesc {
                dtype: DType::F32,
                mode: PassMode::Device,
            },
            InputDesc {
                dtype: DType::F32,
                mode: PassMode::Scalar,
            },
        ];
        let desc = VariantDesc {
            inputs: &inputs,
            outputs: &[DType::F32],
            template: &[],
        };
        generate(dialect, &spec(check), &desc, 7).source
    }

    #[test]
    fn checked_sources_hold_the_views_and_unchecked_ones_nothing_of_them() {
        for dialect in [Dialect::Cpu, Dialect::Cuda] {
            let plain = source(dialect, false);
            let checked = source(dialect, true);
            assert!(!plain.contains("kk_v_") && !plain.contains("KK_BOUNDS_H"));
            assert!(checked.contains(super::VIEWS), "{dialect:?}");
            assert!(
                checked.contains("kk_v_out[i] = kk_v_a[i] * s;"),
                "{checked}"
            );
            assert!(checked.contains("kk::view<"), "{dialect:?}");
            for view in ["kk_v_a", "kk_v_s", "kk_v_out"] {
                assert!(checked.contains(view), "{dialect:?}: {view}");
            }
        }
        let cuda = source(Dialect::Cuda, true);
        assert!(cuda.contains("kk::bounds_record* kk_bounds)"), "{cuda}");
        assert!(cuda.contains("const kk::view<const float> kk_v_s(s.p, kk_bounds, 1, nullptr, 0);"));
        assert!(cuda.contains("const kk::view<float> kk_v_out(out, kk_bounds, 2, nullptr);"));
        let cpu = source(Dialect::Cpu, true);
        assert!(
            cpu.contains("kk::view<const float>(&s, kk_bounds, 1, &kk_at, 0)"),
            "{cpu}"
        );
        // The body is still found where compile errors look for it.
        assert!(crate::codegen::cpu::body_of(&cpu).contains("kk_v_out[i]"));
        assert!(crate::codegen::cuda::body_of(&cuda).contains("kk_v_out[i]"));
    }
}
