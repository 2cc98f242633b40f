// ---- 6.9.2 SIMD-group and quad functions: what both backends share.
// Lanes are the threads of a simdgroup (32 consecutive threads of a
// threadgroup; quads: 4 consecutive lanes). A function works over the
// active lanes: those that reach the call together. Its operation is
// computed per segment of W lanes (W = 32 for simd_*, 4 for quad_*).
namespace kk {
// A call site of a SIMD-group function in the user's code (numbered by the
// lowering pass; 0: not numbered). On the CPU, lanes parked at different
// sites never share an operation, as divergent paths on a GPU do not.
template <int N> struct site { static constexpr int value = N; };
namespace simd {
struct add {
  template <class T> static KK_FN T f(const T& a, const T& b) { return T(a + b); }
  template <class T> static KK_FN T identity() { return T(0); }
};
struct mul {
  template <class T> static KK_FN T f(const T& a, const T& b) { return T(a * b); }
  template <class T> static KK_FN T identity() { return T(1); }
};
struct and_ { template <class T> static KK_FN T f(const T& a, const T& b) { return T(a & b); } };
struct or_ { template <class T> static KK_FN T f(const T& a, const T& b) { return T(a | b); } };
struct xor_ { template <class T> static KK_FN T f(const T& a, const T& b) { return T(a ^ b); } };

template <int W> KK_FN unsigned seg_bits() { return W == 32 ? 0xffffffffu : ((1u << W) - 1u); }
// Shuffle kinds, and the source lane of lane l (an absolute lane) for one:
// `fill` says whether the value comes from the filling argument.
enum { BY_INDEX, UP, DOWN, XOR, ROTATE_UP, ROTATE_DOWN, FILL_UP, FILL_DOWN, FIRST };
template <int W> KK_FN int source(int kind, int l, unsigned arg, unsigned modulo, bool* fill) {
  const int base = l & ~(W - 1), i = l - base;
  const int d = (int)arg;
  *fill = false;
  switch (kind) {
    case BY_INDEX: return base + (int)(arg & (unsigned)(W - 1));
    case UP: return i >= d ? l - d : l;
    case DOWN: return i + d < W ? l + d : l;
    case XOR: return base + ((i ^ d) & (W - 1));
    case ROTATE_UP: return base + (((i - d) % W) + W) % W;
    case ROTATE_DOWN: return base + (i + d) % W;
    case FILL_UP: {
      const int mdl = modulo ? (int)modulo : W, j = i % mdl, sb = l - j;
      if (j >= d) return l - d;
      *fill = true;
      return sb + j + mdl - d;
    }
    case FILL_DOWN: {
      const int mdl = modulo ? (int)modulo : W, j = i % mdl, sb = l - j;
      if (j + d < mdl) return l + d;
      *fill = true;
      return sb + j + d - mdl;
    }
    default: return l;
  }
}
enum { BALLOT, ALL, ANY, ACTIVE, IS_FIRST };
}  // namespace simd
// The pair of an 8x8 SIMD-group matrix lane l owns: its row and first
// column (Apple's layout, as MLX's steel kernels use it).
KK_FN int sm_row(unsigned l) { return int(((l / 4) & 4) + ((l / 2) % 4)); }
KK_FN int sm_col(unsigned l) { return int(((l / 4) & 2) * 2 + (l % 2) * 2); }
namespace simd {
// Ballot and active-lane bits of a segment (bit i: lane i of the segment).
struct vote_bits {
  unsigned long long bits, active;
};
}  // namespace simd
}  // namespace kk
