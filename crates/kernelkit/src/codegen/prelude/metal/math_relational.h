// ---- 6.4 Relational functions.
namespace kk {
template <class E> KK_FN bool isinf_(E x) {
  if constexpr (is_int<E>::value) {
    return false;
  } else {
    float f = float(x);
    return f == __builtin_bit_cast(float, 0x7f800000u) || f == __builtin_bit_cast(float, 0xff800000u);
  }
}
template <> KK_FN bool isinf_<double>(double x) { return x == __builtin_bit_cast(double, 0x7ff0000000000000ull) || x == -__builtin_bit_cast(double, 0x7ff0000000000000ull); }
struct op_isnan { template <class E> static KK_FN bool g(E x) { return isnan_(x); } };
struct op_isinf { template <class E> static KK_FN bool g(E x) { return isinf_(x); } };
struct op_isfinite { template <class E> static KK_FN bool g(E x) { return !isnan_(x) && !isinf_(x); } };
struct op_isnormal {
  template <class E> static KK_FN bool g(E x) {
    if constexpr (same<E, double>::value) {
      double a = x < 0 ? -x : x;
      return a >= 2.22507385850720138309023271733240406e-308 && !isinf_(x) && !isnan_(x);
    } else {
      E a = x < E(0) ? E(-x) : x;
      return a >= numeric_min_normal<E>() && !isinf_(x) && !isnan_(x);
    }
  }
  template <class E> static KK_FN E numeric_min_normal() { return metal::numeric_limits<E>::min(); }
};
struct op_signbit {
  template <class E> static KK_FN bool g(E x) {
    if constexpr (is_int<E>::value) {
      return x < E(0);
    } else if constexpr (same<E, double>::value) {
      return (metal::as_type<unsigned long long>(x) >> 63) != 0;
    } else {
      return (metal::as_type<unsigned int>(float(x)) >> 31) != 0;
    }
  }
};
struct op_isordered { template <class E> static KK_FN bool g(E a, E b) { return !isnan_(a) && !isnan_(b); } };
struct op_isunordered { template <class E> static KK_FN bool g(E a, E b) { return isnan_(a) || isnan_(b); } };
}  // namespace kk
KK_DECL_G1(isnan)
KK_DECL_G1(isinf)
KK_DECL_G1(isfinite)
KK_DECL_G1(isnormal)
KK_DECL_G1(signbit)
KK_DECL_G2(isordered)
KK_DECL_G2(isunordered)

namespace metal {
// all / any: of a bool vector (a scalar is its own answer).
template <class X, kk::enable_if_t<kk::mathy<X>::value, int> = 0> KK_FN bool all(const X& x) {
  if constexpr (kk::is_vec<X>::value) {
    for (int i = 0; i < kk::vec_info<X>::n; ++i)
      if (!x.get(i)) return false;
    return true;
  } else {
    return bool(x);
  }
}
template <class X, kk::enable_if_t<kk::mathy<X>::value, int> = 0> KK_FN bool any(const X& x) {
  if constexpr (kk::is_vec<X>::value) {
    for (int i = 0; i < kk::vec_info<X>::n; ++i)
      if (x.get(i)) return true;
    return false;
  } else {
    return bool(x);
  }
}
// select(a, b, c): b where c is true, else a (per component for a bool
// vector c; all of one side for a scalar c).
template <class A, class B, class C, kk::enable_if_t<kk::all_mathy<A, B, C>::value, int> = 0>
KK_FN auto select(const A& a, const B& b, const C& c) {
  typedef typename kk::common_elem<A, B>::type E;
  return kk::per<E, kk::vec_n<A, B, C>::value>(
      [&](int i) { return kk::at<bool>(c, i) ? kk::at<E>(b, i) : kk::at<E>(a, i); });
}
namespace fast { using ::metal::all; using ::metal::any; using ::metal::select; }
namespace precise { using ::metal::all; using ::metal::any; using ::metal::select; }
}  // namespace metal
