use super::select::{self, common, counts};
use super::*;
use crate::codegen::lex::{tokens, Kind};

#[test]
fn every_vector_name_has_a_cuda_twin() {
    for name in vector_type_names() {
        let elem = name.trim_start_matches("packed_");
        let elem = elem.trim_end_matches(|c: char| c.is_ascii_digit());
        let macro_name = if elem == "half" || elem == "bfloat" {
            "KK_VEC_NAMES(::"
        } else {
            "KK_VEC_NAMES("
        };
        assert!(
            CUDA_METAL.contains(macro_name) && CUDA_METAL.contains(&format!(", {elem})")),
            "{name}"
        );
    }
}

#[test]
fn the_plain_cuda_prelude_has_no_metal_layer() {
    assert!(!CUDA_PLAIN.contains("namespace metal"));
    assert!(CUDA_METAL.contains("namespace metal"));
    assert!(CUDA_METAL.starts_with(CUDA_PLAIN));
    for (plain, metal) in CUDA_PLAIN_SECTIONS.iter().zip(CUDA_METAL_SECTIONS) {
        assert_eq!((plain.name, plain.text), (metal.name, metal.text));
        assert!(plain.always);
    }
}

/// The ids name the table's rows, and each row's dependencies come before
/// it (what the one-pass closure and C++'s order of declarations need).
#[test]
fn the_table_is_in_dependency_order() {
    let ids = [
        (Id::Portable, "portable"),
        (Id::CudaBase, "cuda_base"),
        (Id::Layout, "layout"),
        (Id::Atomic, "atomic"),
        (Id::Types, "types"),
        (Id::VecOps, "vec_ops"),
        (Id::Traits, "traits"),
        (Id::Limits, "limits"),
        (Id::Constants, "constants"),
        (Id::Math, "math"),
        (Id::MathFloat, "math_float"),
        (Id::MathCommon, "math_common"),
        (Id::MathRelational, "math_relational"),
        (Id::MathInteger, "math_integer"),
        (Id::Geometric, "geometric"),
        (Id::Conditional, "conditional"),
        (Id::Matrix, "matrix"),
        (Id::MetalAtomic, "metal_atomic"),
        (Id::SimdCommon, "simd_common"),
        (Id::GroupCuda, "group_cuda"),
        (Id::MemFlags, "mem_flags"),
        (Id::Simd, "simd"),
        (Id::SimdgroupMatrix, "simdgroup_matrix"),
        (Id::Mlx, "mlx"),
        (Id::Unsupported, "unsupported"),
        (Id::CudaTail, "cuda_tail"),
    ];
    assert_eq!(ids.len(), CUDA_METAL_SECTIONS.len());
    assert!(CUDA_METAL_SECTIONS.len() <= 32, "a Selection is a u32");
    for (i, (id, name)) in ids.iter().enumerate() {
        assert_eq!(*id as usize, i);
        let s = &CUDA_METAL_SECTIONS[i];
        assert_eq!(s.name, *name);
        assert!(s
            .text
            .starts_with(&format!("// kernelkit prelude: {name}\n")));
        for d in s.deps {
            assert!((*d as usize) < i, "{name} depends on a later section");
            if s.always {
                assert!(CUDA_METAL_SECTIONS[*d as usize].always, "{name}");
            }
        }
    }
    let whole: String = CUDA_METAL_SECTIONS.iter().map(|s| s.text).collect();
    assert_eq!(whole, CUDA_METAL);
}

/// Words of a section that are its own members and only share their
/// spelling with an earlier section's name (reviewed one by one).
const HOMONYMS: &[(&str, &str, &str)] = &[
    ("simd", "all", "simd_vote::all(), a member"),
    ("simd", "any", "simd_vote::any(), a member"),
    ("mlx", "max", "Limits<T>::max, a member"),
    ("mlx", "min", "Limits<T>::min, a member"),
    ("math_integer", "max", "numeric_limits<E>::max(), a member"),
    ("math_integer", "min", "numeric_limits<E>::min(), a member"),
    ("math_common", "fabs", "::fabs / std::fabs, the C library's"),
];

/// The lexical half of the dependency check (the compiling half is
/// `backend::cuda::compile::tests::each_prelude_section_compiles_with_its_dependencies`,
/// where NVRTC is): a section whose text holds a name of an earlier
/// section (a word of it that is not among its locals) must depend on it,
/// whether or not the word is a local of its own. So a section never
/// reaches a name that a selection without its dependency would lack,
/// even inside a template NVRTC checks only when it is used.
#[test]
fn a_section_names_only_what_its_dependencies_declare() {
    let mut missing = Vec::new();
    for (j, s) in CUDA_METAL_SECTIONS.iter().enumerate() {
        let own = select::words(j);
        let reach: Vec<&str> = Selection::of(s.deps).sections().map(|r| r.name).collect();
        for (i, t) in CUDA_METAL_SECTIONS[..j].iter().enumerate() {
            if t.always || reach.contains(&t.name) {
                continue;
            }
            let theirs = select::names(i);
            for w in own.intersection(&theirs) {
                if HOMONYMS
                    .iter()
                    .any(|(h, word, _)| *h == s.name && word == w)
                {
                    continue;
                }
                missing.push(format!("{} names `{w}` of {} (#{i})", s.name, t.name));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "add the dependency, or list the word among the locals of the section where it is \
         not a name a body can reach:\n{}",
        missing.join("\n")
    );
}

/// Names made by `##` never appear in a text: each paste of a section
/// that a body can reach must be one the selection knows (the SIMD and
/// quad families, the matrix names) or make a name no body spells
/// (kernelkit's `op_` structs, CUDA's own `NAMEf` functions, operators).
#[test]
fn every_pasted_name_is_known_to_the_selection() {
    let known = [
        "kk::op_##NAME",
        "op_##NAME",
        "::NAME##f(",
        "operator OP##=",
        "P##_",
        "NAME##2x",
        "NAME##3x",
        "NAME##4x",
        "kk_##NAME##",
        "kk_packed_##NAME##",
        "packed_##NAME##",
        "NAME##2;",
        "NAME##3;",
        "NAME##4;",
    ];
    for s in CUDA_METAL_SECTIONS {
        for line in s.text.lines().filter(|l| l.contains("##")) {
            let mut rest = line.to_string();
            for k in known {
                rest = rest.replace(k, "");
            }
            assert!(
                !rest.contains("##"),
                "{}: a pasted name the selection does not know: {line}",
                s.name
            );
        }
    }
    // The families those pastes make do pull their sections in.
    let sel = |body: &str| select(&[body], &[], Needs::default());
    for w in [
        "simd_sum",
        "quad_shuffle_xor",
        "simd_prefix_exclusive_product",
    ] {
        assert!(sel(&format!("x = {w}(y);")).contains(Id::Simd), "{w}");
    }
    for w in ["float4x4", "half2x3", "float3x3"] {
        assert!(sel(&format!("{w} m;")).contains(Id::Matrix), "{w}");
    }
}

/// Every local is a word of its section (a stale entry would hide a name
/// someone adds later), and never a word the always-present sections or
/// the common list hold anyway.
#[test]
fn locals_are_words_of_their_sections() {
    for s in CUDA_METAL_SECTIONS {
        let words: std::collections::HashSet<&str> = tokens(s.text)
            .iter()
            .filter(|t| t.kind == Kind::Ident)
            .map(|t| t.text(s.text))
            .collect();
        for l in s.locals {
            assert!(
                words.contains(l),
                "{}: local `{l}` is not in its text",
                s.name
            );
            assert!(counts(l), "{}: `{l}` never counts anyway", s.name);
            assert!(!common(l));
        }
    }
}

fn chosen(body: &str) -> Vec<&'static str> {
    select(&[body], &["thread_position_in_grid"], Needs::default())
        .sections()
        .map(|s| s.name)
        .collect()
}

#[test]
fn a_plain_body_gets_the_sections_every_source_has() {
    let always: Vec<&str> = CUDA_METAL_SECTIONS
        .iter()
        .filter(|s| s.always)
        .map(|s| s.name)
        .collect();
    assert_eq!(
        chosen("uint i = thread_position_in_grid.x; out[i] = inp[i] * 2.0f + 32.0f;"),
        always
    );
    assert_eq!(
        chosen("out[thread_position_in_grid[0]] = 1; // metal::exp simd_sum float4"),
        always
    );
}

#[test]
fn names_pull_in_their_sections_and_dependencies() {
    let has = |body: &str, want: &[&str]| {
        let got = chosen(body);
        for w in want {
            assert!(got.contains(w), "{body}: {w} missing from {got:?}");
        }
        got
    };
    has("y = metal::exp(x);", &["math_float", "math"]);
    // `math` uses std::cos on the CPU; the function is `math_float`'s.
    has(
        "float c = metal::cos(a); float s = metal::sin(a);",
        &["math_float"],
    );
    has("y = fast::exp(x);", &["math_float", "math"]);
    let barrier = has(
        "threadgroup_barrier(mem_flags::mem_threadgroup);",
        &["group_cuda", "mem_flags", "simd_common", "atomic"],
    );
    assert!(!barrier.contains(&"simd") && !barrier.contains(&"math"));
    has(
        "float s = simd_sum(x);",
        &["simd", "group_cuda", "math_common", "math"],
    );
    has("float4 v = a.xyzw * 2;", &["vec_ops"]);
    has(
        "float l = length(v);",
        &["geometric", "math_float", "vec_ops"],
    );
    has("float4x4 m;", &["matrix", "geometric"]);
    has(
        "float m = metal::numeric_limits<float>::infinity();",
        &["limits"],
    );
    has("float m = INFINITY;", &["constants"]);
    has("uint n = ceildiv(a, b);", &["mlx", "traits", "limits"]);
    has(
        "atomic_fetch_add_explicit((device atomic_uint*)&o[0], 1u, memory_order_relaxed);",
        &["metal_atomic", "atomic"],
    );
    has("bool b = isnan(x);", &["math_relational", "math_common"]);
    has("uint c = popcount(x);", &["math_integer"]);
    has("y = kk::tc<decltype(a), decltype(b)>(a);", &["conditional"]);
    has("texture2d<float> t;", &["unsupported"]);
    has(
        "simdgroup_float8x8 m; simdgroup_load(m, p);",
        &["simdgroup_matrix"],
    );
    // A position used as a vector needs the operators; a component does not.
    has("uint3 p = thread_position_in_grid * 2u;", &["vec_ops"]);
    assert!(has("f(thread_position_in_grid);", &["vec_ops"]).contains(&"vec_ops"));
}

#[test]
fn hidden_names_take_every_section() {
    let all: Vec<&str> = CUDA_METAL_SECTIONS.iter().map(|s| s.name).collect();
    assert_eq!(chosen("#define F(p) p##_sum\nx = F(simd)(y);"), all);
    assert_eq!(chosen("#include \"helpers.h\"\nx = y;"), all);
    // The wrapper's own atomics.
    let atomic = select(
        &["o[0] = 1;"],
        &[],
        Needs {
            atomic_outputs: true,
        },
    );
    assert!(atomic.contains(Id::Atomic));
}

/// Every name a section declares through one of its macros
/// (`KK_F1_STD(exp, ...)`, `KK_DECL_G2(min)`, `KK_GEO_PACKED(length)`,
/// `KK_ATOMIC_RMW(atomic_fetch_add_explicit, add)`, `KK_NO_TEXTURE(...)`)
/// pulls that section in.
#[test]
fn names_declared_by_macros_pull_in_their_sections() {
    for (i, s) in CUDA_METAL_SECTIONS.iter().enumerate() {
        if s.always {
            continue;
        }
        let toks = tokens(s.text);
        for (k, t) in toks.iter().enumerate() {
            let word = t.text(s.text);
            // The families whose names are pasted from the argument are
            // checked by `every_pasted_name_is_known_to_the_selection`.
            let pasting = matches!(word, "KK_SIMD_FAMILY" | "KK_MAT_NAMES");
            let invocation = word.starts_with("KK_")
                && !pasting
                && !t.directive
                && toks.get(k + 1).is_some_and(|n| n.text(s.text) == "(");
            let Some(arg) = toks.get(k + 2).filter(|_| invocation) else {
                continue;
            };
            let name = arg.text(s.text);
            if arg.kind != Kind::Ident || !counts(name) {
                continue;
            }
            let chosen = select(&[&format!("x = {name}(y);")], &[], Needs::default());
            assert!(
                chosen.sections().any(|c| c.name == s.name),
                "{} (#{i}) declares `{name}` but it does not pull the section in",
                s.name
            );
        }
    }
}
