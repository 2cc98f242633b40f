// ---- Chapter 3: operators of the vector types (types.h). Vector-vector
// operators are plain friends; vector-scalar ones are templates over the
// scalar, so a scalar of a class type (half, bfloat) matches them exactly
// and never turns into a vector first (which would make the call
// ambiguous).
namespace kk {
template <class T> struct is_plain_vec : no {};
template <class T, int N> struct is_plain_vec<metal::vec<T, N>> : yes {};
}  // namespace kk

namespace metal {
#define KK_VEC_ARITH(OP)                                                                               \
  template <class T, int N> KK_FN vec<T, N> operator OP(const vec<T, N>& a, const vec<T, N>& b) {      \
    return kk::build<T, N>([&](int i) { return T(a.kk_e[i] OP b.kk_e[i]); });                          \
  }                                                                                                    \
  template <class T, int N, class S, kk::enable_if_t<kk::scalar<S>::value, int> = 0>                   \
  KK_FN vec<T, N> operator OP(const vec<T, N>& a, const S& s) {                                        \
    const T t = T(s);                                                                                  \
    return kk::build<T, N>([&](int i) { return T(a.kk_e[i] OP t); });                                  \
  }                                                                                                    \
  template <class T, int N, class S, kk::enable_if_t<kk::scalar<S>::value, int> = 0>                   \
  KK_FN vec<T, N> operator OP(const S& s, const vec<T, N>& a) {                                        \
    const T t = T(s);                                                                                  \
    return kk::build<T, N>([&](int i) { return T(t OP a.kk_e[i]); });                                  \
  }                                                                                                    \
  template <class T, int N> KK_FN vec<T, N> operator OP(const packed_vec<T, N>& a, const vec<T, N>& b) { \
    return vec<T, N>(a) OP b;                                                                          \
  }                                                                                                    \
  template <class T, int N> KK_FN vec<T, N> operator OP(const vec<T, N>& a, const packed_vec<T, N>& b) { \
    return a OP vec<T, N>(b);                                                                          \
  }                                                                                                    \
  template <class T, int N> KK_FN vec<T, N> operator OP(const packed_vec<T, N>& a, const packed_vec<T, N>& b) { \
    return vec<T, N>(a) OP vec<T, N>(b);                                                               \
  }                                                                                                    \
  template <class T, int N, class S, kk::enable_if_t<kk::scalar<S>::value, int> = 0>                   \
  KK_FN vec<T, N> operator OP(const packed_vec<T, N>& a, const S& s) {                                 \
    return vec<T, N>(a) OP s;                                                                          \
  }                                                                                                    \
  template <class T, int N, class S, kk::enable_if_t<kk::scalar<S>::value, int> = 0>                   \
  KK_FN vec<T, N> operator OP(const S& s, const packed_vec<T, N>& a) {                                 \
    return s OP vec<T, N>(a);                                                                          \
  }                                                                                                    \
  template <class T, int N, class A, kk::enable_if_t<kk::ncomp<A>::value == N || kk::scalar<A>::value, int> = 0> \
  KK_FN vec<T, N>& operator OP##=(vec<T, N>& a, const A& b) {                                          \
    return a = a OP b;                                                                                 \
  }                                                                                                    \
  template <class T, int N, class A, kk::enable_if_t<kk::ncomp<A>::value == N || kk::scalar<A>::value, int> = 0> \
  KK_FN packed_vec<T, N>& operator OP##=(packed_vec<T, N>& a, const A& b) {                            \
    return a = packed_vec<T, N>(vec<T, N>(a) OP b);                                                    \
  }
KK_VEC_ARITH(+)
KK_VEC_ARITH(-)
KK_VEC_ARITH(*)
KK_VEC_ARITH(/)
KK_VEC_ARITH(%)
KK_VEC_ARITH(&)
KK_VEC_ARITH(|)
KK_VEC_ARITH(^)
KK_VEC_ARITH(<<)
KK_VEC_ARITH(>>)
#undef KK_VEC_ARITH

// Comparisons and logical operators give bool vectors.
#define KK_VEC_CMP(OP)                                                                                 \
  template <class T, int N> KK_FN vec<bool, N> operator OP(const vec<T, N>& a, const vec<T, N>& b) {   \
    return kk::build<bool, N>([&](int i) { return bool(a.kk_e[i] OP b.kk_e[i]); });                    \
  }                                                                                                    \
  template <class T, int N, class S, kk::enable_if_t<kk::scalar<S>::value, int> = 0>                   \
  KK_FN vec<bool, N> operator OP(const vec<T, N>& a, const S& s) {                                     \
    const T t = T(s);                                                                                  \
    return kk::build<bool, N>([&](int i) { return bool(a.kk_e[i] OP t); });                            \
  }                                                                                                    \
  template <class T, int N, class S, kk::enable_if_t<kk::scalar<S>::value, int> = 0>                   \
  KK_FN vec<bool, N> operator OP(const S& s, const vec<T, N>& a) {                                     \
    const T t = T(s);                                                                                  \
    return kk::build<bool, N>([&](int i) { return bool(t OP a.kk_e[i]); });                            \
  }                                                                                                    \
  template <class T, int N> KK_FN vec<bool, N> operator OP(const packed_vec<T, N>& a, const packed_vec<T, N>& b) { \
    return vec<T, N>(a) OP vec<T, N>(b);                                                               \
  }
KK_VEC_CMP(==)
KK_VEC_CMP(!=)
KK_VEC_CMP(<)
KK_VEC_CMP(>)
KK_VEC_CMP(<=)
KK_VEC_CMP(>=)
KK_VEC_CMP(&&)
KK_VEC_CMP(||)
#undef KK_VEC_CMP

template <class T, int N> KK_FN vec<T, N> operator+(const vec<T, N>& a) { return a; }
template <class T, int N> KK_FN vec<T, N> operator-(const vec<T, N>& a) {
  return kk::build<T, N>([&](int i) { return T(-a.kk_e[i]); });
}
template <class T, int N> KK_FN vec<T, N> operator~(const vec<T, N>& a) {
  return kk::build<T, N>([&](int i) { return T(~a.kk_e[i]); });
}
template <class T, int N> KK_FN vec<bool, N> operator!(const vec<T, N>& a) {
  return kk::build<bool, N>([&](int i) { return !a.kk_e[i]; });
}
template <class T, int N> KK_FN vec<T, N> operator-(const packed_vec<T, N>& a) { return -vec<T, N>(a); }

}  // namespace metal
