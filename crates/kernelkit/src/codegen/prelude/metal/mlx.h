// ---- MLX's kernel utilities: what mlx/backend/metal/kernels/utils.h (and
// defines.h) give every `metal_kernel` body, which bodies use without an
// include (`ceildiv`, the `elem_to_loc` family, `Limits`, ...). Shapes and
// strides may be pointers (CPU) or kk_shape / kk_strides (CUDA), so the
// index helpers take either.
#define METAL_FUNC KK_FN
#define MTL_CONST
#ifdef KK_CUDA
#define MLX_MTL_PRAGMA_UNROLL _Pragma("unroll")
#else
#define MLX_MTL_PRAGMA_UNROLL _Pragma("GCC unroll 16")
#endif
enum {
  MAX_REDUCE_SPECIALIZED_DIMS = 4,
  REDUCE_N_READS = 4,
  REDUCE_N_WRITES = 4,
  SOFTMAX_N_READS = 4,
  RMS_N_READS = 4,
  RMS_LOOPED_LIMIT = 4096
};

template <typename U> struct WorkPerThread {
  static_assert(sizeof(U) <= 8, "Type too large");
  static constexpr int n = 8 / sizeof(U);
};

// Limits<T>: max/min (infinities for floats) and the finite extremes.
template <typename U, bool F = metal::is_floating_point<U>::value> struct Limits {
  static constexpr U max = metal::numeric_limits<U>::max();
  static constexpr U min = metal::numeric_limits<U>::min();
  static constexpr U finite_max = metal::numeric_limits<U>::max();
  static constexpr U finite_min = metal::numeric_limits<U>::min();
};
template <typename U> struct Limits<U, true> {
  static constexpr U max = metal::numeric_limits<U>::infinity();
  static constexpr U min = metal::numeric_limits<U>::kk_neg_infinity();
  static constexpr U finite_max = metal::numeric_limits<U>::max();
  static constexpr U finite_min = metal::numeric_limits<U>::lowest();
};
template <> struct Limits<bool, false> {
  static constexpr bool max = true;
  static constexpr bool min = false;
};

// Element index of a (possibly strided) array -> memory offset: with the
// index as a grid position (x, y: the last two axes; z: the rest).
template <typename IdxT = int64_t, typename Shape, typename Strides>
KK_FN IdxT elem_to_loc(metal::uint3 elem, const Shape& shape, const Strides& strides, int ndim) {
  IdxT loc = elem.x * IdxT(strides[ndim - 1]) + elem.y * IdxT(strides[ndim - 2]);
  for (int d = ndim - 3; d >= 0; --d) {
    loc += (elem.z % shape[d]) * IdxT(strides[d]);
    elem.z /= shape[d];
  }
  return loc;
}
template <typename IdxT = int64_t, typename Stride> KK_FN IdxT elem_to_loc_1(uint elem, const Stride& stride) {
  return elem * IdxT(stride);
}
template <typename IdxT = int64_t, typename Strides> KK_FN IdxT elem_to_loc_2(metal::uint2 elem, const Strides& strides) {
  return elem.x * IdxT(strides[1]) + elem.y * IdxT(strides[0]);
}
template <typename IdxT = int64_t, typename Strides> KK_FN IdxT elem_to_loc_3(metal::uint3 elem, const Strides& strides) {
  return elem.x * IdxT(strides[2]) + elem.y * IdxT(strides[1]) + elem.z * IdxT(strides[0]);
}
// Offsets of two and three arrays of one shape at once.
template <typename IdxT = int64_t, typename Shape, typename Strides>
KK_FN metal::vec<IdxT, 2> elem_to_loc_2_nd(metal::uint3 elem, const Shape& shape, const Strides& a_strides,
                                           const Strides& b_strides, int ndim) {
  metal::vec<IdxT, 2> loc = {IdxT(elem.x * IdxT(a_strides[ndim - 1]) + IdxT(elem.y) * IdxT(a_strides[ndim - 2])),
                             IdxT(elem.x * IdxT(b_strides[ndim - 1]) + elem.y * IdxT(b_strides[ndim - 2]))};
  for (int d = ndim - 3; d >= 0; --d) {
    uint l = elem.z % shape[d];
    loc.x += l * IdxT(a_strides[d]);
    loc.y += l * IdxT(b_strides[d]);
    elem.z /= shape[d];
  }
  return loc;
}
template <typename IdxT = int64_t, typename Shape, typename Strides>
KK_FN metal::vec<IdxT, 3> elem_to_loc_3_nd(metal::uint3 elem, const Shape& shape, const Strides& a_strides,
                                           const Strides& b_strides, const Strides& c_strides, int ndim) {
  metal::vec<IdxT, 3> loc = {IdxT(elem.x * IdxT(a_strides[ndim - 1])) + IdxT(elem.y * IdxT(a_strides[ndim - 2])),
                             IdxT(elem.x * IdxT(b_strides[ndim - 1])) + IdxT(elem.y * IdxT(b_strides[ndim - 2])),
                             IdxT(elem.x * IdxT(c_strides[ndim - 1])) + IdxT(elem.y * IdxT(c_strides[ndim - 2]))};
  for (int d = ndim - 3; d >= 0; --d) {
    uint l = elem.z % shape[d];
    loc.x += l * IdxT(a_strides[d]);
    loc.y += l * IdxT(b_strides[d]);
    loc.z += l * IdxT(c_strides[d]);
    elem.z /= shape[d];
  }
  return loc;
}

// Walks the offsets of consecutive elements of a strided array (DIM: the
// axes handled by the nested walkers).
template <int DIM, typename OffsetT = size_t, bool General = true> struct LoopedElemToLoc {
  int dim;
  LoopedElemToLoc<DIM - 1, OffsetT, General> inner_looper;
  OffsetT offset{0};
  int index{0};
  KK_FN LoopedElemToLoc(int dim) : dim(dim), inner_looper(dim - 1) {}
  template <typename Shape, typename Strides> KK_FN void next(const Shape& shape, const Strides& strides) {
    if (dim == 0) return;
    index++;
    offset += OffsetT(strides[dim - 1]);
    if (index >= shape[dim - 1]) {
      index = 0;
      inner_looper.next(shape, strides);
      offset = inner_looper.offset;
    }
  }
  template <typename Shape, typename Strides> KK_FN void next(int n, const Shape& shape, const Strides& strides) {
    if (dim == 0) return;
    index += n;
    offset += n * OffsetT(strides[dim - 1]);
    if (index >= shape[dim - 1]) {
      int extra = index - shape[dim - 1];
      if (extra >= shape[dim - 1]) {
        inner_looper.next(1 + extra / shape[dim - 1], shape, strides);
        extra = extra % shape[dim - 1];
      } else {
        inner_looper.next(shape, strides);
      }
      index = 0;
      offset = inner_looper.offset;
      if (extra > 0) next(extra, shape, strides);
    }
  }
  KK_FN OffsetT location() { return offset; }
};
template <typename OffsetT> struct LoopedElemToLoc<1, OffsetT, true> {
  int dim;
  OffsetT offset{0};
  uint index{0};
  KK_FN LoopedElemToLoc(int dim) : dim(dim) {}
  template <typename Shape, typename Strides> KK_FN void next(const Shape& shape, const Strides& strides) {
    index++;
    if (dim > 1) {
      offset = elem_to_loc<OffsetT>(OffsetT(index), shape, strides, dim);
    } else {
      offset += OffsetT(strides[0]);
    }
  }
  template <typename Shape, typename Strides> KK_FN void next(int n, const Shape& shape, const Strides& strides) {
    index += n;
    if (dim > 1) {
      offset = elem_to_loc<OffsetT>(OffsetT(index), shape, strides, dim);
    } else {
      offset = index * OffsetT(strides[0]);
    }
  }
  KK_FN OffsetT location() { return offset; }
};
template <typename OffsetT> struct LoopedElemToLoc<1, OffsetT, false> {
  OffsetT offset{0};
  KK_FN LoopedElemToLoc(int) {}
  template <typename Shape, typename Strides> KK_FN void next(const Shape&, const Strides& strides) {
    offset += OffsetT(strides[0]);
  }
  template <typename Shape, typename Strides> KK_FN void next(int n, const Shape&, const Strides& strides) {
    offset += n * OffsetT(strides[0]);
  }
  KK_FN OffsetT location() { return offset; }
};

// ceil(N / M) for integers.
template <typename T, typename U> KK_FN T ceildiv(T N, U M) { return (N + M - 1) / M; }
template <bool condition, typename T, typename U> struct ConditionalType { using type = U; };
template <typename T, typename U> struct ConditionalType<true, T, U> { using type = T; };
template <typename U, typename T> KK_FN U cast_to(T val) { return static_cast<U>(val); }
template <> KK_FN bool cast_to<bool, float>(float val) { return (metal::as_type<uint32_t>(val) & 0x7FFFFFFFu) != 0; }
template <> KK_FN bool cast_to<bool, complex64_t>(complex64_t val) {
  return cast_to<bool, float>(val.real) || cast_to<bool, float>(val.imag);
}
