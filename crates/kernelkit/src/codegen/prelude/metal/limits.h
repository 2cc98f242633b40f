// ---- 6.1 Numeric limits (<metal_limits>).
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

