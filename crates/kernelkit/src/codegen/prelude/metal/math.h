// ---- 6.2 - 6.5, 6.8 Common, integer, relational, math and geometric
// functions. Each Metal function is a template constrained to scalars and
// vectors, so it never collides with the C library's or CUDA's own
// `exp(float)` (an unqualified call with an exact match picks those, which
// compute the same thing); `metal::NAME`, `metal::fast::NAME` and
// `metal::precise::NAME` always reach these. Per element a function runs
// its core: float natively (fast:: uses CUDA's fast intrinsics), double
// natively, half/bfloat through float, integers (for float functions)
// converted to float as Metal converts them.
#ifdef KK_CPU
#define KK_P(C, G) C
#else
#define KK_P(C, G) G
#endif

namespace kk {
#ifdef KK_CPU
// sin(pi x) and cos(pi x), exact at multiples of 1/2 (as Metal's are).
inline double pi_reduced(float x) { return (double)x - 2.0 * std::nearbyint((double)x / 2.0); }
inline float kk_sinpi(float x) {
  double r = pi_reduced(x);
  if (r == 0.0 || r == 1.0 || r == -1.0) return std::copysign(0.0f, x);
  if (r == 0.5) return 1.0f;
  if (r == -0.5) return -1.0f;
  return (float)std::sin(3.14159265358979323846 * r);
}
inline float kk_cospi(float x) {
  double r = pi_reduced(x);
  if (r == 0.5 || r == -0.5) return 0.0f;
  if (r == 1.0 || r == -1.0) return -1.0f;
  return (float)std::cos(3.14159265358979323846 * r);
}
#endif
KK_FN float kk_fmin(float a, float b) { return KK_P(std::fmin(a, b), ::fminf(a, b)); }
// The value a scalar argument stands for (CUDA's 0-d input wrapper reads
// as its element).
template <class T> struct value_of { typedef T type; };
template <class T> using value_t = typename value_of<plain_t<T>>::type;
template <class T> struct mathy : constant<bool, scalar<plain_t<T>>::value || is_vec<plain_t<T>>::value> {};
template <class X> KK_FN value_t<X> val(const X& x) { return x; }
template <class T> struct is_int : constant<bool, builtin<T>::value && !builtin_float<T>::value> {};

// The element type of X (X itself for a scalar).
template <class X, bool V = is_vec<X>::value> struct elem_of { typedef value_t<X> type; };
template <class X> struct elem_of<X, true> { typedef typename vec_info<X>::elem type; };
template <class X> using elem_t = typename elem_of<plain_t<X>>::type;

// Metal's type for two scalars meeting in one function: the same type, or
// the usual arithmetic conversions, with half/bfloat ranking above the
// integers and below float.
template <class A, class B, int K = (small<A>::value ? 1 : 0) + (small<B>::value ? 2 : 0)> struct common_scalar {
  typedef decltype(declval<A>() + declval<B>()) type;
};
template <class A> struct common_scalar<A, A, 0> { typedef A type; };
template <class A> struct common_scalar<A, A, 3> { typedef A type; };
template <class A, class B> struct common_scalar<A, B, 1> { typedef typename conditional<builtin_float<B>::value, B, A>::type type; };
template <class A, class B> struct common_scalar<A, B, 2> { typedef typename conditional<builtin_float<A>::value, A, B>::type type; };
template <class A, class B> struct common_scalar<A, B, 3> { typedef float type; };
// The shape of a call: a vector if any argument is one.
template <class... X> struct vec_n : constant<int, 0> {};
template <class X, class... R> struct vec_n<X, R...> : constant<int, (vec_info<plain_t<X>>::n > 0 ? vec_info<plain_t<X>>::n : vec_n<R...>::value)> {};
template <class... X> struct common_elem;
template <class X> struct common_elem<X> { typedef elem_t<X> type; };
template <class X, class Y, class... R> struct common_elem<X, Y, R...> {
  // A vector's element type wins over the scalars beside it.
  typedef typename conditional<is_vec<plain_t<X>>::value, elem_t<X>,
                               typename conditional<is_vec<plain_t<Y>>::value, elem_t<Y>,
                                                    typename common_scalar<elem_t<X>, elem_t<Y>>::type>::type>::type XY;
  typedef typename common_elem<XY, R...>::type type;
};
// Component i of an argument, as E (a scalar argument is every component).
template <class E, class X> KK_FN E at(const X& x, int i) {
  if constexpr (is_vec<plain_t<X>>::value) {
    return E(x.get(i));
  } else {
    (void)i;
    return E(val(x));
  }
}
// Applies `f` per component: a scalar result for scalar arguments, a
// vector of the results otherwise.
template <class E, int N, class F> KK_FN auto per(F f) {
  if constexpr (N == 0) {
    return f(0);
  } else {
    typedef decltype(f(0)) R;
    metal::vec<R, N> r;
    for (int i = 0; i < N; ++i) r.kk_e[i] = f(i);
    return r;
  }
}

// A float function's core, per element type: `Op::f32<Mode>` for float
// (Mode 0: metal::, 1: fast::, 2: precise::), `Op::f64` for double; half
// and bfloat through float; integers as float.
template <class Op, int M, class E> KK_FN auto fcore1(E x) {
  if constexpr (same<E, double>::value) {
    return Op::f64(x);
  } else if constexpr (small<E>::value) {
    return E(Op::template f32<M>(float(x)));
  } else {
    return Op::template f32<M>(float(x));
  }
}
template <class Op, int M, class E> KK_FN auto fcore2(E x, E y) {
  if constexpr (same<E, double>::value) {
    return Op::f64(x, y);
  } else if constexpr (small<E>::value) {
    return E(Op::template f32<M>(float(x), float(y)));
  } else {
    return Op::template f32<M>(float(x), float(y));
  }
}
template <class Op, int M, class E> KK_FN auto fcore3(E x, E y, E z) {
  if constexpr (same<E, double>::value) {
    return Op::f64(x, y, z);
  } else if constexpr (small<E>::value) {
    return E(Op::template f32<M>(float(x), float(y), float(z)));
  } else {
    return Op::template f32<M>(float(x), float(y), float(z));
  }
}
template <class Op, int M, class X> KK_FN auto fmap1(const X& x) {
  typedef elem_t<X> E;
  return per<E, vec_n<X>::value>([&](int i) { return fcore1<Op, M>(at<E>(x, i)); });
}
template <class Op, int M, class X, class Y> KK_FN auto fmap2(const X& x, const Y& y) {
  typedef typename common_elem<X, Y>::type E;
  return per<E, vec_n<X, Y>::value>([&](int i) { return fcore2<Op, M>(at<E>(x, i), at<E>(y, i)); });
}
template <class Op, int M, class X, class Y, class Z> KK_FN auto fmap3(const X& x, const Y& y, const Z& z) {
  typedef typename common_elem<X, Y, Z>::type E;
  return per<E, vec_n<X, Y, Z>::value>(
      [&](int i) { return fcore3<Op, M>(at<E>(x, i), at<E>(y, i), at<E>(z, i)); });
}
// Generic (any element type) per-component application.
template <class Op, class X> KK_FN auto gmap1(const X& x) {
  typedef elem_t<X> E;
  return per<E, vec_n<X>::value>([&](int i) { return Op::template g<E>(at<E>(x, i)); });
}
template <class Op, class X, class Y> KK_FN auto gmap2(const X& x, const Y& y) {
  typedef typename common_elem<X, Y>::type E;
  return per<E, vec_n<X, Y>::value>([&](int i) { return Op::template g<E>(at<E>(x, i), at<E>(y, i)); });
}
template <class Op, class X, class Y, class Z> KK_FN auto gmap3(const X& x, const Y& y, const Z& z) {
  typedef typename common_elem<X, Y, Z>::type E;
  return per<E, vec_n<X, Y, Z>::value>(
      [&](int i) { return Op::template g<E>(at<E>(x, i), at<E>(y, i), at<E>(z, i)); });
}
template <class... X> struct all_mathy : constant<bool, (mathy<X>::value && ...)> {};
}  // namespace kk

// Declares NAME in metal, metal::fast and metal::precise.
#define KK_DECL_F1(NAME)                                                                               \
  namespace metal {                                                                                    \
  template <class X, kk::enable_if_t<kk::mathy<X>::value, int> = 0> KK_FN auto NAME(const X& x) {      \
    return kk::fmap1<kk::op_##NAME, 0>(x);                                                             \
  }                                                                                                    \
  namespace fast {                                                                                     \
  template <class X, kk::enable_if_t<kk::mathy<X>::value, int> = 0> KK_FN auto NAME(const X& x) {      \
    return kk::fmap1<kk::op_##NAME, 1>(x);                                                             \
  }                                                                                                    \
  }                                                                                                    \
  namespace precise {                                                                                  \
  template <class X, kk::enable_if_t<kk::mathy<X>::value, int> = 0> KK_FN auto NAME(const X& x) {      \
    return kk::fmap1<kk::op_##NAME, 2>(x);                                                             \
  }                                                                                                    \
  }                                                                                                    \
  }
#define KK_DECL_F2(NAME)                                                                               \
  namespace metal {                                                                                    \
  template <class X, class Y, kk::enable_if_t<kk::all_mathy<X, Y>::value, int> = 0>                    \
  KK_FN auto NAME(const X& x, const Y& y) { return kk::fmap2<kk::op_##NAME, 0>(x, y); }                \
  namespace fast {                                                                                     \
  template <class X, class Y, kk::enable_if_t<kk::all_mathy<X, Y>::value, int> = 0>                    \
  KK_FN auto NAME(const X& x, const Y& y) { return kk::fmap2<kk::op_##NAME, 1>(x, y); }                \
  }                                                                                                    \
  namespace precise {                                                                                  \
  template <class X, class Y, kk::enable_if_t<kk::all_mathy<X, Y>::value, int> = 0>                    \
  KK_FN auto NAME(const X& x, const Y& y) { return kk::fmap2<kk::op_##NAME, 2>(x, y); }                \
  }                                                                                                    \
  }
#define KK_DECL_F3(NAME)                                                                               \
  namespace metal {                                                                                    \
  template <class X, class Y, class Z, kk::enable_if_t<kk::all_mathy<X, Y, Z>::value, int> = 0>        \
  KK_FN auto NAME(const X& x, const Y& y, const Z& z) { return kk::fmap3<kk::op_##NAME, 0>(x, y, z); } \
  namespace fast {                                                                                     \
  template <class X, class Y, class Z, kk::enable_if_t<kk::all_mathy<X, Y, Z>::value, int> = 0>        \
  KK_FN auto NAME(const X& x, const Y& y, const Z& z) { return kk::fmap3<kk::op_##NAME, 1>(x, y, z); } \
  }                                                                                                    \
  namespace precise {                                                                                  \
  template <class X, class Y, class Z, kk::enable_if_t<kk::all_mathy<X, Y, Z>::value, int> = 0>        \
  KK_FN auto NAME(const X& x, const Y& y, const Z& z) { return kk::fmap3<kk::op_##NAME, 2>(x, y, z); } \
  }                                                                                                    \
  }
#define KK_DECL_G1(NAME)                                                                               \
  namespace metal {                                                                                    \
  template <class X, kk::enable_if_t<kk::mathy<X>::value, int> = 0> KK_FN auto NAME(const X& x) {      \
    return kk::gmap1<kk::op_##NAME>(x);                                                                \
  }                                                                                                    \
  namespace fast { using ::metal::NAME; }                                                              \
  namespace precise { using ::metal::NAME; }                                                           \
  }
#define KK_DECL_G2(NAME)                                                                               \
  namespace metal {                                                                                    \
  template <class X, class Y, kk::enable_if_t<kk::all_mathy<X, Y>::value, int> = 0>                    \
  KK_FN auto NAME(const X& x, const Y& y) { return kk::gmap2<kk::op_##NAME>(x, y); }                   \
  namespace fast { using ::metal::NAME; }                                                              \
  namespace precise { using ::metal::NAME; }                                                           \
  }
#define KK_DECL_G3(NAME)                                                                               \
  namespace metal {                                                                                    \
  template <class X, class Y, class Z, kk::enable_if_t<kk::all_mathy<X, Y, Z>::value, int> = 0>        \
  KK_FN auto NAME(const X& x, const Y& y, const Z& z) { return kk::gmap3<kk::op_##NAME>(x, y, z); }    \
  namespace fast { using ::metal::NAME; }                                                              \
  namespace precise { using ::metal::NAME; }                                                           \
  }

// A unary float function: the C library's / CUDA's function of that name
// (float: NAMEf on CUDA, fast: the CUDA intrinsic given).
#define KK_F1_STD(NAME, CUDA_FAST)                                                                     \
  namespace kk {                                                                                       \
  struct op_##NAME {                                                                                   \
    template <int M> static KK_FN float f32(float x) {                                                 \
      if constexpr (M == 1) {                                                                          \
        return KK_P(std::NAME(x), CUDA_FAST(x));                                                       \
      } else {                                                                                         \
        return KK_P(std::NAME(x), ::NAME##f(x));                                                       \
      }                                                                                                \
    }                                                                                                  \
    static KK_FN double f64(double x) { return KK_P(std::NAME(x), ::NAME(x)); }                        \
  };                                                                                                   \
  }                                                                                                    \
  KK_DECL_F1(NAME)
KK_F1_STD(acos, ::acosf)
KK_F1_STD(acosh, ::acoshf)
KK_F1_STD(asin, ::asinf)
KK_F1_STD(asinh, ::asinhf)
KK_F1_STD(atan, ::atanf)
KK_F1_STD(atanh, ::atanhf)
KK_F1_STD(cbrt, ::cbrtf)
KK_F1_STD(ceil, ::ceilf)
KK_F1_STD(cos, ::__cosf)
KK_F1_STD(cosh, ::coshf)
KK_F1_STD(erf, ::erff)
KK_F1_STD(erfc, ::erfcf)
KK_F1_STD(exp, ::__expf)
KK_F1_STD(exp2, ::exp2f)
KK_F1_STD(expm1, ::expm1f)
KK_F1_STD(fabs, ::fabsf)
KK_F1_STD(floor, ::floorf)
KK_F1_STD(lgamma, ::lgammaf)
KK_F1_STD(log, ::__logf)
KK_F1_STD(log10, ::__log10f)
KK_F1_STD(log1p, ::log1pf)
KK_F1_STD(log2, ::__log2f)
KK_F1_STD(rint, ::rintf)
KK_F1_STD(round, ::roundf)
KK_F1_STD(sin, ::__sinf)
KK_F1_STD(sinh, ::sinhf)
KK_F1_STD(sqrt, ::sqrtf)
KK_F1_STD(tan, ::__tanf)
KK_F1_STD(tanh, ::tanhf)
KK_F1_STD(tgamma, ::tgammaf)
KK_F1_STD(trunc, ::truncf)
#undef KK_F1_STD

// A unary float function from expressions of x.
#define KK_F1_EXPR(NAME, F32, F32FAST, F64)                                                            \
  namespace kk {                                                                                       \
  struct op_##NAME {                                                                                   \
    template <int M> static KK_FN float f32(float x) {                                                 \
      if constexpr (M == 1) {                                                                          \
        return F32FAST;                                                                                \
      } else {                                                                                         \
        return F32;                                                                                    \
      }                                                                                                \
    }                                                                                                  \
    static KK_FN double f64(double x) { return F64; }                                                  \
  };                                                                                                   \
  }                                                                                                    \
  KK_DECL_F1(NAME)
KK_F1_EXPR(rsqrt, KK_P(1.0f / std::sqrt(x), ::rsqrtf(x)), KK_P(1.0f / std::sqrt(x), ::rsqrtf(x)),
           KK_P(1.0 / std::sqrt(x), ::rsqrt(x)))
KK_F1_EXPR(exp10, KK_P(std::pow(10.0f, x), ::exp10f(x)), KK_P(std::pow(10.0f, x), ::__exp10f(x)),
           KK_P(std::pow(10.0, x), ::exp10(x)))
KK_F1_EXPR(cospi, KK_P(kk_cospi(x), ::cospif(x)), KK_P(kk_cospi(x), ::cospif(x)),
           KK_P(std::cos(3.14159265358979323846 * x), ::cospi(x)))
KK_F1_EXPR(sinpi, KK_P(kk_sinpi(x), ::sinpif(x)), KK_P(kk_sinpi(x), ::sinpif(x)),
           KK_P(std::sin(3.14159265358979323846 * x), ::sinpi(x)))
KK_F1_EXPR(tanpi, KK_P(kk_sinpi(x) / kk_cospi(x), ::sinpif(x) / ::cospif(x)),
           KK_P(kk_sinpi(x) / kk_cospi(x), ::sinpif(x) / ::cospif(x)),
           KK_P(std::tan(3.14159265358979323846 * x), ::sinpi(x) / ::cospi(x)))
// Metal's fract: x - floor(x), kept below 1.
KK_F1_EXPR(fract, kk_fmin(x - KK_P(std::floor(x), ::floorf(x)), 0x1.fffffep-1f),
           kk_fmin(x - KK_P(std::floor(x), ::floorf(x)), 0x1.fffffep-1f),
           x - KK_P(std::floor(x), ::floor(x)))
#undef KK_F1_EXPR

namespace kk {
// A binary float function from expressions of x and y.
#define KK_F2_EXPR(NAME, F32, F32FAST, F64)                                                            \
  struct op_##NAME {                                                                                   \
    template <int M> static KK_FN float f32(float x, float y) {                                        \
      if constexpr (M == 1) {                                                                          \
        return F32FAST;                                                                                \
      } else {                                                                                         \
        return F32;                                                                                    \
      }                                                                                                \
    }                                                                                                  \
    static KK_FN double f64(double x, double y) { return F64; }                                        \
  };
KK_F2_EXPR(atan2, KK_P(std::atan2(x, y), ::atan2f(x, y)), KK_P(std::atan2(x, y), ::atan2f(x, y)),
           KK_P(std::atan2(x, y), ::atan2(x, y)))
KK_F2_EXPR(copysign, KK_P(std::copysign(x, y), ::copysignf(x, y)), KK_P(std::copysign(x, y), ::copysignf(x, y)),
           KK_P(std::copysign(x, y), ::copysign(x, y)))
KK_F2_EXPR(fdim, KK_P(std::fdim(x, y), ::fdimf(x, y)), KK_P(std::fdim(x, y), ::fdimf(x, y)),
           KK_P(std::fdim(x, y), ::fdim(x, y)))
KK_F2_EXPR(fmax, KK_P(std::fmax(x, y), ::fmaxf(x, y)), KK_P(std::fmax(x, y), ::fmaxf(x, y)),
           KK_P(std::fmax(x, y), ::fmax(x, y)))
KK_F2_EXPR(fmin, KK_P(std::fmin(x, y), ::fminf(x, y)), KK_P(std::fmin(x, y), ::fminf(x, y)),
           KK_P(std::fmin(x, y), ::fmin(x, y)))
KK_F2_EXPR(fmod, KK_P(std::fmod(x, y), ::fmodf(x, y)), KK_P(std::fmod(x, y), ::fmodf(x, y)),
           KK_P(std::fmod(x, y), ::fmod(x, y)))
KK_F2_EXPR(hypot, KK_P(std::hypot(x, y), ::hypotf(x, y)), KK_P(std::hypot(x, y), ::hypotf(x, y)),
           KK_P(std::hypot(x, y), ::hypot(x, y)))
KK_F2_EXPR(nextafter, KK_P(std::nextafter(x, y), ::nextafterf(x, y)), KK_P(std::nextafter(x, y), ::nextafterf(x, y)),
           KK_P(std::nextafter(x, y), ::nextafter(x, y)))
KK_F2_EXPR(pow, KK_P(std::pow(x, y), ::powf(x, y)), KK_P(std::pow(x, y), ::__powf(x, y)),
           KK_P(std::pow(x, y), ::pow(x, y)))
// powr: x^y for x >= 0 (NaN below, as Metal defines it).
KK_F2_EXPR(powr, x < 0.0f ? __builtin_bit_cast(float, 0x7fc00000u) : KK_P(std::pow(x, y), ::powf(x, y)),
           x < 0.0f ? __builtin_bit_cast(float, 0x7fc00000u) : KK_P(std::pow(x, y), ::__powf(x, y)),
           x < 0.0 ? __builtin_bit_cast(double, 0x7ff8000000000000ull) : KK_P(std::pow(x, y), ::pow(x, y)))
KK_F2_EXPR(divide, x / y, KK_P(x / y, ::__fdividef(x, y)), x / y)
#undef KK_F2_EXPR
struct op_fma {
  template <int M> static KK_FN float f32(float x, float y, float z) { return KK_P(std::fma(x, y, z), ::fmaf(x, y, z)); }
  static KK_FN double f64(double x, double y, double z) { return KK_P(std::fma(x, y, z), ::fma(x, y, z)); }
};
}  // namespace kk
KK_DECL_F2(atan2)
KK_DECL_F2(copysign)
KK_DECL_F2(fdim)
KK_DECL_F2(fmax)
KK_DECL_F2(fmin)
KK_DECL_F2(fmod)
KK_DECL_F2(hypot)
KK_DECL_F2(nextafter)
KK_DECL_F2(pow)
KK_DECL_F2(powr)
KK_DECL_F2(divide)
KK_DECL_F3(fma)

namespace kk {
// ---- Generic functions: any element type, integers included.
template <class E> KK_FN bool isnan_(E x) {
  if constexpr (is_int<E>::value) {
    return false;
  } else {
    return x != x;
  }
}
struct op_abs {
  template <class E> static KK_FN E g(E x) {
    if constexpr (is_int<E>::value && E(-1) > E(0)) {
      return x;
    } else if constexpr (builtin_float<E>::value) {
      return KK_P(std::fabs(x), ::fabs(x));
    } else {
      return x < E(0) ? E(-x) : x;
    }
  }
};
// min/max: for floats fmin/fmax (a NaN loses to a number), as in Metal.
struct op_min {
  template <class E> static KK_FN E g(E a, E b) {
    if constexpr (is_int<E>::value) {
      return b < a ? b : a;
    } else {
      return isnan_(a) ? b : isnan_(b) ? a : (b < a ? b : a);
    }
  }
};
struct op_max {
  template <class E> static KK_FN E g(E a, E b) {
    if constexpr (is_int<E>::value) {
      return a < b ? b : a;
    } else {
      return isnan_(a) ? b : isnan_(b) ? a : (a < b ? b : a);
    }
  }
};
struct op_clamp {
  template <class E> static KK_FN E g(E x, E lo, E hi) { return op_min::g<E>(op_max::g<E>(x, lo), hi); }
};
struct op_min3 {
  template <class E> static KK_FN E g(E a, E b, E c) { return op_min::g<E>(op_min::g<E>(a, b), c); }
};
struct op_max3 {
  template <class E> static KK_FN E g(E a, E b, E c) { return op_max::g<E>(op_max::g<E>(a, b), c); }
};
struct op_median3 {
  template <class E> static KK_FN E g(E a, E b, E c) {
    return op_max::g<E>(op_min::g<E>(a, b), op_min::g<E>(op_max::g<E>(a, b), c));
  }
};
struct op_mix {
  template <class E> static KK_FN E g(E x, E y, E a) { return E(x + (y - x) * a); }
};
struct op_saturate {
  template <class E> static KK_FN E g(E x) { return op_min::g<E>(op_max::g<E>(x, E(0)), E(1)); }
};
struct op_sign {
  template <class E> static KK_FN E g(E x) {
    if (isnan_(x)) return E(0);
    return x > E(0) ? E(1) : x < E(0) ? E(-1) : x;
  }
};
struct op_step {
  template <class E> static KK_FN E g(E edge, E x) { return x < edge ? E(0) : E(1); }
};
struct op_smoothstep {
  template <class E> static KK_FN E g(E e0, E e1, E x) {
    float t = op_clamp::g<float>((float(x) - float(e0)) / (float(e1) - float(e0)), 0.0f, 1.0f);
    return E(t * t * (3.0f - 2.0f * t));
  }
};
}  // namespace kk
KK_DECL_G1(abs)
KK_DECL_G2(min)
KK_DECL_G2(max)
KK_DECL_G3(clamp)
KK_DECL_G3(min3)
KK_DECL_G3(max3)
KK_DECL_G3(median3)
KK_DECL_G3(mix)
KK_DECL_G1(saturate)
KK_DECL_G1(sign)
KK_DECL_G2(step)
KK_DECL_G3(smoothstep)
namespace metal {
template <class X, class Y, class Z> KK_FN auto fmin3(const X& x, const Y& y, const Z& z) { return min3(x, y, z); }
template <class X, class Y, class Z> KK_FN auto fmax3(const X& x, const Y& y, const Z& z) { return max3(x, y, z); }
template <class X, class Y, class Z> KK_FN auto fmedian3(const X& x, const Y& y, const Z& z) { return median3(x, y, z); }
namespace fast { using ::metal::fmin3; using ::metal::fmax3; using ::metal::fmedian3; }
namespace precise { using ::metal::fmin3; using ::metal::fmax3; using ::metal::fmedian3; }
}  // namespace metal

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

// ---- 6.5 Math functions with results through references.
template <class X, kk::enable_if_t<kk::mathy<X>::value, int> = 0> KK_FN X sincos(const X& x, X& c) {
  c = metal::cos(x);
  return metal::sin(x);
}
template <class T, kk::enable_if_t<kk::scalar<T>::value, int> = 0> KK_FN T frexp(T x, int& e) {
  return T(KK_P(std::frexp(float(x), &e), ::frexpf(float(x), &e)));
}
template <class T, kk::enable_if_t<kk::scalar<T>::value, int> = 0> KK_FN T ldexp(T x, int e) {
  return T(KK_P(std::ldexp(float(x), e), ::ldexpf(float(x), e)));
}
template <class T, kk::enable_if_t<kk::scalar<T>::value, int> = 0> KK_FN T modf(T x, T& ip) {
  float i;
  float f = KK_P(std::modf(float(x), &i), ::modff(float(x), &i));
  ip = T(i);
  return T(f);
}
template <class T, kk::enable_if_t<kk::scalar<T>::value, int> = 0> KK_FN int ilogb(T x) {
  return KK_P(std::ilogb(float(x)), ::ilogbf(float(x)));
}
KK_FN double frexp(double x, int& e) { return KK_P(std::frexp(x, &e), ::frexp(x, &e)); }
KK_FN double modf(double x, double& ip) { return KK_P(std::modf(x, &ip), ::modf(x, &ip)); }
namespace fast { using ::metal::sincos; using ::metal::frexp; using ::metal::ldexp; using ::metal::modf; using ::metal::ilogb; }
namespace precise { using ::metal::sincos; using ::metal::frexp; using ::metal::ldexp; using ::metal::modf; using ::metal::ilogb; }
}  // namespace metal

// ---- 6.3 Integer functions.
namespace kk {
template <class E> KK_FN int width() { return int(sizeof(E) * 8); }
template <class E> KK_FN unsigned long long ubits(E x) {
  return (unsigned long long)(typename metal::make_unsigned<E>::type)(x);
}
template <class E> KK_FN int popc64(unsigned long long u) {
  return KK_P(__builtin_popcountll(u), __popcll(u));
}
struct op_popcount { template <class E> static KK_FN E g(E x) { return E(popc64<E>(ubits(x))); } };
struct op_clz {
  template <class E> static KK_FN E g(E x) {
    unsigned long long u = ubits(x);
    if (u == 0) return E(width<E>());
    int lz = KK_P(__builtin_clzll(u), __clzll((long long)u));
    return E(lz - (64 - width<E>()));
  }
};
struct op_ctz {
  template <class E> static KK_FN E g(E x) {
    unsigned long long u = ubits(x);
    if (u == 0) return E(width<E>());
    return E(KK_P(__builtin_ctzll(u), __ffsll((long long)u) - 1));
  }
};
struct op_reverse_bits {
  template <class E> static KK_FN E g(E x) {
    unsigned long long u = ubits(x), r = 0;
    for (int i = 0; i < width<E>(); ++i) r |= ((u >> i) & 1ull) << (width<E>() - 1 - i);
    return E(r);
  }
};
// Wider arithmetic for saturation and high halves.
template <class E> KK_FN long long sx(E x) { return (long long)x; }
struct op_absdiff {
  template <class E> static KK_FN E g(E a, E b) { return a > b ? E(a - b) : E(b - a); }
};
struct op_hadd {
  template <class E> static KK_FN E g(E a, E b) { return E((a >> 1) + (b >> 1) + (a & b & E(1))); }
};
struct op_rhadd {
  template <class E> static KK_FN E g(E a, E b) { return E((a >> 1) + (b >> 1) + ((a | b) & E(1))); }
};
template <class E> KK_FN E sat(long long v) {
  const long long lo = (long long)metal::numeric_limits<E>::min(), hi = (long long)metal::numeric_limits<E>::max();
  return E(v < lo ? lo : v > hi ? hi : v);
}
struct op_addsat {
  template <class E> static KK_FN E g(E a, E b) {
    if constexpr (sizeof(E) < 8) {
      return sat<E>(sx(a) + sx(b));
    } else if constexpr (E(-1) > E(0)) {
      E r = E(a + b);
      return r < a ? metal::numeric_limits<E>::max() : r;
    } else {
      E r = E((unsigned long long)a + (unsigned long long)b);
      if (b > 0 && r < a) return metal::numeric_limits<E>::max();
      if (b < 0 && r > a) return metal::numeric_limits<E>::min();
      return r;
    }
  }
};
struct op_subsat {
  template <class E> static KK_FN E g(E a, E b) {
    if constexpr (sizeof(E) < 8) {
      return sat<E>(sx(a) - sx(b));
    } else if constexpr (E(-1) > E(0)) {
      return b > a ? E(0) : E(a - b);
    } else {
      E r = E((unsigned long long)a - (unsigned long long)b);
      if (b < 0 && r < a) return metal::numeric_limits<E>::max();
      if (b > 0 && r > a) return metal::numeric_limits<E>::min();
      return r;
    }
  }
};
struct op_mulhi {
  template <class E> static KK_FN E g(E a, E b) {
    if constexpr (sizeof(E) < 8 && E(-1) > E(0)) {
      return E(((unsigned long long)a * b) >> width<E>());
    } else if constexpr (sizeof(E) < 8) {
      return E((sx(a) * sx(b)) >> width<E>());
    } else if constexpr (E(-1) > E(0)) {
      return E(KK_P((unsigned long long)(((unsigned __int128)a * b) >> 64), __umul64hi(a, b)));
    } else {
      return E(KK_P((long long)(((__int128)a * b) >> 64), __mul64hi(a, b)));
    }
  }
};
struct op_mul24 { template <class E> static KK_FN E g(E a, E b) { return E(a * b); } };
struct op_mad24 { template <class E> static KK_FN E g(E a, E b, E c) { return E(a * b + c); } };
struct op_madhi { template <class E> static KK_FN E g(E a, E b, E c) { return E(op_mulhi::g<E>(a, b) + c); } };
struct op_madsat {
  // a * b + c, saturated once (the product may overflow before c brings
  // it back): exact in wider arithmetic; 64-bit types as a 128-bit pair
  // (high half from mulhi).
  template <class E> static KK_FN E g(E a, E b, E c) {
    if constexpr (sizeof(E) < 8 && E(-1) > E(0)) {
      const unsigned long long v = (unsigned long long)a * b + c;
      return v > (unsigned long long)metal::numeric_limits<E>::max() ? metal::numeric_limits<E>::max() : E(v);
    } else if constexpr (sizeof(E) < 8) {
      return sat<E>(sx(a) * sx(b) + sx(c));
    } else {
      typedef unsigned long long u64;
      const u64 lo = (u64)a * (u64)b;
      const u64 lo2 = lo + (u64)c;
      const u64 carry = lo2 < lo ? 1u : 0u;
      if constexpr (E(-1) > E(0)) {
        const u64 hi = (u64)op_mulhi::g<E>(a, b) + carry;
        return hi != 0 ? metal::numeric_limits<E>::max() : E(lo2);
      } else {
        const long long hi = (long long)op_mulhi::g<E>(a, b) + (c < 0 ? -1 : 0) + (long long)carry;
        const long long sign = (long long)lo2 < 0 ? -1 : 0;
        if (hi == sign) return E(lo2);
        return hi < 0 ? metal::numeric_limits<E>::min() : metal::numeric_limits<E>::max();
      }
    }
  }
};
struct op_rotate {
  template <class E> static KK_FN E g(E v, E i) {
    const int w = width<E>();
    unsigned long long u = ubits(v), m = w == 64 ? ~0ull : ((1ull << w) - 1);
    int s = int(ubits(i) % (unsigned long long)w);
    return E(s == 0 ? u : ((u << s) | (u >> (w - s))) & m);
  }
};
}  // namespace kk
KK_DECL_G1(popcount)
KK_DECL_G1(clz)
KK_DECL_G1(ctz)
KK_DECL_G1(reverse_bits)
KK_DECL_G2(absdiff)
KK_DECL_G2(hadd)
KK_DECL_G2(rhadd)
KK_DECL_G2(addsat)
KK_DECL_G2(subsat)
KK_DECL_G2(mulhi)
KK_DECL_G2(mul24)
KK_DECL_G3(mad24)
KK_DECL_G3(madhi)
KK_DECL_G3(madsat)
KK_DECL_G2(rotate)
namespace metal {
// extract_bits / insert_bits: `bits` bits from `offset` (signed types
// sign-extend the extracted field).
template <class X, kk::enable_if_t<kk::mathy<X>::value, int> = 0>
KK_FN X extract_bits(const X& x, uint offset, uint bits) {
  typedef kk::elem_t<X> E;
  return X(kk::per<E, kk::vec_n<X>::value>([&](int i) {
    E v = kk::at<E>(x, i);
    if (bits == 0) return E(0);
    const int w = kk::width<E>();
    unsigned long long u = kk::ubits(v) >> offset;
    unsigned long long m = bits >= 64 ? ~0ull : ((1ull << bits) - 1);
    u &= m;
    if (E(-1) < E(0) && bits < (uint)w && ((u >> (bits - 1)) & 1ull)) u |= ~m;
    return E(u);
  }));
}
template <class X, kk::enable_if_t<kk::mathy<X>::value, int> = 0>
KK_FN X insert_bits(const X& base, const X& insert, uint offset, uint bits) {
  typedef kk::elem_t<X> E;
  return X(kk::per<E, kk::vec_n<X>::value>([&](int i) {
    unsigned long long m = (bits >= 64 ? ~0ull : ((1ull << bits) - 1)) << offset;
    unsigned long long b = kk::ubits(kk::at<E>(base, i)), n = kk::ubits(kk::at<E>(insert, i)) << offset;
    return E((b & ~m) | (n & m));
  }));
}
namespace fast { using ::metal::extract_bits; using ::metal::insert_bits; }
namespace precise { using ::metal::extract_bits; using ::metal::insert_bits; }

// ---- 6.8 Geometric functions.
template <class T, int N> KK_FN T dot(const vec<T, N>& a, const vec<T, N>& b) {
  T r = T(a.kk_e[0] * b.kk_e[0]);
  for (int i = 1; i < N; ++i) r = T(r + a.kk_e[i] * b.kk_e[i]);
  return r;
}
template <class T, int N> KK_FN T length_squared(const vec<T, N>& a) { return dot(a, a); }
template <class T, int N> KK_FN T length(const vec<T, N>& a) { return T(metal::sqrt(dot(a, a))); }
template <class T, int N> KK_FN T distance(const vec<T, N>& a, const vec<T, N>& b) { return length(a - b); }
template <class T, int N> KK_FN T distance_squared(const vec<T, N>& a, const vec<T, N>& b) { return length_squared(a - b); }
template <class T, int N> KK_FN vec<T, N> normalize(const vec<T, N>& a) { return a * metal::rsqrt(dot(a, a)); }
template <class T> KK_FN vec<T, 3> cross(const vec<T, 3>& a, const vec<T, 3>& b) {
  return vec<T, 3>(T(a.y * b.z - a.z * b.y), T(a.z * b.x - a.x * b.z), T(a.x * b.y - a.y * b.x));
}
template <class T, int N> KK_FN vec<T, N> faceforward(const vec<T, N>& n, const vec<T, N>& i, const vec<T, N>& nref) {
  return dot(nref, i) < T(0) ? n : -n;
}
template <class T, int N> KK_FN vec<T, N> reflect(const vec<T, N>& i, const vec<T, N>& n) {
  return i - T(2) * dot(n, i) * n;
}
template <class T, int N> KK_FN vec<T, N> refract(const vec<T, N>& i, const vec<T, N>& n, T eta) {
  T d = dot(n, i);
  T k = T(T(1) - eta * eta * (T(1) - d * d));
  if (k < T(0)) return vec<T, N>(T(0));
  return eta * i - (eta * d + T(metal::sqrt(k))) * n;
}
// The packed forms convert to vectors first.
#define KK_GEO_PACKED(NAME)                                                                            \
  template <class T, int N> KK_FN auto NAME(const packed_vec<T, N>& a) { return NAME(vec<T, N>(a)); }
#define KK_GEO_PACKED2(NAME)                                                                           \
  template <class T, int N> KK_FN auto NAME(const packed_vec<T, N>& a, const packed_vec<T, N>& b) {    \
    return NAME(vec<T, N>(a), vec<T, N>(b));                                                           \
  }                                                                                                    \
  template <class T, int N> KK_FN auto NAME(const packed_vec<T, N>& a, const vec<T, N>& b) {           \
    return NAME(vec<T, N>(a), b);                                                                      \
  }                                                                                                    \
  template <class T, int N> KK_FN auto NAME(const vec<T, N>& a, const packed_vec<T, N>& b) {           \
    return NAME(a, vec<T, N>(b));                                                                      \
  }
KK_GEO_PACKED(length)
KK_GEO_PACKED(length_squared)
KK_GEO_PACKED(normalize)
KK_GEO_PACKED2(dot)
KK_GEO_PACKED2(distance)
KK_GEO_PACKED2(distance_squared)
KK_GEO_PACKED2(cross)
#undef KK_GEO_PACKED
#undef KK_GEO_PACKED2
namespace fast {
using ::metal::dot; using ::metal::length; using ::metal::length_squared; using ::metal::distance;
using ::metal::distance_squared; using ::metal::normalize; using ::metal::cross; using ::metal::faceforward;
using ::metal::reflect; using ::metal::refract;
}  // namespace fast
namespace precise {
using ::metal::dot; using ::metal::length; using ::metal::length_squared; using ::metal::distance;
using ::metal::distance_squared; using ::metal::normalize; using ::metal::cross; using ::metal::faceforward;
using ::metal::reflect; using ::metal::refract;
}  // namespace precise
}  // namespace metal
#undef KK_DECL_F1
#undef KK_DECL_F2
#undef KK_DECL_F3
#undef KK_DECL_G1
#undef KK_DECL_G2
#undef KK_DECL_G3

// ---- Conditional expressions (2.12): Metal's type for the arms of
// `c ? x : y` when one is a half or bfloat and the other another scalar
// type (C++ finds it ambiguous: each class converts to the other). The
// lowering pass wraps each arm in kk::tc<decltype(x), decltype(y)>(x).
namespace kk {
template <class X, class Y,
          bool S = (small<X>::value || small<Y>::value) && !same<X, Y>::value && scalar<X>::value && scalar<Y>::value>
struct tern {
  typedef void type;
};
template <class X, class Y> struct tern<X, Y, true> {
  typedef typename common_scalar<value_t<X>, value_t<Y>>::type type;
};
template <class X, class Y, class V> KK_FN decltype(auto) tc(V&& v) {
  typedef typename tern<plain_t<X>, plain_t<Y>>::type T;
  if constexpr (same<T, void>::value) {
    return static_cast<V&&>(v);
  } else {
    return T(v);
  }
}
}  // namespace kk
