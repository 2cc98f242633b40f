//! The preludes: the C++ every generated CPU and CUDA source starts with.
//!
//! - `portable.h`: qualifiers and type traits shared by both backends.
//! - `cpu_base.hpp` / `cuda_base.cuh`: kernelkit's dtypes (`float16_t`,
//!   `bfloat16_t`, `complex64_t`), CUDA's layout parameters; `layout.h`
//!   (`elem_to_loc`) and `atomic.h` (the atomics of `atomic_outputs`).
//! - `metal/`: the Metal compatibility layer, organised by the chapters of
//!   the Metal Shading Language specification (types and operators, type
//!   traits and limits, math, matrices, atomics, SIMD-group functions and
//!   matrices, synchronisation, MLX's kernel utilities, what cannot be
//!   supported).
//!   The CPU runs the threads of a group that synchronises as fibers
//!   (`metal/group_cpu.h`); CUDA's SIMD-group functions work over the lanes
//!   active at the call (`metal/group_cuda.h`).
//!
//! A Metal body (MLX's `metal_kernel`) gets the whole layer on both
//! backends; a CUDA body (MLX's `cuda_kernel`) gets the plain CUDA prelude,
//! so its own `operator+(float4, float4)` or `dot` never meets ours.

/// The prelude of every CPU variant (a precompiled header when the compiler
/// allows: it must stay one fixed text).
pub(crate) const CPU: &str = concat!(
    include_str!("portable.h"),
    include_str!("cpu_base.hpp"),
    include_str!("layout.h"),
    include_str!("atomic.h"),
    include_str!("metal/types.h"),
    include_str!("metal/traits.h"),
    include_str!("metal/math.h"),
    include_str!("metal/matrix.h"),
    include_str!("metal/atomic.h"),
    include_str!("metal/simd_common.h"),
    include_str!("metal/group_cpu.h"),
    include_str!("metal/simd.h"),
    include_str!("metal/simdgroup_matrix.h"),
    include_str!("metal/mlx.h"),
    include_str!("metal/unsupported.h"),
    include_str!("cpu_tail.hpp"),
);

/// The prelude of a CUDA variant whose body is CUDA C++.
pub(crate) const CUDA_PLAIN: &str = concat!(
    include_str!("portable.h"),
    include_str!("cuda_base.cuh"),
    include_str!("layout.h"),
    include_str!("atomic.h"),
);

/// The prelude of a CUDA variant whose body is Metal: the plain prelude and
/// the Metal layer.
pub(crate) const CUDA_METAL: &str = concat!(
    include_str!("portable.h"),
    include_str!("cuda_base.cuh"),
    include_str!("layout.h"),
    include_str!("atomic.h"),
    include_str!("metal/types.h"),
    include_str!("metal/traits.h"),
    include_str!("metal/math.h"),
    include_str!("metal/matrix.h"),
    include_str!("metal/atomic.h"),
    include_str!("metal/simd_common.h"),
    include_str!("metal/group_cuda.h"),
    include_str!("metal/simd.h"),
    include_str!("metal/simdgroup_matrix.h"),
    include_str!("metal/mlx.h"),
    include_str!("metal/unsupported.h"),
    include_str!("metal/cuda_tail.h"),
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
mod tests {
    use super::*;

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
    }
}
