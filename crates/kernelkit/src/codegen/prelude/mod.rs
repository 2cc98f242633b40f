//! The preludes: the C++ every generated CPU and CUDA source starts with.
//!
//! - `portable.h`: qualifiers and type traits shared by both backends.
//! - `cpu_base.hpp` / `cuda_base.cuh`: kernelkit's dtypes (`float16_t`,
//!   `bfloat16_t`, `complex64_t`), CUDA's layout parameters; `layout.h`
//!   (`elem_to_loc`) and `atomic.h` (the atomics of `atomic_outputs`).
//! - `metal/`: the Metal compatibility layer, organised by the chapters of
//!   the Metal Shading Language specification (types, their operators,
//!   type traits, limits and constants, math in several files, geometric
//!   functions, matrices, atomics, SIMD-group functions and matrices,
//!   synchronisation, MLX's kernel utilities, what cannot be supported).
//!   The CPU runs the threads of a group that synchronises as fibers
//!   (`metal/group_cpu.h`); CUDA's SIMD-group functions work over the lanes
//!   active at the call (`metal/group_cuda.h`).
//!
//! A Metal body (MLX's `metal_kernel`) gets the layer on both backends; a
//! CUDA body (MLX's `cuda_kernel`) gets the plain CUDA prelude, so its own
//! `operator+(float4, float4)` or `dot` never meets ours.
//!
//! **CUDA: the layer by need.** NVRTC parses every line it is given on
//! every compile, and the whole layer would be most of a small kernel's
//! compile. So a CUDA source holds only the sections (the tables
//! `CUDA_METAL_SECTIONS`, `CUDA_PLAIN_SECTIONS`) that the variant's text
//! can reach: [`select`] finds them from the identifiers of the lowered body and header (and what the
//! wrapper adds), with the dependencies between sections made explicit
//! in one table. The CPU keeps the whole layer as one fixed text: it is
//! compiled once into a precompiled header (`backend/cpu/pch.rs`), which
//! already takes its parse out of every compile.

mod select;

#[cfg(test)]
pub(crate) use select::Selection;
pub(crate) use select::{select, Needs};

/// The prelude of every CPU variant (a precompiled header when the compiler
/// allows: it must stay one fixed text).
pub(crate) const CPU: &str = concat!(
    include_str!("portable.h"),
    include_str!("cpu_base.hpp"),
    include_str!("layout.h"),
    include_str!("atomic.h"),
    include_str!("metal/types.h"),
    include_str!("metal/vec_ops.h"),
    include_str!("metal/traits.h"),
    include_str!("metal/limits.h"),
    include_str!("metal/constants.h"),
    include_str!("metal/math.h"),
    include_str!("metal/math_float.h"),
    include_str!("metal/math_common.h"),
    include_str!("metal/math_relational.h"),
    include_str!("metal/math_integer.h"),
    include_str!("metal/geometric.h"),
    include_str!("metal/conditional.h"),
    include_str!("metal/matrix.h"),
    include_str!("metal/atomic.h"),
    include_str!("metal/simd_common.h"),
    include_str!("metal/group_cpu.h"),
    include_str!("metal/mem_flags.h"),
    include_str!("metal/simd.h"),
    include_str!("metal/simdgroup_matrix.h"),
    include_str!("metal/mlx.h"),
    include_str!("metal/unsupported.h"),
    include_str!("cpu_tail.hpp"),
);

/// One section of the CUDA prelude: a file of it, with what it needs.
#[derive(Debug)]
pub(crate) struct Section {
    /// The short name, also in the section's first line
    /// (`// kernelkit prelude: NAME`).
    pub(crate) name: &'static str,
    /// The text, first line included.
    pub(crate) text: &'static str,
    /// In every source of its language (the base, the vector types the
    /// wrapper's positions are, the tail).
    pub(crate) always: bool,
    /// The sections whose names this one uses (each earlier in the table).
    pub(crate) deps: &'static [Id],
    /// Identifiers of the text that are not names it declares for a body:
    /// its locals, parameters, members, kernelkit-internal names and its
    /// uses of other sections' names. A body that uses the same word does
    /// not need the section. Everything else the text names pulls it in
    /// (see `select`).
    pub(crate) locals: &'static [&'static str],
}

/// Builds the section table and the whole prelude text of one list of
/// files: each section's text is its marker line and its file.
macro_rules! sections {
    ($table:ident, $whole:ident: $( $id:ident = $name:literal $file:literal, always: $always:literal, deps: [$($dep:ident),*], locals: $locals:expr; )*) => {
        /// The sections, in the order a source holds them.
        pub(crate) const $table: &[Section] = &[$(
            Section {
                name: $name,
                text: concat!("// kernelkit prelude: ", $name, "\n", include_str!($file)),
                always: $always,
                deps: &[$(Id::$dep),*],
                locals: $locals,
            },
        )*];
        /// Every section in order: the whole prelude.
        pub(crate) const $whole: &str = concat!($("// kernelkit prelude: ", $name, "\n", include_str!($file)),*);
    };
}

/// The sections of the CUDA prelude of a Metal body, by index (the order
/// of [`CUDA_METAL_SECTIONS`]; the plain prelude is its first four).
// Outside tests only the rows that code or a dependency list names are
// built; the rest name the table's order for the tests.
#[cfg_attr(not(test), allow(dead_code))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Id {
    Portable,
    CudaBase,
    Layout,
    Atomic,
    Types,
    VecOps,
    Traits,
    Limits,
    Constants,
    Math,
    MathFloat,
    MathCommon,
    MathRelational,
    MathInteger,
    Geometric,
    Conditional,
    Matrix,
    MetalAtomic,
    SimdCommon,
    GroupCuda,
    MemFlags,
    Simd,
    SimdgroupMatrix,
    Mlx,
    Unsupported,
    CudaTail,
}

sections!(CUDA_METAL_SECTIONS, CUDA_METAL:
    Portable = "portable" "portable.h", always: true, deps: [], locals: &[];
    CudaBase = "cuda_base" "cuda_base.cuh", always: true, deps: [Portable], locals: &[];
    Layout = "layout" "layout.h", always: true, deps: [Portable], locals: &[];
    Atomic = "atomic" "atomic.h", always: false, deps: [Portable], locals: select::ATOMIC_LOCALS;
    Types = "types" "metal/types.h", always: true, deps: [Portable], locals: &[];
    VecOps = "vec_ops" "metal/vec_ops.h", always: false, deps: [Types], locals: select::VEC_OPS_LOCALS;
    Traits = "traits" "metal/traits.h", always: false, deps: [Types], locals: select::TRAITS_LOCALS;
    Limits = "limits" "metal/limits.h", always: false, deps: [Types, Traits], locals: select::LIMITS_LOCALS;
    Constants = "constants" "metal/constants.h", always: false, deps: [], locals: &[];
    Math = "math" "metal/math.h", always: false, deps: [Types], locals: select::MATH_LOCALS;
    MathFloat = "math_float" "metal/math_float.h", always: false, deps: [Math], locals: select::MATH_FLOAT_LOCALS;
    MathCommon = "math_common" "metal/math_common.h", always: false, deps: [Math], locals: select::MATH_COMMON_LOCALS;
    MathRelational = "math_relational" "metal/math_relational.h", always: false, deps: [Math, MathCommon, Traits, Limits], locals: select::MATH_RELATIONAL_LOCALS;
    MathInteger = "math_integer" "metal/math_integer.h", always: false, deps: [Math, Traits, Limits], locals: select::MATH_INTEGER_LOCALS;
    Geometric = "geometric" "metal/geometric.h", always: false, deps: [VecOps, MathFloat], locals: select::GEOMETRIC_LOCALS;
    Conditional = "conditional" "metal/conditional.h", always: false, deps: [Math], locals: select::CONDITIONAL_LOCALS;
    Matrix = "matrix" "metal/matrix.h", always: false, deps: [VecOps, Geometric], locals: select::MATRIX_LOCALS;
    MetalAtomic = "metal_atomic" "metal/atomic.h", always: false, deps: [Atomic, Types], locals: &[];
    SimdCommon = "simd_common" "metal/simd_common.h", always: false, deps: [Types], locals: select::SIMD_COMMON_LOCALS;
    GroupCuda = "group_cuda" "metal/group_cuda.h", always: false, deps: [SimdCommon, Atomic, MetalAtomic], locals: select::GROUP_CUDA_LOCALS;
    MemFlags = "mem_flags" "metal/mem_flags.h", always: false, deps: [], locals: &[];
    Simd = "simd" "metal/simd.h", always: false, deps: [GroupCuda, SimdCommon, MathCommon], locals: select::SIMD_LOCALS;
    SimdgroupMatrix = "simdgroup_matrix" "metal/simdgroup_matrix.h", always: false, deps: [GroupCuda, SimdCommon], locals: select::SIMDGROUP_MATRIX_LOCALS;
    Mlx = "mlx" "metal/mlx.h", always: false, deps: [Traits, Limits, Layout, CudaBase], locals: select::MLX_LOCALS;
    Unsupported = "unsupported" "metal/unsupported.h", always: false, deps: [], locals: select::UNSUPPORTED_LOCALS;
    CudaTail = "cuda_tail" "metal/cuda_tail.h", always: true, deps: [Types, CudaBase], locals: &[];
);

sections!(CUDA_PLAIN_SECTIONS, CUDA_PLAIN:
    Portable = "portable" "portable.h", always: true, deps: [], locals: &[];
    CudaBase = "cuda_base" "cuda_base.cuh", always: true, deps: [Portable], locals: &[];
    Layout = "layout" "layout.h", always: true, deps: [Portable], locals: &[];
    Atomic = "atomic" "atomic.h", always: true, deps: [Portable], locals: &[];
);

/// The Metal vector and packed vector type names (`float4`,
/// `packed_half3`, ...). CUDA declares some of the same names itself, so
/// in a CUDA source a Metal body reaches ours through macros (`float4` ->
/// `kk_float4`).
pub(crate) fn vector_type_names() -> impl Iterator<Item = String> {
    const ELEMS: &[&str] = &[
        "bool", "char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "float",
        "half", "bfloat",
    ];
    ELEMS
        .iter()
        .flat_map(|e| (2..=4).flat_map(move |n| [format!("{e}{n}"), format!("packed_{e}{n}")]))
}

#[cfg(test)]
mod tests;
