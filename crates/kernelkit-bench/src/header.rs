//! The large header: about 95 KB of helper functions, the size of MLX's
//! `quantized.h`, which real quantized kernels carry into every variant.
//!
//! Its size is what matters to the figures (before the memo, every call
//! generated and hashed a source this big), but it is real code, not a
//! comment block: dequantizers, packed dot products, polynomials and a
//! compensated accumulator, written so that the same text compiles as C++20
//! for the CPU backend and as CUDA C++ under NVRTC (no standard headers, no
//! library math, `__device__` where NVRTC needs it).

use std::fmt::Write;

/// The header is at least this many bytes.
pub(crate) const TARGET_BYTES: usize = 95 * 1024;

/// The helper the benchmark body calls: `float kkb_affine_0(float)`.
pub(crate) const USED_HELPER: &str = "kkb_affine_0";

/// Builds the header. Deterministic: every call returns the same text, so
/// the same kernel keeps the same source (and module key) across processes.
pub(crate) fn generate() -> String {
    let mut h = String::with_capacity(TARGET_BYTES + 4096);
    h.push_str(concat!(
        "// kernelkit bench: a header of helper functions as large as the ones\n",
        "// quantized kernels carry. Each block i has the same shape with its own\n",
        "// constants; templates are only parsed, inline functions only checked.\n",
        "#ifndef KKB_FN\n",
        "#if defined(__CUDACC__)\n",
        "#define KKB_FN __device__ __forceinline__\n",
        "#else\n",
        "#define KKB_FN inline\n",
        "#endif\n",
        "#endif\n\n",
    ));
    let mut i = 0usize;
    while h.len() < TARGET_BYTES {
        block(&mut h, i);
        i += 1;
    }
    h
}

/// One block of helpers, numbered `i`, with constants derived from `i`.
fn block(h: &mut String, i: usize) {
    let a = 1.0 + (i % 7) as f64 * 0.125;
    let b = (i % 5) as f64 * 0.25 - 0.5;
    let c = [
        0.5 + (i % 3) as f64 * 0.0625,
        -1.25 + (i % 11) as f64 * 0.03125,
        0.75 - (i % 13) as f64 * 0.015625,
        0.0625 * (1 + i % 4) as f64,
    ];
    let bits = [2, 3, 4, 8][i % 4];
    let _ = write!(
        h,
        r#"// ---- block {i}: affine map, dequantizers, dot products ----
KKB_FN float kkb_affine_{i}(float x) {{ return x * {a:.6}f + {b:.6}f; }}

KKB_FN float kkb_dequant_{i}(unsigned int packed, int lane, float scale, float bias) {{
  const unsigned int q = (packed >> ({bits}u * (unsigned int)lane)) & ((1u << {bits}u) - 1u);
  return scale * (float)q + bias;
}}

template <int BITS>
KKB_FN float kkb_qdot_{i}(const float* x, const unsigned int* w, float scale, float bias, int n) {{
  constexpr int per_word = 32 / BITS;
  constexpr unsigned int mask = (1u << BITS) - 1u;
  float acc = 0.0f;
  float xsum = 0.0f;
  for (int k = 0; k < n; ++k) {{
    const unsigned int q = (w[k / per_word] >> ((k % per_word) * BITS)) & mask;
    acc += x[k] * (float)q;
    xsum += x[k];
  }}
  return scale * acc + bias * xsum;
}}

template <typename T>
KKB_FN T kkb_poly_{i}(T x) {{
  return ((T({c0:.6}f) * x + T({c1:.6}f)) * x + T({c2:.6}f)) * x + T({c3:.6}f);
}}

KKB_FN unsigned int kkb_pack_{i}(const float* v, float inv_scale, float bias) {{
  unsigned int word = 0u;
  for (int k = 0; k < 32 / {bits}; ++k) {{
    float s = (v[k] - bias) * inv_scale + 0.5f;
    s = s < 0.0f ? 0.0f : s;
    s = s > (float)((1u << {bits}u) - 1u) ? (float)((1u << {bits}u) - 1u) : s;
    word |= ((unsigned int)s) << (k * {bits});
  }}
  return word;
}}

struct kkb_accum_{i} {{
  float sum;
  float carry;
  KKB_FN void add(float v) {{
    const float y = v - carry;
    const float t = sum + y;
    carry = (t - sum) - y;
    sum = t;
  }}
  KKB_FN float value() const {{ return sum + {b:.6}f * 0.0f; }}
}};

template <typename T, int N>
KKB_FN T kkb_horner_{i}(const T (&coeffs)[N], T x) {{
  T r = coeffs[N - 1];
  for (int k = N - 2; k >= 0; --k) {{
    r = r * x + coeffs[k];
  }}
  return r;
}}

"#,
        c0 = c[0],
        c1 = c[1],
        c2 = c[2],
        c3 = c[3],
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_is_95_kb_deterministic_and_has_the_used_helper() {
        let h = generate();
        assert!(h.len() >= TARGET_BYTES);
        assert!(h.len() < TARGET_BYTES + 2048, "{}", h.len());
        assert_eq!(h, generate());
        assert!(h.contains(&format!("float {USED_HELPER}(float x)")));
    }
}
