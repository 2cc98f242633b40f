//! CUDA C++ for NVRTC, following MLX's `cuda_kernel` conventions.
//!
//! One `extern "C" __global__` function per variant (so its name is not
//! mangled and the backend can look it up as generated):
//!
//! - inputs as `const T*`; a 0-d input as `kk_scalar<T>`, which reads as a
//!   value (what a Metal body expects of `const constant T&`) and as `x[0]`
//!   (what an MLX CUDA body expects of `const T*`);
//! - `NAME_shape` / `NAME_strides` by value as small structs (`kk_shape`,
//!   `kk_strides`, at most [`MAX_NDIM`] axes, indexable like arrays),
//!   `NAME_ndim` as `int`, each only when the body mentions it;
//! - outputs as `T*`, or `atomic<T>*` with `atomic_outputs`;
//! - a trailing `const uint3 kk_grid`: the grid in threads, as Metal counts
//!   it, which the guard and `threads_per_grid` need;
//! - template arguments as `constexpr` / `using` lines at the top of the body;
//! - the Metal position names the body uses, computed from
//!   `blockIdx`/`threadIdx`/`blockDim`/`gridDim` (formulas in
//!   [`portable_expr`]), so a simple MLX Metal body compiles unchanged.
//!
//! **Grid guard.** Metal runs exactly `grid` threads; CUDA runs whole blocks,
//! so when the grid is not a multiple of the block the last blocks have
//! threads past the grid. Those threads return before the body, so a Metal
//! body sees exactly Metal's threads, barriers and SIMD-group functions
//! included: a thread that has exited never holds up a barrier (PTX `exit`),
//! and is not in `__activemask()`. A body that uses CUDA's own block or
//! warp collectives (`spec.cuda_group_sync`: `__syncthreads`, `__shfl*`,
//! `__shared__`, cooperative groups, whose full-warp masks count on every
//! lane) runs on every thread of every block and checks its own bounds, as
//! CUDA code does.
//! The guard is exact in 32 bits ([`GRID_GUARD`]); the backend refuses a
//! launch of a body without the guard whose last block would reach past
//! 2^32 threads along an axis, where its 32-bit positions wrap.
//!
//! **Prelude.** kernelkit's own ([`super::prelude`]): integer typedefs, the
//! dtype names of [`DType::c_name`](crate::DType::c_name) (`float16_t`,
//! `bfloat16_t`, `complex64_t`), `elem_to_loc`, `WARP_SIZE`, Metal-style
//! atomics mapped onto CUDA atomics; for a Metal body
//! ([`BodyLanguage::Metal`], the default) also the Metal compatibility layer
//! (vector types, Metal's standard library, SIMD-group functions over the
//! active lanes, MLX's kernel utilities), by need: only the sections the
//! lowered body and header name, and what the wrapper uses (atomic
//! outputs, operators on a position used as a vector), with their
//! dependencies ([`super::prelude::select`]; NVRTC parses every line it is
//! given, and the whole layer would be most of a small kernel's compile).
//! For the same reason `cuda_fp16.h`/`cuda_bf16.h` are included only when
//! the variant or the text of the body or header mentions a 16-bit float,
//! and `cooperative_groups.h` (by far the largest) only when the body or
//! header uses cooperative groups.
//!
//! **Metal bodies.** The body and header are lowered ([`super::lower`]:
//! swizzles, address spaces, half literals). CUDA declares its own
//! `float4`, `uint3`, ...: Metal's vector names the text uses, `half`,
//! `bfloat` and MLX's `inf` are macros around the header and the kernel
//! only (`float4` -> `kk_float4`), so CUDA's own headers never see them. A
//! CUDA body ([`BodyLanguage::Cuda`]) is pasted as written, with the plain
//! prelude and no macros.

use std::fmt::Write;

use super::attributes::portable_expr;
use super::lex::{tokens, Kind};
use super::lower::{lower, member_names, Options, Target};
use super::parts::{SharedText, VariantText};
use super::prelude::{select, Needs, CUDA_PLAIN_SECTIONS};
use super::{portable_name, BodyLanguage};
use crate::codegen::math::MathMode;
use crate::codegen::spec::KernelSpec;
use crate::codegen::template::TemplateArg;
use crate::codegen::variant::{PassMode, VariantDesc};
use std::borrow::Cow;

/// The prelude of a variant whose body is CUDA C++ (the Metal layer's
/// prelude starts with it too).
#[cfg(test)]
pub(crate) const PRELUDE: &str = super::prelude::CUDA_PLAIN;

/// Most axes a `NAME_shape` / `NAME_strides` parameter holds (`KK_MAX_NDIM`
/// in the prelude; MLX's `MAX_NDIM`).
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub const MAX_NDIM: usize = 10;

/// Marks the end of the prelude in a generated source. What comes before
/// it is the same text for every kernel with the same includes and
/// prelude sections, and the CUDA backend compiles that once into a
/// precompiled header (`backend::cuda::pch`); what follows (the macros, the
/// header, the kernel) is each kernel's own.
pub(crate) const PRELUDE_END: &str = "// ---- end of prelude ----\n";
/// The name NVRTC is given for a CUDA source: what its generated lines go
/// by (the body's go by [`super::body_file`]).
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) const FILE_NAME: &str = "kernel.cu";
/// Marks the first line of the user's body in a generated source.
pub(crate) const BODY_BEGIN: &str = "  // ---- body ----\n";
/// Marks the line after the user's body.
pub(crate) const BODY_END: &str = "\n  // ---- end of body ----\n";

/// The guard that stops the threads past the grid (see the module
/// documentation), in as few dependent instructions as exactness allows:
/// a graph of small kernels pays for each of them (a small node's time is
/// mostly its critical path).
///
/// - Most launches are whole blocks along every axis: then the launch
///   passes `kk_partial` = 0 ([`partial`]) and no thread compares anything
///   (one uniform branch on a parameter, so a small kernel's critical path
///   is no longer than a plain `if (i < n)` guard's; 64-bit positions on
///   every launch would lengthen it).
/// - Otherwise, along x it compares the thread's index in its block with
///   the threads the grid has left from its block's start, `kk_grid.x -
///   blockIdx.x * blockDim.x`. The launch runs ceil(grid / block) blocks,
///   so a block starts below the grid and that product and difference are
///   exact in 32 bits, even where a position itself would pass 2^32 (a
///   32-bit position would wrap there to the start of the grid and run
///   those positions twice; 64-bit positions cost more instructions).
/// - Along y and z, whose grids are nearly always whole blocks (most often
///   1), it first asks whether the launch is whole there, from the launch's
///   constants alone (`gridDim`, `blockDim` and `kk_grid`: no per-thread
///   register); only where it is not does it compare, as along x.
///   (`gridDim` times `blockDim` fits in 32 bits along y and z: at most
///   65,535 × 1,024.)
pub(crate) const GRID_GUARD: &str = concat!(
    "  if (kk_partial) {\n",
    "    if (threadIdx.x >= kk_grid.x - blockIdx.x * blockDim.x) {\n",
    "      return;\n",
    "    }\n",
    "    if (kk_grid.y != gridDim.y * blockDim.y || kk_grid.z != gridDim.z * blockDim.z) {\n",
    "      if (threadIdx.y >= kk_grid.y - blockIdx.y * blockDim.y ||\n",
    "          threadIdx.z >= kk_grid.z - blockIdx.z * blockDim.z) {\n",
    "        return;\n",
    "      }\n",
    "    }\n",
    "  }\n",
);

/// The launch's `kk_partial` word for `grid` (threads) in blocks of
/// `threadgroup`: 1 when the grid ends inside a block along some axis, so
/// the threads must run [`GRID_GUARD`]'s comparisons, else 0. A mask for
/// the usual power-of-two block sizes (a division costs tens of cycles on
/// the launch path).
#[inline]
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) fn partial(grid: [u32; 3], threadgroup: [u32; 3]) -> u32 {
    let mut partial = false;
    for (g, t) in grid.into_iter().zip(threadgroup) {
        partial |= if t.is_power_of_two() {
            g & (t - 1) != 0
        } else {
            t != 0 && g % t != 0
        };
    }
    partial as u32
}

/// Macros that give a Metal body its words that CUDA means otherwise;
/// defined just before the header and removed after the kernel. (Metal's
/// vector type names, `float4` -> `kk_float4`, join them when the text
/// uses them.)
const BODY_MACROS: &[(&str, &str)] = &[
    ("inf", "__int_as_float(0x7f800000)"),
    // cuda_fp16.h takes the name `half` for `__half`, whose conversions to
    // every built-in type make `h * 2` ambiguous; Metal bodies mean the
    // prelude's float16_t (and bfloat16_t for `bfloat`).
    ("half", "float16_t"),
    ("bfloat", "bfloat16_t"),
];

/// The wrapper's locals that [`portable_expr`] formulas refer to, and how
/// each is computed. `kk_grid` is a parameter.
const LOCALS: &[(&str, &str)] = &[
    ("kk_tg", "const uint3 kk_tg = blockDim;"),
    ("kk_groups", "const uint3 kk_groups = gridDim;"),
    ("kk_group", "const uint3 kk_group = blockIdx;"),
    ("kk_local", "const uint3 kk_local = threadIdx;"),
    (
        "kk_lid",
        "const uint kk_lid = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;",
    ),
    ("kk_simd", "const uint kk_simd = WARP_SIZE;"),
];

/// What every CUDA variant of `spec` in class `small` (16-bit floats about,
/// see [`super::small_floats`]) shares: the includes, the prelude, the
/// macros, the lowered header, and the lowered body.
pub(crate) fn shared(spec: &KernelSpec, small: bool) -> SharedText {
    let metal = spec.language == BodyLanguage::Metal;
    let (header, body, macros, sections) = if metal {
        let header = super::portable_header(&spec.header);
        let members = member_names(&[&spec.source, &header]);
        let opts = Options {
            target: Target::Cuda,
            members: &members,
            first_site: 1,
            conditionals: small,
        };
        let header = lower(&header, opts);
        let body = checked(spec, lower(&spec.source, opts));
        let mut macros: Vec<(String, String)> = BODY_MACROS
            .iter()
            .map(|(w, v)| (w.to_string(), v.to_string()))
            .collect();
        let used = identifiers(&[&header, &body]);
        for v in super::prelude::vector_type_names() {
            // The wrapper declares the position attributes as `uint3`.
            if used.contains(v.as_str()) || v == "uint3" {
                let twin = format!("kk_{v}");
                macros.push((v, twin));
            }
        }
        let positions: Vec<&str> = spec
            .attributes
            .iter()
            .filter(|a| a.ty == "uint3")
            .map(|a| a.name)
            .collect();
        let needs = Needs {
            atomic_outputs: spec.atomic_outputs,
        };
        let chosen = select(&[&header, &body], &positions, needs);
        let sections: Vec<Cow<'static, str>> =
            chosen.sections().map(|s| Cow::Borrowed(s.text)).collect();
        (header, body, macros, sections)
    } else {
        let sections = CUDA_PLAIN_SECTIONS
            .iter()
            .map(|s| Cow::Borrowed(s.text))
            .collect();
        (
            spec.header.clone(),
            checked(spec, spec.source.clone()),
            Vec::new(),
            sections,
        )
    };

    let mut prefix: Vec<Cow<'static, str>> = Vec::with_capacity(sections.len() + 2);
    let mut head = String::new();
    // A mode other than safe: its line first (`codegen::math`); fast also
    // defines what Metal's and the C++ compilers' fast modes define.
    head.push_str(spec.math_mode.marker());
    if spec.math_mode == MathMode::Fast {
        head.push_str("#define __FAST_MATH__ 1\n");
    }
    if small {
        head.push_str("#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n#define KK_HALF_TYPES 1\n");
    }
    if spec.uses_cooperative_groups {
        head.push_str("#include <cooperative_groups.h>\nnamespace cg = cooperative_groups;\n");
    }
    if !head.is_empty() {
        prefix.push(Cow::Owned(head));
    }
    prefix.extend(sections);
    prefix.push(Cow::Borrowed(PRELUDE_END));
    if spec.check_bounds {
        prefix.push(Cow::Borrowed(super::bounds::VIEWS));
    }
    let mut rest = String::with_capacity(header.len() + 64 * macros.len() + 32);
    for (word, value) in &macros {
        let line = format!("#define {word} {value}");
        let _ = writeln!(rest, "{}", line.trim_end());
    }
    rest.push_str("\n// header\n");
    rest.push_str(&header);
    rest.push_str("\n\n");
    prefix.push(Cow::Owned(rest));
    SharedText::new(
        prefix,
        body,
        macros.into_iter().map(|(word, _)| word).collect(),
    )
}

/// What one CUDA variant adds to its kernel's [`shared`] part: the
/// signature, template values, grid guard and locals before the body, the
/// closing lines after it.
pub(crate) fn variant(
    spec: &KernelSpec,
    shared: &SharedText,
    desc: &VariantDesc<'_>,
    variant_id: u64,
) -> VariantText {
    let name = portable_name(spec, desc, variant_id);
    let mut params: Vec<String> = Vec::new();
    for ((input, d), info) in spec
        .input_names
        .iter()
        .zip(desc.inputs)
        .zip(&spec.shape_infos)
    {
        let ty = d.dtype.c_name();
        if d.mode == PassMode::Scalar {
            // As in MLX, 0-d inputs get no layout parameters.
            params.push(format!("const kk_scalar<{ty}> {input}"));
            continue;
        }
        params.push(format!("const {ty}* {input}"));
        if info.shape {
            params.push(format!("const kk_shape {input}_shape"));
        }
        if info.strides {
            params.push(format!("const kk_strides {input}_strides"));
        }
        if info.ndim {
            params.push(format!("const int {input}_ndim"));
        }
    }
    for (output, dtype) in spec.output_names.iter().zip(desc.outputs) {
        if spec.atomic_outputs {
            params.push(format!("atomic<{}>* {output}", dtype.c_name()));
        } else {
            params.push(format!("{}* {output}", dtype.c_name()));
        }
    }
    // CUDA's own uint3 (12 bytes, as the launch passes it), whatever
    // `uint3` means in the body.
    params.push("const kk_cuda_uint3 kk_grid".to_string());
    // See [`partial`] (unused by a body without the guard).
    params.push("const unsigned kk_partial".to_string());
    if spec.check_bounds {
        // The block of `codegen::bounds`: the record, then the spans.
        params.push("kk::bounds_record* kk_bounds".to_string());
    }

    let mut src = String::with_capacity(1024);
    let _ = writeln!(src, "\nextern \"C\" __global__ void {name}(");
    let _ = writeln!(src, "    {}) {{", params.join(",\n    "));

    if !desc.template.is_empty() {
        for t in desc.template {
            match t.value {
                TemplateArg::Int(v) => {
                    let _ = writeln!(src, "  constexpr int {} = {v};", t.name);
                }
                TemplateArg::Bool(b) => {
                    let _ = writeln!(src, "  constexpr bool {} = {b};", t.name);
                }
                TemplateArg::DType(d) => {
                    let _ = writeln!(src, "  using {} = {};", t.name, d.c_name());
                }
            }
        }
        src.push('\n');
    }

    if !spec.cuda_group_sync {
        src.push_str(GRID_GUARD);
    }
    let exprs: Vec<&str> = spec
        .attributes
        .iter()
        .map(|a| portable_expr(a.name))
        .collect();
    for (local, decl) in LOCALS {
        if exprs.iter().any(|e| mentions(e, local)) {
            let _ = writeln!(src, "  {decl}");
        }
    }
    for (a, expr) in spec.attributes.iter().zip(&exprs) {
        let _ = writeln!(src, "  const {} {} = {expr};", a.ty, a.name);
    }
    if spec.check_bounds {
        views(spec, desc, &mut src);
    }
    src.push_str(BODY_BEGIN);
    let mut after = String::with_capacity(BODY_END.len() + 4 + 16 * shared.macros.len());
    after.push_str(BODY_END);
    after.push_str("}\n\n");
    for word in &shared.macros {
        let _ = writeln!(after, "#undef {word}");
    }
    VariantText {
        name,
        before: src,
        after,
    }
}

/// `body` with its array accesses through checked views when `spec`
/// checks bounds (`codegen::bounds`); unchanged otherwise.
fn checked(spec: &KernelSpec, body: String) -> String {
    if !spec.check_bounds {
        return body;
    }
    super::bounds::checked_body(&body, &super::cpu::array_names(spec)).0
}

/// Declares each array argument's view (`codegen::bounds`) for a checked
/// kernel, after the guard: the record takes the thread's position from
/// CUDA's registers when it is written.
fn views(spec: &KernelSpec, desc: &VariantDesc<'_>, src: &mut String) {
    for (k, (name, ty, scalar)) in super::bounds::view_args(spec, desc).enumerate() {
        let view = super::bounds::view_name(name);
        if scalar {
            let _ = writeln!(
                src,
                "  const kk::view<{ty}> {view}({name}.p, kk_bounds, {k}, nullptr, 0);"
            );
        } else {
            let _ = writeln!(
                src,
                "  const kk::view<{ty}> {view}({name}, kk_bounds, {k}, nullptr);"
            );
        }
        let _ = writeln!(src, "  (void){view};");
    }
}

/// The identifiers of some code.
fn identifiers<'a>(texts: &[&'a str]) -> std::collections::HashSet<&'a str> {
    let mut out = std::collections::HashSet::new();
    for text in texts {
        for t in tokens(text) {
            if t.kind == Kind::Ident {
                out.insert(t.text(text));
            }
        }
    }
    out
}

/// `source` with `#line` directives around the body, as the CUDA backend
/// compiles it when line information is asked for (`-lineinfo`): the
/// body's lines go by `KERNEL.body` and their own numbers, the generated
/// lines after it by their numbers in `source`. Not in the generated
/// source itself: a `#line` anywhere turns off NVRTC's precompiled header,
/// which every other compile uses. `None` for a source without the body's
/// markers.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) fn with_line_marks(source: &str, kernel: &str) -> Option<String> {
    let signature = source.find("extern \"C\" __global__ void ")?;
    let begin = signature + source[signature..].find(BODY_BEGIN)? + BODY_BEGIN.len();
    let end = source.rfind(BODY_END)? + BODY_END.len();
    if end < begin {
        return None;
    }
    let mut out = String::with_capacity(source.len() + kernel.len() + 48);
    out.push_str(&source[..begin]);
    let _ = writeln!(out, "#line 1 \"{}\"", super::body_file(kernel));
    out.push_str(&source[begin..end]);
    // The next line's number in `source`.
    let next = source[..end].bytes().filter(|&b| b == b'\n').count() + 1;
    let _ = writeln!(out, "#line {next} \"{FILE_NAME}\"");
    out.push_str(&source[end..]);
    Some(out)
}

/// The user's body inside a generated CUDA source, found by its markers.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) fn body_of(source: &str) -> &str {
    let Some(signature) = source.find("extern \"C\" __global__ void ") else {
        return "";
    };
    let Some(begin) = source[signature..].find(BODY_BEGIN) else {
        return "";
    };
    let start = signature + begin + BODY_BEGIN.len();
    match source.rfind(BODY_END) {
        Some(end) if end >= start => super::strip_line_marks(&source[start..end]),
        _ => "",
    }
}

/// True when `ident` occurs in `expr` as a whole identifier.
fn mentions(expr: &str, ident: &str) -> bool {
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    expr.match_indices(ident).any(|(at, _)| {
        let before = expr[..at].chars().next_back();
        let after = expr[at + ident.len()..].chars().next();
        !before.is_some_and(is_ident) && !after.is_some_and(is_ident)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;

    #[test]
    fn mentions_whole_identifiers_only() {
        assert!(mentions("kk_group.x * kk_tg.x", "kk_group"));
        assert!(!mentions("kk_groups", "kk_group"));
        assert!(mentions("(uint)kk_lid", "kk_lid"));
    }

    #[test]
    fn every_portable_local_is_defined() {
        for a in crate::codegen::attributes::ATTRIBUTES {
            let expr = portable_expr(a.name);
            for word in expr.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
                if word.starts_with("kk_") {
                    assert!(
                        word == "kk_grid" || LOCALS.iter().any(|(l, _)| *l == word),
                        "{} uses {word}",
                        a.name
                    );
                }
            }
        }
    }

    /// Whether a thread runs the body, computed as [`GRID_GUARD`] computes
    /// it: `u32` arithmetic that wraps as CUDA's `unsigned` does, and the
    /// block counts the launcher uses (ceil(grid / block)).
    fn guard_passes(grid: [u32; 3], tg: [u32; 3], block: [u32; 3], local: [u32; 3]) -> bool {
        // What the launch passes as `kk_partial`.
        if partial(grid, tg) == 0 {
            return true;
        }
        let blocks = |a: usize| grid[a].div_ceil(tg[a]);
        let outside = |a: usize| local[a] >= grid[a].wrapping_sub(block[a].wrapping_mul(tg[a]));
        let whole_yz =
            grid[1] == blocks(1).wrapping_mul(tg[1]) && grid[2] == blocks(2).wrapping_mul(tg[2]);
        !(outside(0) || (!whole_yz && (outside(1) || outside(2))))
    }

    /// The truth: the thread's position, in 64 bits, is inside the grid.
    fn inside(grid: [u32; 3], tg: [u32; 3], block: [u32; 3], local: [u32; 3]) -> bool {
        (0..3).all(|a| (block[a] as u64 * tg[a] as u64 + local[a] as u64) < grid[a] as u64)
    }

    #[test]
    fn every_variant_gets_the_guard_that_the_tests_model() {
        let spec = KernelSpec::new(
            "k".into(),
            vec!["inp".into()],
            vec!["out".into()],
            "uint i = thread_position_in_grid.x; out[i] = inp[i];".into(),
            String::new(),
            true,
            false,
        )
        .unwrap();
        let input = [crate::codegen::variant::InputDesc {
            dtype: DType::F32,
            mode: PassMode::Device,
        }];
        let g = crate::codegen::generate(
            crate::codegen::Dialect::Cuda,
            &spec,
            &VariantDesc {
                inputs: &input,
                outputs: &[DType::F32],
                template: &[],
            },
            0,
        );
        assert!(g.source.contains(GRID_GUARD), "{}", g.source);
        // `guard_passes` mirrors these expressions.
        for axis in ["x", "y", "z"] {
            let left =
                format!("threadIdx.{axis} >= kk_grid.{axis} - blockIdx.{axis} * blockDim.{axis}");
            assert!(GRID_GUARD.contains(&left), "axis {axis}: {GRID_GUARD}");
        }
        for axis in ["y", "z"] {
            let whole = format!("kk_grid.{axis} != gridDim.{axis} * blockDim.{axis}");
            assert!(GRID_GUARD.contains(&whole), "axis {axis}: {GRID_GUARD}");
        }
        assert!(GRID_GUARD.starts_with("  if (kk_partial) {\n"));
        assert!(
            g.source
                .contains("const kk_cuda_uint3 kk_grid,\n    const unsigned kk_partial)"),
            "{}",
            g.source
        );
    }

    #[test]
    fn the_guard_lets_through_exactly_the_threads_inside_the_grid() {
        for axis in 0..3 {
            for g in 1..=9u32 {
                for t in 1..=4u32 {
                    let (mut grid, mut tg) = ([3u32, 2, 1], [2u32, 2, 1]);
                    grid[axis] = g;
                    tg[axis] = t;
                    for bz in 0..grid[2].div_ceil(tg[2]) {
                        for by in 0..grid[1].div_ceil(tg[1]) {
                            for bx in 0..grid[0].div_ceil(tg[0]) {
                                for lz in 0..tg[2] {
                                    for ly in 0..tg[1] {
                                        for lx in 0..tg[0] {
                                            let (b, l) = ([bx, by, bz], [lx, ly, lz]);
                                            assert_eq!(
                                                guard_passes(grid, tg, b, l),
                                                inside(grid, tg, b, l),
                                                "grid {grid:?} tg {tg:?} block {b:?} thread {l:?}"
                                            );
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    /// Why the guard does not compare positions in 32 bits: a grid of
    /// 2^32 - 1 threads in groups of 1000 runs 4294968 blocks,
    /// 4294968000 threads; the last 704 are at 2^32 or past it. In 32 bits
    /// their positions wrap to 0..703, inside the grid, and a guard on
    /// positions lets them run the body a second time there. The guard's
    /// "threads left from the block's start" never wraps: every thread of
    /// the grid passes once and no other does.
    #[test]
    fn no_wrapped_thread_gets_through_near_2_pow_32() {
        let (grid, tg) = (u32::MAX, 1000u32);
        let last = grid.div_ceil(tg) - 1;
        let wrapped_through = (0..tg)
            .filter(|&l| last.wrapping_mul(tg).wrapping_add(l) < grid)
            .filter(|&l| (last as u64 * tg as u64 + l as u64) >= grid as u64)
            .count();
        assert_eq!(wrapped_through, 704, "a 32-bit position guard's duplicates");
        for axis in 0..3 {
            let (mut g, mut t) = ([1u32; 3], [1u32; 3]);
            g[axis] = grid;
            t[axis] = tg;
            let last = grid.div_ceil(tg) - 1;
            for block in [0, last - 1, last] {
                for l in 0..tg {
                    let (mut b, mut lo) = ([0u32; 3], [0u32; 3]);
                    b[axis] = block;
                    lo[axis] = l;
                    assert_eq!(
                        guard_passes(g, t, b, lo),
                        inside(g, t, b, lo),
                        "axis {axis}, block {block}, thread {l}"
                    );
                }
            }
        }
    }

    #[test]
    fn prelude_max_ndim_matches() {
        assert!(PRELUDE.contains(&format!("#define KK_MAX_NDIM {MAX_NDIM}\n")));
    }

    #[test]
    fn cuda_bodies_get_the_plain_prelude_and_no_macros() {
        use crate::codegen::variant::InputDesc;
        let mut spec = KernelSpec::scanned(
            "k".into(),
            vec!["a".into()],
            vec!["o".into()],
            "float4 v = make_float4(a[0], 0, 0, 0); o[0] = dot(v, v);".into(),
            "__device__ float dot(float4 a, float4 b) { return a.x * b.x; }".into(),
            true,
            false,
        );
        let inputs = [InputDesc {
            dtype: crate::DType::F32,
            mode: PassMode::Device,
        }];
        let desc = VariantDesc {
            inputs: &inputs,
            outputs: &[crate::DType::F32],
            template: &[],
        };
        let metal = super::super::generate(super::super::Dialect::Cuda, &spec, &desc, 1).source;
        assert!(metal.contains("#define float4 kk_float4") && metal.contains("namespace metal"));
        spec.language = BodyLanguage::Cuda;
        let cuda = super::super::generate(super::super::Dialect::Cuda, &spec, &desc, 1).source;
        assert!(!cuda.contains("#define") || !cuda.contains("kk_float4"));
        assert!(!cuda.contains("namespace metal"));
        assert!(cuda.contains("float4 v = make_float4"));
    }
}
