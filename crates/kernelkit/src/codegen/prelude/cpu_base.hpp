// kernelkit CPU prelude: the Metal names a portable body uses, in C++20.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

typedef unsigned int uint;
struct uint3 { uint x, y, z; };
struct uint2 { uint x, y; };
struct int3 { int x, y, z; };
struct int2 { int x, y; };

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
  template <typename T, typename = std::enable_if_t<std::is_arithmetic_v<T>>>
  small_float(T v) : bits(Tag::from((float)v)) {}
  template <typename Other>
  small_float(small_float<Other> v) : bits(Tag::from((float)v)) {}
  operator float() const { return Tag::to(bits); }
  template <typename T> small_float& operator+=(T v) { return *this = (float)*this + v; }
  template <typename T> small_float& operator-=(T v) { return *this = (float)*this - v; }
  template <typename T> small_float& operator*=(T v) { return *this = (float)*this * v; }
  template <typename T> small_float& operator/=(T v) { return *this = (float)*this / v; }
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

typedef kk::small_float<kk::half_tag> half;
typedef half float16_t;
typedef kk::small_float<kk::bf16_tag> bfloat16_t;
typedef bfloat16_t bfloat;

struct complex64_t {
  float real;
  float imag;
  complex64_t() = default;
  constexpr complex64_t(float r, float i) : real(r), imag(i) {}
  template <typename T, typename = std::enable_if_t<std::is_arithmetic_v<T>>>
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

// Metal's math library, as far as it maps onto <cmath>.
namespace metal {
using std::abs; using std::acos; using std::asin; using std::atan; using std::atan2;
using std::ceil; using std::cos; using std::cosh; using std::exp; using std::exp2;
using std::floor; using std::fma; using std::fmod; using std::isfinite; using std::isinf;
using std::isnan; using std::log; using std::log10; using std::log2; using std::pow;
using std::round; using std::sin; using std::sinh; using std::sqrt; using std::tan;
using std::tanh; using std::trunc; using std::log1p; using std::expm1; using std::erf;
template <typename T> inline T min(T a, T b) { return b < a ? b : a; }
template <typename T> inline T max(T a, T b) { return a < b ? b : a; }
template <typename T> inline T clamp(T x, T lo, T hi) { return min(max(x, lo), hi); }
template <typename T> inline T rsqrt(T x) { return T(1) / std::sqrt(x); }
template <typename T> inline T fabs(T x) { return std::fabs(x); }
template <typename T> inline T select(T a, T b, bool c) { return c ? b : a; }
template <typename T> inline T precise_divide(T a, T b) { return a / b; }
template <typename T, typename U> inline T as_type(U v) {
  static_assert(sizeof(T) == sizeof(U), "as_type needs equal sizes");
  T t; std::memcpy(&t, &v, sizeof(T)); return t;
}
namespace precise { using namespace ::metal; }
namespace fast { using namespace ::metal; }
}  // namespace metal
using namespace metal;

// Metal atomics over plain storage: outputs declared `atomic<T>*`.
namespace kk {
template <typename T> struct atomic_cell { T value; };
template <typename T, typename F>
inline T atomic_update(T* p, F f) {
  std::atomic_ref<T> r(*p);
  T old = r.load(std::memory_order_relaxed);
  while (!r.compare_exchange_weak(old, f(old), std::memory_order_relaxed)) {}
  return old;
}
}  // namespace kk
template <typename T> using atomic = kk::atomic_cell<T>;
typedef int memory_order;
constexpr memory_order memory_order_relaxed = 0;
constexpr memory_order memory_order_seq_cst = 5;
template <typename T> inline void atomic_store_explicit(atomic<T>* p, std::type_identity_t<T> v, memory_order) {
  std::atomic_ref<T>(p->value).store(v, std::memory_order_relaxed);
}
template <typename T> inline T atomic_load_explicit(atomic<T>* p, memory_order) {
  return std::atomic_ref<T>(p->value).load(std::memory_order_relaxed);
}
template <typename T> inline T atomic_exchange_explicit(atomic<T>* p, std::type_identity_t<T> v, memory_order) {
  return std::atomic_ref<T>(p->value).exchange(v, std::memory_order_relaxed);
}
template <typename T> inline T atomic_fetch_add_explicit(atomic<T>* p, std::type_identity_t<T> v, memory_order) {
  return kk::atomic_update(&p->value, [v](T o) { return (T)(o + v); });
}
template <typename T> inline T atomic_fetch_sub_explicit(atomic<T>* p, std::type_identity_t<T> v, memory_order) {
  return kk::atomic_update(&p->value, [v](T o) { return (T)(o - v); });
}
template <typename T> inline T atomic_fetch_max_explicit(atomic<T>* p, std::type_identity_t<T> v, memory_order) {
  return kk::atomic_update(&p->value, [v](T o) { return o < v ? v : o; });
}
template <typename T> inline T atomic_fetch_min_explicit(atomic<T>* p, std::type_identity_t<T> v, memory_order) {
  return kk::atomic_update(&p->value, [v](T o) { return v < o ? v : o; });
}
template <typename T> inline T atomic_fetch_or_explicit(atomic<T>* p, std::type_identity_t<T> v, memory_order) {
  return std::atomic_ref<T>(p->value).fetch_or(v, std::memory_order_relaxed);
}
template <typename T> inline T atomic_fetch_and_explicit(atomic<T>* p, std::type_identity_t<T> v, memory_order) {
  return std::atomic_ref<T>(p->value).fetch_and(v, std::memory_order_relaxed);
}
template <typename T> inline bool atomic_compare_exchange_weak_explicit(atomic<T>* p, T* expected, std::type_identity_t<T> desired, memory_order, memory_order) {
  return std::atomic_ref<T>(p->value).compare_exchange_weak(*expected, desired, std::memory_order_relaxed);
}

// Index helper, as in MLX's utils: element index -> memory offset.
template <typename IdxT = int64_t>
inline IdxT elem_to_loc(IdxT elem, const int* shape, const int64_t* strides, int ndim) {
  IdxT loc = 0;
  for (int i = ndim - 1; i >= 0 && elem > 0; --i) {
    loc += (elem % shape[i]) * strides[i];
    elem /= shape[i];
  }
  return loc;
}

// Metal address-space qualifiers mean nothing on the CPU.
#define device
#define constant
#define thread
#define threadgroup

struct kk_launch {
  uint32_t grid[3];
  uint32_t tg[3];
  uint32_t groups[3];
  uint32_t simd;
  uint64_t group_begin;
  uint64_t group_end;
};
