// ---- 2.13 / 6.1 Type traits (<metal_type_traits>), as_type, numeric
// limits (<metal_limits>) and the constants of the math headers.
namespace metal {
template <class T, T V> struct integral_constant : kk::constant<T, V> {};
template <bool B> using bool_constant = integral_constant<bool, B>;
typedef bool_constant<true> true_type;
typedef bool_constant<false> false_type;
using kk::declval;
template <bool B, class T = void> using enable_if = kk::enable_if<B, T>;
template <bool B, class T = void> using enable_if_t = typename kk::enable_if<B, T>::type;
template <bool B, class T, class F> using conditional = kk::conditional<B, T, F>;
template <bool B, class T, class F> using conditional_t = typename kk::conditional<B, T, F>::type;
template <class A, class B> struct is_same : bool_constant<kk::same<A, B>::value> {};
template <class A, class B> constexpr bool is_same_v = kk::same<A, B>::value;
template <class T> using remove_cv = kk::remove_cv<T>;
template <class T> using remove_cv_t = typename kk::remove_cv<T>::type;
template <class T> using remove_reference = kk::remove_ref<T>;
template <class T> using remove_reference_t = typename kk::remove_ref<T>::type;
template <class T> struct remove_const { typedef T type; };
template <class T> struct remove_const<const T> { typedef T type; };
template <class T> using remove_const_t = typename remove_const<T>::type;
template <class T> struct remove_volatile { typedef T type; };
template <class T> struct remove_volatile<volatile T> { typedef T type; };
template <class T> using remove_volatile_t = typename remove_volatile<T>::type;
template <class T> struct remove_pointer { typedef T type; };
template <class T> struct remove_pointer<T*> { typedef T type; };
template <class T> using remove_pointer_t = typename remove_pointer<T>::type;
template <class T> struct decay { typedef kk::plain_t<T> type; };
template <class T> using decay_t = typename decay<T>::type;
template <class T> struct is_void : bool_constant<kk::same<kk::plain_t<T>, void>::value> {};
template <class T> struct is_pointer : false_type {};
template <class T> struct is_pointer<T*> : true_type {};
template <class T> struct is_const : false_type {};
template <class T> struct is_const<const T> : true_type {};
template <class T> struct is_floating_point
    : bool_constant<kk::builtin_float<kk::plain_t<T>>::value || kk::small<kk::plain_t<T>>::value> {};
template <class T> struct is_integral
    : bool_constant<kk::builtin<kk::plain_t<T>>::value && !kk::builtin_float<kk::plain_t<T>>::value> {};
template <class T> struct is_arithmetic : bool_constant<kk::scalar<kk::plain_t<T>>::value> {};
template <class T> struct is_scalar : bool_constant<kk::scalar<kk::plain_t<T>>::value> {};
template <class T> struct is_vector : bool_constant<kk::is_vec<kk::plain_t<T>>::value> {};
template <class T, bool = kk::builtin<T>::value> struct kk_signed : bool_constant<(T(-1) < T(0))> {};
template <class T> struct kk_signed<T, false> : bool_constant<kk::small<T>::value> {};
template <class T> struct is_signed : kk_signed<kk::plain_t<T>> {};
template <class T> struct is_unsigned : bool_constant<is_integral<T>::value && !is_signed<T>::value> {};
template <class T> constexpr bool is_floating_point_v = is_floating_point<T>::value;
template <class T> constexpr bool is_integral_v = is_integral<T>::value;
template <class T> constexpr bool is_arithmetic_v = is_arithmetic<T>::value;
template <class T> constexpr bool is_scalar_v = is_scalar<T>::value;
template <class T> constexpr bool is_vector_v = is_vector<T>::value;
template <class T> constexpr bool is_signed_v = is_signed<T>::value;
template <class T> constexpr bool is_unsigned_v = is_unsigned<T>::value;
template <class T> constexpr bool is_pointer_v = is_pointer<T>::value;
template <class T> constexpr bool is_void_v = is_void<T>::value;
template <class T> struct make_unsigned { typedef T type; };
template <> struct make_unsigned<char> { typedef unsigned char type; };
template <> struct make_unsigned<signed char> { typedef unsigned char type; };
template <> struct make_unsigned<short> { typedef unsigned short type; };
template <> struct make_unsigned<int> { typedef unsigned int type; };
template <> struct make_unsigned<long> { typedef unsigned long type; };
template <> struct make_unsigned<long long> { typedef unsigned long long type; };
template <class T> struct make_signed { typedef T type; };
template <> struct make_signed<unsigned char> { typedef signed char type; };
template <> struct make_signed<unsigned short> { typedef short type; };
template <> struct make_signed<unsigned int> { typedef int type; };
template <> struct make_signed<unsigned long> { typedef long type; };
template <> struct make_signed<unsigned long long> { typedef long long type; };
template <class T> using make_unsigned_t = typename make_unsigned<T>::type;
template <class T> using make_signed_t = typename make_signed<T>::type;
// The element type and size of a vector (the scalar itself otherwise).
template <class T> struct vec_elements { typedef typename kk::vec_info<T>::elem type; static constexpr int value = kk::vec_info<T>::n; };

// ---- 2.13 as_type: the bits of a value as another type of the same size.
template <typename T, typename U> KK_FN T as_type(const U& v) {
  static_assert(sizeof(T) == sizeof(U), "as_type needs types of equal size");
  T t;
  memcpy(&t, &v, sizeof(T));
  return t;
}
}  // namespace metal

namespace kk {
// Bit patterns of the floats, for constant expressions without bit_cast.
template <class T> struct float_bits;
template <> struct float_bits<float> {
  static KK_CFN float max() { return 3.40282346638528859811704183484516925e+38f; }
  static KK_CFN float min() { return 1.17549435082228750796873653722224568e-38f; }
  static KK_CFN float epsilon() { return 1.1920928955078125e-07f; }
  static KK_CFN float denorm() { return 1.40129846432481707092372958328991613e-45f; }
  static KK_CFN float inf() { return __builtin_bit_cast(float, 0x7f800000u); }
  static KK_CFN float nan() { return __builtin_bit_cast(float, 0x7fc00000u); }
  static constexpr int digits = 24, digits10 = 6, max_exponent = 128, min_exponent = -125;
};
template <> struct float_bits<double> {
  static KK_CFN double max() { return 1.79769313486231570814527423731704357e+308; }
  static KK_CFN double min() { return 2.22507385850720138309023271733240406e-308; }
  static KK_CFN double epsilon() { return 2.22044604925031308084726333618164062e-16; }
  static KK_CFN double denorm() { return 4.94065645841246544176568792868221372e-324; }
  static KK_CFN double inf() { return __builtin_bit_cast(double, 0x7ff0000000000000ull); }
  static KK_CFN double nan() { return __builtin_bit_cast(double, 0x7ff8000000000000ull); }
  static constexpr int digits = 53, digits10 = 15, max_exponent = 1024, min_exponent = -1021;
};
template <class T, T Lo, T Hi> struct int_limits {
  static constexpr bool is_specialized = true, is_signed = (T(-1) < T(0)), is_integer = true, is_exact = true;
  static constexpr bool has_infinity = false, has_quiet_NaN = false, has_signaling_NaN = false;
  static constexpr int radix = 2, digits = int(sizeof(T) * 8) - (T(-1) < T(0) ? 1 : 0);
  static constexpr int digits10 = digits * 301 / 1000;
  static KK_CFN T min() { return Lo; }
  static KK_CFN T max() { return Hi; }
  static KK_CFN T lowest() { return Lo; }
  static KK_CFN T epsilon() { return T(0); }
  static KK_CFN T round_error() { return T(0); }
  static KK_CFN T infinity() { return T(0); }
  static KK_CFN T quiet_NaN() { return T(0); }
  static KK_CFN T signaling_NaN() { return T(0); }
  static KK_CFN T denorm_min() { return T(0); }
};
template <class T> struct float_limits {
  typedef float_bits<T> B;
  static constexpr bool is_specialized = true, is_signed = true, is_integer = false, is_exact = false;
  static constexpr bool has_infinity = true, has_quiet_NaN = true, has_signaling_NaN = true, is_iec559 = true;
  static constexpr int radix = 2, digits = B::digits, digits10 = B::digits10;
  static constexpr int max_exponent = B::max_exponent, min_exponent = B::min_exponent;
  static KK_CFN T min() { return B::min(); }
  static KK_CFN T max() { return B::max(); }
  static KK_CFN T lowest() { return -B::max(); }
  static KK_CFN T epsilon() { return B::epsilon(); }
  static KK_CFN T round_error() { return T(0.5); }
  static KK_CFN T infinity() { return B::inf(); }
  static KK_CFN T kk_neg_infinity() { return -B::inf(); }
  static KK_CFN T quiet_NaN() { return B::nan(); }
  static KK_CFN T signaling_NaN() { return B::nan(); }
  static KK_CFN T denorm_min() { return B::denorm(); }
};
// The 16-bit floats, from their bits.
template <class T, unsigned short Max, unsigned short Min, unsigned short Eps, unsigned short Den, int Digits,
          int MaxExp, int MinExp>
struct small_limits {
  static constexpr bool is_specialized = true, is_signed = true, is_integer = false, is_exact = false;
  static constexpr bool has_infinity = true, has_quiet_NaN = true, has_signaling_NaN = true, is_iec559 = true;
  static constexpr int radix = 2, digits = Digits, digits10 = (Digits - 1) * 301 / 1000;
  static constexpr int max_exponent = MaxExp, min_exponent = MinExp;
  static KK_CFN T min() { return T::from_bits(Min); }
  static KK_CFN T max() { return T::from_bits(Max); }
  static KK_CFN T lowest() { return T::from_bits((unsigned short)(Max | 0x8000u)); }
  static KK_CFN T epsilon() { return T::from_bits(Eps); }
  static KK_CFN T round_error() { return T::from_bits(Eps == 0x1400 ? 0x3800 : 0x3f00); }
  static KK_CFN T infinity() { return T::from_bits(Max == 0x7bff ? 0x7c00 : 0x7f80); }
  static KK_CFN T kk_neg_infinity() { return T::from_bits(Max == 0x7bff ? 0xfc00 : 0xff80); }
  static KK_CFN T quiet_NaN() { return T::from_bits(Max == 0x7bff ? 0x7e00 : 0x7fc0); }
  static KK_CFN T signaling_NaN() { return T::from_bits(Max == 0x7bff ? 0x7d00 : 0x7fa0); }
  static KK_CFN T denorm_min() { return T::from_bits(Den); }
};
}  // namespace kk

namespace metal {
template <class T> struct numeric_limits { static constexpr bool is_specialized = false; };
template <class T> struct numeric_limits<const T> : numeric_limits<T> {};
template <> struct numeric_limits<bool> : kk::int_limits<bool, false, true> {};
template <> struct numeric_limits<char> : kk::int_limits<char, char(-128), char(127)> {};
template <> struct numeric_limits<signed char> : kk::int_limits<signed char, -128, 127> {};
template <> struct numeric_limits<unsigned char> : kk::int_limits<unsigned char, 0, 255> {};
template <> struct numeric_limits<short> : kk::int_limits<short, -32768, 32767> {};
template <> struct numeric_limits<unsigned short> : kk::int_limits<unsigned short, 0, 65535> {};
template <> struct numeric_limits<int> : kk::int_limits<int, -2147483647 - 1, 2147483647> {};
template <> struct numeric_limits<unsigned int> : kk::int_limits<unsigned int, 0u, 4294967295u> {};
template <> struct numeric_limits<long> : kk::int_limits<long, -9223372036854775807l - 1, 9223372036854775807l> {};
template <> struct numeric_limits<unsigned long> : kk::int_limits<unsigned long, 0ul, 18446744073709551615ul> {};
template <> struct numeric_limits<long long> : kk::int_limits<long long, -9223372036854775807ll - 1, 9223372036854775807ll> {};
template <> struct numeric_limits<unsigned long long> : kk::int_limits<unsigned long long, 0ull, 18446744073709551615ull> {};
template <> struct numeric_limits<float> : kk::float_limits<float> {};
template <> struct numeric_limits<double> : kk::float_limits<double> {};
#if defined(KK_CPU) || defined(KK_HALF_TYPES)
template <> struct numeric_limits<::float16_t>
    : kk::small_limits<::float16_t, 0x7bff, 0x0400, 0x1400, 0x0001, 11, 16, -13> {};
template <> struct numeric_limits<::bfloat16_t>
    : kk::small_limits<::bfloat16_t, 0x7f7f, 0x0080, 0x3c00, 0x0001, 8, 128, -125> {};
#endif
}  // namespace metal

// ---- 6.5 Math constants (<metal_math>), where the C library has not
// defined them already.
#ifndef INFINITY
#define INFINITY __builtin_bit_cast(float, 0x7f800000u)
#endif
#ifndef NAN
#define NAN __builtin_bit_cast(float, 0x7fc00000u)
#endif
#ifndef HUGE_VALF
#define HUGE_VALF INFINITY
#endif
#ifndef MAXFLOAT
#define MAXFLOAT 0x1.fffffep+127f
#endif
#ifndef FLT_MAX
#define FLT_MAX 0x1.fffffep+127f
#endif
#ifndef FLT_MIN
#define FLT_MIN 0x1p-126f
#endif
#ifndef FLT_EPSILON
#define FLT_EPSILON 0x1p-23f
#endif
#ifndef FLT_MANT_DIG
#define FLT_MANT_DIG 24
#endif
#ifndef FLT_MAX_EXP
#define FLT_MAX_EXP 128
#endif
#ifndef FLT_MIN_EXP
#define FLT_MIN_EXP (-125)
#endif
#ifndef FLT_DIG
#define FLT_DIG 6
#endif
#ifndef DBL_MAX
#define DBL_MAX 0x1.fffffffffffffp+1023
#endif
#ifndef DBL_MIN
#define DBL_MIN 0x1p-1022
#endif
#ifndef DBL_EPSILON
#define DBL_EPSILON 0x1p-52
#endif
#ifndef CHAR_BIT
#define CHAR_BIT 8
#endif
#ifndef SCHAR_MAX
#define SCHAR_MAX 127
#define SCHAR_MIN (-128)
#define UCHAR_MAX 255
#define CHAR_MAX SCHAR_MAX
#define CHAR_MIN SCHAR_MIN
#endif
#ifndef SHRT_MAX
#define SHRT_MAX 32767
#define SHRT_MIN (-32768)
#define USHRT_MAX 65535
#endif
#ifndef INT_MAX
#define INT_MAX 2147483647
#define INT_MIN (-2147483647 - 1)
#define UINT_MAX 4294967295u
#endif
#ifndef LONG_MAX
#define LONG_MAX 9223372036854775807l
#define LONG_MIN (-9223372036854775807l - 1)
#define ULONG_MAX 18446744073709551615ul
#endif
#define HALF_MAX 0x1.ffcp15f
#define HALF_MIN 0x1p-14f
#define HALF_EPSILON 0x1p-10f
#define MAXHALF HALF_MAX
#define M_E_F 2.71828182845904523536f
#define M_LOG2E_F 1.44269504088896340736f
#define M_LOG10E_F 0.434294481903251827651f
#define M_LN2_F 0.693147180559945309417f
#define M_LN10_F 2.30258509299404568402f
#define M_PI_F 3.14159265358979323846f
#define M_PI_2_F 1.57079632679489661923f
#define M_PI_4_F 0.785398163397448309616f
#define M_1_PI_F 0.318309886183790671538f
#define M_2_PI_F 0.636619772367581343076f
#define M_2_SQRTPI_F 1.12837916709551257390f
#define M_SQRT2_F 1.41421356237309504880f
#define M_SQRT1_2_F 0.707106781186547524401f
#define M_E_H M_E_F
#define M_LOG2E_H M_LOG2E_F
#define M_LOG10E_H M_LOG10E_F
#define M_LN2_H M_LN2_F
#define M_LN10_H M_LN10_F
#define M_PI_H M_PI_F
#define M_PI_2_H M_PI_2_F
#define M_PI_4_H M_PI_4_F
#define M_1_PI_H M_1_PI_F
#define M_2_PI_H M_2_PI_F
#define M_2_SQRTPI_H M_2_SQRTPI_F
#define M_SQRT2_H M_SQRT2_F
#define M_SQRT1_2_H M_SQRT1_2_F
