//! Lowering of Metal bodies and headers to the C++ the CPU and CUDA
//! preludes understand.
//!
//! Most of the Metal Shading Language maps onto C++ types and functions in
//! the preludes (`prelude/metal/`). A few spellings cannot: C++ has no
//! member that is a swizzle (`v.xy`, `c.rgb = ...`), no address-space
//! qualifiers, and no `h` suffix for half literals. This pass rewrites just
//! those tokens, in place and without adding lines, so compiler messages
//! still point at the user's lines:
//!
//! - `v.xy` becomes `v.kk_swz(kk::sw<0, 1>())` (a vector by value), and
//!   `v.xy = w` / `v.xy += w` become `v.kk_swr(kk::sw<0, 1>()) = w` (a
//!   reference to the components). A would-be swizzle name that the text
//!   declares as a member of its own struct (`float2 xy;`) is left alone.
//! - `device`, `constant`, `thread` are dropped: they qualify pointers, and
//!   the CPU and CUDA address spaces are one. `threadgroup` in a variable
//!   declaration (`threadgroup float buf[64];`) becomes storage shared by
//!   the threads of a group (`__shared__` on CUDA; on the CPU, where the
//!   threads of a group run on one OS thread, `static thread_local`); as a
//!   qualifier (`threadgroup float* p`) it is dropped.
//! - `0.5h` becomes `half(0.5)`.
//! - When 16-bit floats are about (the variant's dtypes, or `half` /
//!   `bfloat` in the text), each innermost conditional expression `c ? x :
//!   y` gets Metal's type for its arms: C++ finds `c ? h : 0.0f` ambiguous
//!   for a class type `half` (each arm converts to the other), Metal gives
//!   it float. The arms become `kk::tc<decltype(x), decltype(y)>(x)` and
//!   the like: unevaluated `decltype`, so each arm is still evaluated only
//!   when chosen, and arms of one type are passed through untouched.
//! - On the CPU, a call of a SIMD-group or quad function gets its call
//!   site's number (`simd_sum(x)` -> `simd_sum<kk::site<3>>(x)`): the CPU
//!   runs a SIMD-group operation over the lanes parked at one site, and
//!   machine code may duplicate or merge calls, so the site must come from
//!   the source.

use std::collections::HashSet;

use super::lex::{apply, tokens, Kind, Token};
use super::scan::GROUP_FUNCTIONS;

/// Which C++ the lowered text is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    /// The CPU backend (g++/clang++, the threads of a group as fibers).
    Cpu,
    /// NVRTC.
    Cuda,
}

/// Names the texts declare as data members of their own structs, classes
/// or unions: a swizzle-looking member of one of those names is the user's
/// (`struct Box { float2 xy; }; b.xy`), not a swizzle.
pub(crate) fn member_names<'a>(texts: &[&'a str]) -> HashSet<&'a str> {
    let mut names = HashSet::new();
    for text in texts {
        let toks = tokens(text);
        // Per open brace: whether it opened a record body.
        let mut braces: Vec<bool> = Vec::new();
        let mut record_ahead = false;
        for (i, t) in toks.iter().enumerate() {
            let s = t.text(text);
            match s {
                "struct" | "class" | "union" => record_ahead = true,
                "{" => braces.push(std::mem::take(&mut record_ahead)),
                "}" => {
                    braces.pop();
                }
                ";" | "(" | ")" => record_ahead = false,
                _ => {}
            }
            if t.kind != Kind::Ident || braces.last() != Some(&true) {
                continue;
            }
            let prev = i.checked_sub(1).map(|p| toks[p].text(text));
            let next = toks.get(i + 1).map(|n| n.text(text));
            let declarator = matches!(next, Some(";" | "[" | "=" | "," | ":" | "{"));
            if declarator && !matches!(prev, Some("." | "->" | "::")) {
                names.insert(s);
            }
        }
    }
    names
}

/// The component indices of a swizzle name (`xy`, `rgba`; 2 to 4
/// components, all from one set), or `None`.
fn swizzle(name: &str) -> Option<Vec<u8>> {
    if !(2..=4).contains(&name.len()) {
        return None;
    }
    for set in ["xyzw", "rgba"] {
        let idx: Option<Vec<u8>> = name
            .bytes()
            .map(|c| set.bytes().position(|s| s == c).map(|p| p as u8))
            .collect();
        if idx.is_some() {
            return idx;
        }
    }
    None
}

const ASSIGN: &[&str] = &[
    "=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=", "++", "--",
];

/// Keywords after which a name is an expression, not a declarator.
const EXPRESSION_KEYWORDS: &[&str] = &[
    "return",
    "case",
    "else",
    "do",
    "throw",
    "sizeof",
    "co_return",
];

/// How to lower one text.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Options<'a> {
    pub(crate) target: Target,
    /// From [`member_names`] over the body and the header together.
    pub(crate) members: &'a HashSet<&'a str>,
    /// The first call-site number (give the body and the header disjoint
    /// ranges).
    pub(crate) first_site: usize,
    /// Give conditional expressions Metal's type (16-bit floats about).
    pub(crate) conditionals: bool,
}

/// Lowers one Metal text (a body or a header).
pub(crate) fn lower(text: &str, opts: Options<'_>) -> String {
    let (target, members) = (opts.target, opts.members);
    let mut site = opts.first_site;
    let toks = tokens(text);
    let include = include_lines(text, &toks);
    let mut edits: Vec<(usize, usize, String)> = Vec::new();
    for (i, t) in toks.iter().enumerate() {
        if include[i] {
            continue;
        }
        let s = t.text(text);
        match t.kind {
            Kind::Ident => {
                let after_member = i > 0 && matches!(toks[i - 1].text(text), "." | "->");
                if after_member {
                    let call = toks.get(i + 1).is_some_and(|n| n.text(text) == "(");
                    if let (Some(idx), false, false) = (swizzle(s), call, members.contains(s)) {
                        let write = toks
                            .get(i + 1)
                            .is_some_and(|n| ASSIGN.contains(&n.text(text)));
                        let list: Vec<String> = idx.iter().map(u8::to_string).collect();
                        let f = if write { "kk_swr" } else { "kk_swz" };
                        edits.push((
                            t.start,
                            t.end,
                            format!("{f}(kk::sw<{}>())", list.join(", ")),
                        ));
                    }
                    continue;
                }
                let call = toks.get(i + 1).is_some_and(|n| n.text(text) == "(");
                if target == Target::Cpu
                    && call
                    && GROUP_FUNCTIONS.contains(&s)
                    && !s.ends_with("barrier")
                    && !s.starts_with("simdgroup_")
                {
                    // A call, not a declaration (`uint64_t simd_shuffle(...)`).
                    let declares = i > 0 && {
                        let p = &toks[i - 1];
                        let ps = p.text(text);
                        (p.kind == Kind::Ident && !EXPRESSION_KEYWORDS.contains(&ps)) || ps == ">"
                    };
                    if !declares {
                        edits.push((t.end, t.end, format!("<kk::site<{site}>>")));
                        site += 1;
                    }
                    continue;
                }
                match s {
                    "device" | "constant" | "thread" => edits.push((t.start, t.end, String::new())),
                    "threadgroup" => {
                        let with = if declares(text, &toks, i) {
                            match target {
                                Target::Cpu => "static thread_local",
                                Target::Cuda => "__shared__",
                            }
                        } else {
                            ""
                        };
                        edits.push((t.start, t.end, with.to_string()));
                    }
                    _ => {}
                }
            }
            Kind::Number => {
                let hex = s.starts_with("0x") || s.starts_with("0X");
                if !hex && (s.ends_with('h') || s.ends_with('H')) {
                    edits.push((t.start, t.end, format!("half({})", &s[..s.len() - 1])));
                }
            }
            _ => {}
        }
    }
    if opts.conditionals {
        edits.extend(conditionals(text, &toks, &include));
        edits.sort_by_key(|e| (e.0, e.1));
    }
    if edits.is_empty() {
        return text.to_string();
    }
    apply(text, &edits)
}

/// The innermost conditional expressions of `toks`: for each `? x : y`
/// with no conditional, lambda or angle bracket inside its arms, edits
/// that wrap both arms in `kk::tc` (see the module docs). Insertions only,
/// so they never overlap the token edits.
fn conditionals(text: &str, toks: &[Token], skip: &[bool]) -> Vec<(usize, usize, String)> {
    let mut edits = Vec::new();
    for (q, t) in toks.iter().enumerate() {
        if t.text(text) != "?" || skip[q] || t.directive {
            continue;
        }
        // The true arm: up to the `:` at this depth.
        let Some(colon) = arm_end(text, toks, q + 1, true) else {
            continue;
        };
        // The false arm: up to what ends an assignment-expression.
        let Some(end) = arm_end(text, toks, colon + 1, false) else {
            continue;
        };
        if colon == q + 1 || end == colon + 1 {
            continue;
        }
        let x = &text[toks[q + 1].start..toks[colon - 1].end];
        let y = &text[toks[colon + 1].start..toks[end - 1].end];
        edits.push((
            toks[q + 1].start,
            toks[q + 1].start,
            format!("kk::tc<decltype({x}), decltype({y})>("),
        ));
        edits.push((toks[colon - 1].end, toks[colon - 1].end, ")".to_string()));
        edits.push((
            toks[colon + 1].start,
            toks[colon + 1].start,
            format!("kk::tc<decltype({y}), decltype({x})>("),
        ));
        edits.push((toks[end - 1].end, toks[end - 1].end, ")".to_string()));
    }
    edits
}

/// Where an arm starting at token `from` ends (the index of the token after
/// it): the matching `:` for a true arm, else the first `,` `;` `:` or
/// closing bracket at depth 0. `None` when the arm holds what this pass
/// leaves alone (a nested conditional, a lambda, `<` or `>`, braces, a
/// preprocessor line) or never ends.
fn arm_end(text: &str, toks: &[Token], from: usize, until_colon: bool) -> Option<usize> {
    let mut depth = 0i32;
    for (i, t) in toks.iter().enumerate().skip(from) {
        if t.directive {
            return None;
        }
        let s = t.text(text);
        match s {
            "(" | "[" => {
                let lambda = s == "["
                    && toks
                        .get(i + 1)
                        .is_some_and(|n| matches!(n.text(text), "&" | "=" | "]"));
                if lambda {
                    return None;
                }
                depth += 1;
            }
            ")" | "]" if depth > 0 => depth -= 1,
            ")" | "]" | "}" | ";" | "," if depth == 0 => return (!until_colon).then_some(i),
            ":" if depth == 0 => return Some(i),
            "?" | "{" | "}" | "<" | ">" => return None,
            _ => {}
        }
    }
    None
}

/// Per token: whether it is on an `#include` line (left alone).
fn include_lines(text: &str, toks: &[Token]) -> Vec<bool> {
    let mut out = vec![false; toks.len()];
    let mut i = 0;
    while i < toks.len() {
        let t = &toks[i];
        let starts_include = t.directive
            && t.text(text) == "#"
            && toks.get(i + 1).is_some_and(|n| n.text(text) == "include");
        if starts_include {
            let line_end = text[t.start..]
                .find('\n')
                .map_or(text.len(), |p| t.start + p);
            while i < toks.len() && toks[i].start < line_end {
                out[i] = true;
                i += 1;
            }
            continue;
        }
        i += 1;
    }
    out
}

/// Whether the `threadgroup` at token `at` starts a variable declaration
/// (`threadgroup float buf[64];`, `threadgroup atomic_int n, m;`) rather
/// than qualifying a pointer or reference type (`threadgroup float* p`).
fn declares(text: &str, toks: &[Token], at: usize) -> bool {
    let mut j = at + 1;
    let mut idents = 0;
    while let Some(t) = toks.get(j) {
        let s = t.text(text);
        if t.kind == Kind::Ident {
            idents += 1;
            j += 1;
        } else if s == "::" {
            j += 1;
        } else if s == "<" {
            // A template argument list of the type: skip it whole.
            let mut depth = 0i32;
            while let Some(t) = toks.get(j) {
                match t.text(text) {
                    "<" => depth += 1,
                    ">" => depth -= 1,
                    ">>" => depth -= 2,
                    ";" | "{" | "}" => return false,
                    _ => {}
                }
                j += 1;
                if depth <= 0 {
                    break;
                }
            }
        } else {
            return idents >= 2 && matches!(s, "[" | ";" | "=" | "," | "{");
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(text: &str, target: Target, conditionals: bool) -> String {
        let members = member_names(&[text]);
        lower(
            text,
            Options {
                target,
                members: &members,
                first_site: 1,
                conditionals,
            },
        )
    }

    fn cpu(text: &str) -> String {
        with(text, Target::Cpu, false)
    }

    #[test]
    fn rewrites_swizzles_for_reading_and_writing() {
        assert_eq!(
            cpu("float2 p = v.zy; v.xy = p; c.rgb += 1;"),
            "float2 p = v.kk_swz(kk::sw<2, 1>()); v.kk_swr(kk::sw<0, 1>()) = p; \
             c.kk_swr(kk::sw<0, 1, 2>()) += 1;"
        );
        // Single components and calls are members as written.
        assert_eq!(
            cpu("v.x = w.xy(); q->zw;"),
            "v.x = w.xy(); q->kk_swz(kk::sw<2, 3>());"
        );
        // A member the user declares is the user's, not a swizzle; a
        // local variable of that name is not a member.
        assert_eq!(
            cpu("struct S { float xy; }; s.xy = 1;"),
            "struct S { float xy; }; s.xy = 1;"
        );
        assert_eq!(
            cpu("float zw = 1; v.zw;"),
            "float zw = 1; v.kk_swz(kk::sw<2, 3>());"
        );
        assert_eq!(cpu("v.xyzwx; v.xg;"), "v.xyzwx; v.xg;");
    }

    #[test]
    fn address_spaces() {
        assert_eq!(
            cpu("threadgroup float buf[32]; threadgroup float* p = buf; const device float* q;"),
            "static thread_local float buf[32];  float* p = buf; const  float* q;"
        );
        let body = "threadgroup metal::atomic<uint> n; (threadgroup T*)(x); constant float k = 1;";
        assert_eq!(
            with(body, Target::Cuda, false),
            "__shared__ metal::atomic<uint> n; ( T*)(x);  float k = 1;"
        );
        assert_eq!(
            cpu("threadgroup_barrier(mem_flags::mem_threadgroup);"),
            "threadgroup_barrier(mem_flags::mem_threadgroup);"
        );
    }

    #[test]
    fn numbers_simd_call_sites_on_the_cpu() {
        assert_eq!(
            cpu("x = simd_sum(a) + metal::quad_max(b); if (l < 12) y = simd_is_first();"),
            "x = simd_sum<kk::site<1>>(a) + metal::quad_max<kk::site<2>>(b); \
             if (l < 12) y = simd_is_first<kk::site<3>>();"
        );
        // Declarations (a header's own overload) and barriers stay as written.
        assert_eq!(
            cpu("inline uint64_t simd_shuffle(uint64_t d, ushort l) { return simd_shuffle(d, l); }"),
            "inline uint64_t simd_shuffle(uint64_t d, ushort l) { return simd_shuffle<kk::site<1>>(d, l); }"
        );
        assert_eq!(
            cpu("threadgroup_barrier(mem_flags::mem_none);"),
            "threadgroup_barrier(mem_flags::mem_none);"
        );
        let body = "x = simd_sum(a);";
        assert_eq!(with(body, Target::Cuda, false), body);
    }

    #[test]
    fn conditionals_get_metal_types_when_asked() {
        assert_eq!(
            with("y = c ? x[i] : 0.0f;", Target::Cuda, true),
            "y = c ? kk::tc<decltype(x[i]), decltype(0.0f)>(x[i]) : kk::tc<decltype(0.0f), decltype(x[i])>(0.0f);"
        );
        assert_eq!(
            with("f(a, b ? g(h, 1) : 2, 3);", Target::Cpu, true),
            "f(a, b ? kk::tc<decltype(g(h, 1)), decltype(2)>(g(h, 1)) : kk::tc<decltype(2), decltype(g(h, 1))>(2), 3);"
        );
        // Nested conditionals: only the innermost; lambdas, templates and
        // preprocessor lines are left alone; and nothing without the flag.
        assert_eq!(
            with("r = a ? b : c ? d : e;", Target::Cpu, true),
            "r = a ? b : c ? kk::tc<decltype(d), decltype(e)>(d) : kk::tc<decltype(e), decltype(d)>(e);"
        );
        for left in [
            "v = c ? [&] { return 1; }() : 2;",
            "v = f<c ? 1 : 2>();",
            "#if A ? 1 : 0\n#endif",
        ] {
            assert_eq!(with(left, Target::Cpu, true), left);
        }
        assert_eq!(
            with("y = c ? x : 0.0f;", Target::Cpu, false),
            "y = c ? x : 0.0f;"
        );
    }

    #[test]
    fn odd_text_never_panics() {
        let texts = [
            "",
            "?",
            ":",
            "a ?",
            "? :",
            "x.",
            "x.xy",
            "\"unterminated",
            "'",
            "R\"(",
            "/* open",
            "a ? b",
            "threadgroup",
            "threadgroup float",
            "v.é = 1;",
            "é ? ü : 0.5h;",
            "1e+",
            "0x",
            ".5",
            "#",
            "# include",
            "simd_sum(",
            "a ? (b : c",
            "a ? b : (c",
            "\\\n",
            "x ? [&]{} : 1",
            "\u{0}",
        ];
        for text in texts {
            for conditionals in [false, true] {
                let _ = with(text, Target::Cpu, conditionals);
                let _ = with(text, Target::Cuda, conditionals);
            }
        }
    }

    #[test]
    fn half_literals_and_includes() {
        assert_eq!(
            cpu("half a = 0.5h + 2H; int b = 0x1h;"),
            "half a = half(0.5) + half(2); int b = 0x1h;"
        );
        assert_eq!(
            cpu("#include <metal_stdlib> // x.xy\nv.xy;"),
            "#include <metal_stdlib> // x.xy\nv.kk_swz(kk::sw<0, 1>());"
        );
        assert_eq!(cpu("// v.xy\n\"v.xy\""), "// v.xy\n\"v.xy\"");
    }
}
