// ---- 6.7 SIMD-group matrix functions: 8x8 matrices spread over the 32
// lanes of a simdgroup. Here every lane holds the whole matrix (row-major),
// so loads and products need no lane to talk to another; each lane still
// owns the two elements Apple's layout gives it (thread_elements()), which
// it alone may change: a product first gathers every lane's pair into
// every copy (one SIMD-group exchange per operand changed that way), and a
// store writes each lane's own pair only.
namespace metal {
template <class T, int Cols, int Rows> struct simdgroup_matrix {
  static_assert(Cols == 8 && Rows == 8, "kernelkit: only 8x8 SIMD-group matrices exist");
  alignas(2 * sizeof(T)) T kk_m[64];
  // Whether this lane changed its own pair since the copies last agreed.
  bool kk_dirty;
  simdgroup_matrix() = default;
  // A diagonal matrix (Metal's scalar constructor).
  KK_FN explicit simdgroup_matrix(T diagonal) : kk_dirty(false) {
    for (int i = 0; i < 64; ++i) kk_m[i] = (i / 8 == i % 8) ? diagonal : T(0);
  }
  // This lane's two elements, (row, col) and (row, col + 1).
  KK_FN vec<T, 2>& thread_elements() {
    kk_dirty = true;
    const unsigned l = kk::simd::lane_id_of_thread();
    return *reinterpret_cast<vec<T, 2>*>(&kk_m[kk::sm_row(l) * 8 + kk::sm_col(l)]);
  }
};
typedef simdgroup_matrix<float, 8, 8> simdgroup_float8x8;
#if defined(KK_CPU) || defined(KK_HALF_TYPES)
typedef simdgroup_matrix<::float16_t, 8, 8> simdgroup_half8x8;
typedef simdgroup_matrix<::bfloat16_t, 8, 8> simdgroup_bfloat8x8;
#endif

template <class T, int C, int R> KK_FN simdgroup_matrix<T, C, R> make_filled_simdgroup_matrix(T value) {
  simdgroup_matrix<T, C, R> m;
  for (int i = 0; i < 64; ++i) m.kk_m[i] = value;
  m.kk_dirty = false;
  return m;
}
// Loads the 8x8 block at (column, row) `origin` of a row-major array with
// `elements_per_row` elements per row (transposed: the block's transpose).
template <class T, class U>
KK_FN void simdgroup_load(simdgroup_matrix<T, 8, 8>& d, const U* src, ulong elements_per_row = 8,
                          ulong2 origin = ulong2(0), bool transposed = false) {
  for (int r = 0; r < 8; ++r)
    for (int c = 0; c < 8; ++c) {
      const ulong row = origin.y + ulong(transposed ? c : r), col = origin.x + ulong(transposed ? r : c);
      d.kk_m[r * 8 + c] = T(src[row * elements_per_row + col]);
    }
  d.kk_dirty = false;
}
// Stores the block: each lane writes the pair it owns.
template <class T, class U>
KK_FN void simdgroup_store(const simdgroup_matrix<T, 8, 8>& a, U* dst, ulong elements_per_row = 8,
                           ulong2 origin = ulong2(0), bool transposed = false) {
  const unsigned l = kk::simd::lane_id_of_thread();
  const int r = kk::sm_row(l);
  for (int k = 0; k < 2; ++k) {
    const int c = kk::sm_col(l) + k;
    const ulong row = origin.y + ulong(transposed ? c : r), col = origin.x + ulong(transposed ? r : c);
    dst[row * elements_per_row + col] = U(a.kk_m[r * 8 + c]);
  }
}
}  // namespace metal

namespace kk {
// Makes every lane's copy whole again after lanes changed their pairs.
template <class T> KK_FN void sm_agree(metal::simdgroup_matrix<T, 8, 8>& m) {
  if (!m.kk_dirty) return;
  simd::gather_pairs(m.kk_m);
  m.kk_dirty = false;
}
template <class T> KK_FN metal::simdgroup_matrix<T, 8, 8> sm_agreed(const metal::simdgroup_matrix<T, 8, 8>& m) {
  metal::simdgroup_matrix<T, 8, 8> c = m;
  sm_agree(c);
  return c;
}
}  // namespace kk

namespace metal {
template <class T>
KK_FN void simdgroup_multiply_accumulate(simdgroup_matrix<T, 8, 8>& d, const simdgroup_matrix<T, 8, 8>& a0,
                                         const simdgroup_matrix<T, 8, 8>& b0, const simdgroup_matrix<T, 8, 8>& c0) {
  const simdgroup_matrix<T, 8, 8> a = kk::sm_agreed(a0), b = kk::sm_agreed(b0), c = kk::sm_agreed(c0);
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j) {
      float s = float(c.kk_m[i * 8 + j]);
      for (int k = 0; k < 8; ++k) s += float(a.kk_m[i * 8 + k]) * float(b.kk_m[k * 8 + j]);
      d.kk_m[i * 8 + j] = T(s);
    }
  d.kk_dirty = false;
}
template <class T>
KK_FN void simdgroup_multiply(simdgroup_matrix<T, 8, 8>& d, const simdgroup_matrix<T, 8, 8>& a,
                              const simdgroup_matrix<T, 8, 8>& b) {
  simdgroup_multiply_accumulate(d, a, b, make_filled_simdgroup_matrix<T, 8, 8>(T(0)));
}
}  // namespace metal
