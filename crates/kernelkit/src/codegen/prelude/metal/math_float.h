// ---- 6.5 Math functions on floats (metal::, metal::fast::, metal::precise::).
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


namespace metal {
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

