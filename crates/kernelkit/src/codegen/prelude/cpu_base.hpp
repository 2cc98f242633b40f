// kernelkit CPU prelude, base: the dtypes of kernelkit in C++20.
#include <atomic>
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>

typedef unsigned int uint;

namespace kk {
inline uint32_t f2u(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
inline float u2f(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }

// IEEE binary16 <-> binary32, round to nearest even.
inline uint16_t float_to_half(float f) {
  uint32_t x = f2u(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t mag = x & 0x7fffffffu;
  if (mag >= 0x7f800000u) {  // inf or nan
    return (uint16_t)(sign | 0x7c00u | (mag > 0x7f800000u ? 0x200u | ((mag >> 13) & 0x3ffu) : 0u));
  }
  if (mag >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);  // overflow to inf
  if (mag < 0x38800000u) {  // subnormal or zero in half
    if (mag < 0x33000000u) return (uint16_t)sign;
    uint32_t e = mag >> 23;
    uint32_t m = (mag & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - e;  // 14 + (112 - e) ... m >> (shift) gives half mantissa
    uint32_t half_m = m >> shift;
    uint32_t rem = m & ((1u << shift) - 1);
    uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (half_m & 1u))) half_m++;
    return (uint16_t)(sign | half_m);
  }
  uint32_t h = ((mag - 0x38000000u) >> 13);
  uint32_t rem = mag & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++;
  return (uint16_t)(sign | h);
}
inline float half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t e = (h >> 10) & 0x1fu;
  uint32_t m = h & 0x3ffu;
  if (e == 0) {
    if (m == 0) return u2f(sign);
    float v = std::ldexp((float)m, -24);
    return sign ? -v : v;
  }
  if (e == 31) return u2f(sign | 0x7f800000u | (m << 13));
  return u2f(sign | ((e + 112) << 23) | (m << 13));
}
inline uint16_t float_to_bf16(float f) {
  uint32_t x = f2u(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
  return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}
inline float bf16_to_float(uint16_t b) { return u2f((uint32_t)b << 16); }

template <typename Tag>
struct small_float {
  uint16_t bits;
  small_float() = default;
  template <typename T, typename = enable_if_t<builtin<T>::value>>
  small_float(T v) : bits(Tag::from((float)v)) {}
  template <typename Other>
  small_float(small_float<Other> v) : bits(Tag::from((float)v)) {}
  operator float() const { return Tag::to(bits); }
  template <typename T> small_float& operator+=(T v) { return *this = (float)*this + v; }
  template <typename T> small_float& operator-=(T v) { return *this = (float)*this - v; }
  template <typename T> small_float& operator*=(T v) { return *this = (float)*this * v; }
  template <typename T> small_float& operator/=(T v) { return *this = (float)*this / v; }
  small_float& operator++() { return *this = (float)*this + 1.0f; }
  small_float& operator--() { return *this = (float)*this - 1.0f; }
  small_float operator++(int) { small_float o = *this; ++*this; return o; }
  small_float operator--(int) { small_float o = *this; --*this; return o; }
  // A value from its bits, usable in constant expressions.
  static constexpr small_float from_bits(uint16_t b) { small_float r{}; r.bits = b; return r; }
  KK_SMALL_FLOAT_OPS(small_float)
};
struct half_tag {
  static uint16_t from(float f) { return float_to_half(f); }
  static float to(uint16_t b) { return half_to_float(b); }
};
struct bf16_tag {
  static uint16_t from(float f) { return float_to_bf16(f); }
  static float to(uint16_t b) { return bf16_to_float(b); }
};
}  // namespace kk

namespace kk {
template <class Tag> struct small<small_float<Tag>> : yes {};
}  // namespace kk

typedef kk::small_float<kk::half_tag> half;
typedef half float16_t;
typedef kk::small_float<kk::bf16_tag> bfloat16_t;
typedef bfloat16_t bfloat;

struct complex64_t {
  float real;
  float imag;
  complex64_t() = default;
  constexpr complex64_t(float r, float i) : real(r), imag(i) {}
  template <typename T, typename = kk::enable_if_t<kk::builtin<T>::value>>
  constexpr complex64_t(T r) : real((float)r), imag(0.0f) {}
  complex64_t& operator+=(complex64_t o) { real += o.real; imag += o.imag; return *this; }
  complex64_t& operator-=(complex64_t o) { real -= o.real; imag -= o.imag; return *this; }
  complex64_t& operator*=(complex64_t o) { return *this = complex64_t(real * o.real - imag * o.imag, real * o.imag + imag * o.real); }
};
inline complex64_t operator+(complex64_t a, complex64_t b) { return {a.real + b.real, a.imag + b.imag}; }
inline complex64_t operator-(complex64_t a, complex64_t b) { return {a.real - b.real, a.imag - b.imag}; }
inline complex64_t operator-(complex64_t a) { return {-a.real, -a.imag}; }
inline complex64_t operator*(complex64_t a, complex64_t b) { return {a.real * b.real - a.imag * b.imag, a.real * b.imag + a.imag * b.real}; }
inline complex64_t operator/(complex64_t a, complex64_t b) {
  float d = b.real * b.real + b.imag * b.imag;
  return {(a.real * b.real + a.imag * b.imag) / d, (a.imag * b.real - a.real * b.imag) / d};
}
inline bool operator==(complex64_t a, complex64_t b) { return a.real == b.real && a.imag == b.imag; }
inline bool operator!=(complex64_t a, complex64_t b) { return !(a == b); }

