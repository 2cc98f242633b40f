//! What a body (and its header) uses, found once when a kernel is built:
//! by identifiers in the code, never in comments or string literals (the
//! word `threadgroup` in a comment is not a use).

use super::lex::{tokens, Kind};

/// Metal's SIMD-group and quad functions and its barriers: a body that
/// calls one needs the threads of a group to run together (on the CPU: as
/// fibers).
pub(crate) const GROUP_FUNCTIONS: &[&str] = &[
    "threadgroup_barrier",
    "simdgroup_barrier",
    "simd_sum",
    "simd_product",
    "simd_min",
    "simd_max",
    "simd_and",
    "simd_or",
    "simd_xor",
    "simd_prefix_inclusive_sum",
    "simd_prefix_exclusive_sum",
    "simd_prefix_inclusive_product",
    "simd_prefix_exclusive_product",
    "simd_shuffle",
    "simd_broadcast",
    "simd_broadcast_first",
    "simd_shuffle_up",
    "simd_shuffle_down",
    "simd_shuffle_xor",
    "simd_shuffle_rotate_up",
    "simd_shuffle_rotate_down",
    "simd_shuffle_and_fill_up",
    "simd_shuffle_and_fill_down",
    "simd_all",
    "simd_any",
    "simd_is_first",
    "simd_ballot",
    "simd_active_threads_mask",
    "quad_sum",
    "quad_product",
    "quad_min",
    "quad_max",
    "quad_and",
    "quad_or",
    "quad_xor",
    "quad_prefix_inclusive_sum",
    "quad_prefix_exclusive_sum",
    "quad_prefix_inclusive_product",
    "quad_prefix_exclusive_product",
    "quad_shuffle",
    "quad_broadcast",
    "quad_broadcast_first",
    "quad_shuffle_up",
    "quad_shuffle_down",
    "quad_shuffle_xor",
    "quad_shuffle_rotate_up",
    "quad_shuffle_rotate_down",
    "quad_shuffle_and_fill_up",
    "quad_shuffle_and_fill_down",
    "quad_all",
    "quad_any",
    "quad_is_first",
    "quad_ballot",
    "quad_active_threads_mask",
    // SIMD-group matrices: a product may gather the lanes' own elements.
    "simdgroup_multiply",
    "simdgroup_multiply_accumulate",
];

/// Metal features the CPU and CUDA backends cannot provide, with what to
/// call them in an error.
const UNSUPPORTED: &[(&str, &str)] = &[
    ("texture1d", "Metal textures"),
    ("texture1d_array", "Metal textures"),
    ("texture2d", "Metal textures"),
    ("texture2d_array", "Metal textures"),
    ("texture2d_ms", "Metal textures"),
    ("texture2d_ms_array", "Metal textures"),
    ("texture3d", "Metal textures"),
    ("texturecube", "Metal textures"),
    ("texturecube_array", "Metal textures"),
    ("texture_buffer", "Metal textures"),
    ("depth2d", "Metal depth textures"),
    ("depth2d_array", "Metal depth textures"),
    ("depth2d_ms", "Metal depth textures"),
    ("depthcube", "Metal depth textures"),
    ("sampler", "Metal samplers"),
    ("imageblock", "Metal imageblocks"),
    ("threadgroup_imageblock", "Metal imageblocks"),
    ("acceleration_structure", "ray tracing"),
    ("intersector", "ray tracing"),
    ("visible_function_table", "function tables"),
    ("intersection_function_table", "function tables"),
    ("command_buffer", "indirect command buffers"),
    ("os_log", "GPU logging"),
];

/// CUDA C++ words a Metal body cannot mean on the CPU (in code, not on
/// preprocessor lines). CUDA's function qualifiers (`__device__`,
/// `__host__`, `__forceinline__`) are not among them: the CPU prelude
/// accepts them, so a header written for both compiles on both.
const CUDA_WORDS: &[&str] = &[
    "__syncthreads",
    "__syncwarp",
    "__shared__",
    "__global__",
    "__activemask",
    "__ldg",
    "threadIdx",
    "blockIdx",
    "blockDim",
    "gridDim",
    "warpSize",
    "atomicAdd",
    "atomicSub",
    "atomicCAS",
    "atomicExch",
    "atomicMax",
    "atomicMin",
    "atomicAnd",
    "atomicOr",
    "atomicXor",
    "cooperative_groups",
];

/// What the scan found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Uses {
    /// The first barrier, SIMD-group or quad function the code calls.
    pub(crate) group_function: Option<&'static str>,
    /// A Metal feature no portable backend has: (word, what it is).
    pub(crate) unsupported: Option<(&'static str, &'static str)>,
    /// The first CUDA C++ word.
    pub(crate) cuda_word: Option<&'static str>,
    /// CUDA's own block or warp collectives (`__syncthreads`, `__shfl*`,
    /// `__shared__`, cooperative groups): code written for CUDA, which may
    /// count on every thread of every block.
    pub(crate) cuda_group_sync: bool,
    /// Cooperative groups (`cooperative_groups`, `cg::`).
    pub(crate) cooperative_groups: bool,
}

/// Scans the code of `texts` (a body and its header).
pub(crate) fn scan(texts: &[&str]) -> Uses {
    let mut uses = Uses::default();
    for text in texts {
        let toks = tokens(text);
        for (i, t) in toks.iter().enumerate() {
            if t.kind != Kind::Ident {
                continue;
            }
            let word = t.text(text);
            let scoped = toks.get(i + 1).is_some_and(|n| n.text(text) == "::");
            if uses.group_function.is_none() {
                uses.group_function = GROUP_FUNCTIONS.iter().copied().find(|w| *w == word);
            }
            if uses.unsupported.is_none() {
                uses.unsupported = UNSUPPORTED.iter().copied().find(|(w, _)| *w == word);
            }
            if uses.cuda_word.is_none() && !t.directive {
                uses.cuda_word = CUDA_WORDS
                    .iter()
                    .copied()
                    .find(|w| *w == word)
                    .or(word.starts_with("__shfl").then_some("__shfl"))
                    .or(word.starts_with("__ballot").then_some("__ballot_sync"))
                    .or((word == "cg" && scoped).then_some("cg::"));
            }
            if word == "cooperative_groups" || (word == "cg" && scoped) {
                uses.cooperative_groups = true;
            }
            let cuda_collective = word.starts_with("__shfl")
                || word.starts_with("__ballot")
                || word == "cg" && scoped
                || matches!(
                    word,
                    "__syncthreads"
                        | "__syncwarp"
                        | "__shared__"
                        | "cooperative_groups"
                        | "__activemask"
                );
            uses.cuda_group_sync |= cuda_collective;
        }
    }
    uses
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_group_functions_in_code_only() {
        let u = scan(&["// threadgroup_barrier\nfloat s = simd_sum(x);", ""]);
        assert_eq!(u.group_function, Some("simd_sum"));
        let u = scan(&["// One threadgroup (1 thread) per query\nout[0] = 1;", ""]);
        assert_eq!(u, Uses::default());
        let u = scan(&["threadgroup float buf[4]; x = \"simd_sum\";", ""]);
        assert_eq!(u, Uses::default());
        let u = scan(&[
            "y = f(x);",
            "inline float f(float v) { return quad_sum(v); }",
        ]);
        assert_eq!(u.group_function, Some("quad_sum"));
    }

    #[test]
    fn finds_unsupported_features_and_cuda_words() {
        let u = scan(&[
            "float4 c = t.read(uint2(0));",
            "void f(texture2d<float> t) {}",
        ]);
        assert_eq!(u.unsupported, Some(("texture2d", "Metal textures")));
        let u = scan(&["auto b = cg::this_thread_block(); __syncthreads();", ""]);
        assert_eq!(u.cuda_word, Some("cg::"));
        assert!(u.cooperative_groups && u.cuda_group_sync);
        let u = scan(&["v = __shfl_down_sync(0xffffffff, v, 1);", ""]);
        assert_eq!(u.cuda_word, Some("__shfl"));
        assert!(u.cuda_group_sync);
        assert!(!scan(&["threadgroup_barrier(0); x = simd_sum(x);", ""]).cuda_group_sync);
        // Function qualifiers, and words on preprocessor lines, are not
        // CUDA-only uses.
        let header = "#if defined(__CUDACC__)\n#define F __device__ __forceinline__\n#endif\n\
                      __host__ __device__ inline float f(float x) { return x; }";
        assert_eq!(scan(&["out[0] = f(1);", header]).cuda_word, None);
    }
}
