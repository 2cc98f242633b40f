// kernelkit CUDA prelude: the types and Metal names a portable body uses.
#ifndef KK_CUDA_PRELUDE
#define KK_CUDA_PRELUDE

#define WARP_SIZE 32

typedef unsigned int uint;
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
// As libcu++ defines them under NVRTC, so its headers may come later.
typedef long long int64_t;
typedef unsigned long long uint64_t;

#ifdef KK_HALF_TYPES
// The 16-bit floats of Metal bodies: storage as CUDA's own types, arithmetic
// through float. CUDA's `__half` converts to every built-in type, so
// `h * 2` is ambiguous for it; these convert to float only, so mixed
// expressions mean what they mean in Metal. `__half` and `__nv_bfloat16`
// stay available to CUDA-style bodies (`.v` reaches the raw value); Metal's
// `half` and `bfloat` mean these types in bodies (macros, see cuda.rs).
namespace kk {
template <typename T> struct arith { static const bool value = false; };
template <> struct arith<bool> { static const bool value = true; };
template <> struct arith<char> { static const bool value = true; };
template <> struct arith<signed char> { static const bool value = true; };
template <> struct arith<unsigned char> { static const bool value = true; };
template <> struct arith<short> { static const bool value = true; };
template <> struct arith<unsigned short> { static const bool value = true; };
template <> struct arith<int> { static const bool value = true; };
template <> struct arith<unsigned int> { static const bool value = true; };
template <> struct arith<long> { static const bool value = true; };
template <> struct arith<unsigned long> { static const bool value = true; };
template <> struct arith<long long> { static const bool value = true; };
template <> struct arith<unsigned long long> { static const bool value = true; };
template <> struct arith<float> { static const bool value = true; };
template <> struct arith<double> { static const bool value = true; };
template <bool B, typename T = void> struct enable_if {};
template <typename T> struct enable_if<true, T> { typedef T type; };
__device__ inline float to_float(__half v) { return __half2float(v); }
__device__ inline float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename Raw> __device__ inline Raw from_float(float f);
template <> __device__ inline __half from_float<__half>(float f) { return __float2half(f); }
template <> __device__ inline __nv_bfloat16 from_float<__nv_bfloat16>(float f) { return __float2bfloat16(f); }
template <typename Raw>
struct small_float {
  Raw v;
  small_float() = default;
  __device__ small_float(Raw r) : v(r) {}
  template <typename T, typename = typename enable_if<arith<T>::value>::type>
  __device__ small_float(T x) : v(from_float<Raw>((float)x)) {}
  template <typename Other>
  __device__ small_float(small_float<Other> o) : v(from_float<Raw>((float)o)) {}
  __device__ operator float() const { return to_float(v); }
  template <typename T> __device__ small_float& operator+=(T x) { return *this = (float)*this + x; }
  template <typename T> __device__ small_float& operator-=(T x) { return *this = (float)*this - x; }
  template <typename T> __device__ small_float& operator*=(T x) { return *this = (float)*this * x; }
  template <typename T> __device__ small_float& operator/=(T x) { return *this = (float)*this / x; }
};
}  // namespace kk
typedef kk::small_float<__half> float16_t;
typedef kk::small_float<__nv_bfloat16> bfloat16_t;
#endif

struct __align__(8) complex64_t {
  float real;
  float imag;
  complex64_t() = default;
  __host__ __device__ constexpr complex64_t(float r, float i) : real(r), imag(i) {}
  __host__ __device__ constexpr complex64_t(float r) : real(r), imag(0.0f) {}
  __device__ complex64_t& operator+=(complex64_t o) { real += o.real; imag += o.imag; return *this; }
  __device__ complex64_t& operator-=(complex64_t o) { real -= o.real; imag -= o.imag; return *this; }
  __device__ complex64_t& operator*=(complex64_t o) {
    float r = real * o.real - imag * o.imag;
    imag = real * o.imag + imag * o.real;
    real = r;
    return *this;
  }
};
__device__ inline complex64_t operator+(complex64_t a, complex64_t b) { return complex64_t(a.real + b.real, a.imag + b.imag); }
__device__ inline complex64_t operator-(complex64_t a, complex64_t b) { return complex64_t(a.real - b.real, a.imag - b.imag); }
__device__ inline complex64_t operator-(complex64_t a) { return complex64_t(-a.real, -a.imag); }
__device__ inline complex64_t operator*(complex64_t a, complex64_t b) {
  return complex64_t(a.real * b.real - a.imag * b.imag, a.real * b.imag + a.imag * b.real);
}
__device__ inline complex64_t operator/(complex64_t a, complex64_t b) {
  float d = b.real * b.real + b.imag * b.imag;
  return complex64_t((a.real * b.real + a.imag * b.imag) / d, (a.imag * b.real - a.real * b.imag) / d);
}
__device__ inline bool operator==(complex64_t a, complex64_t b) { return a.real == b.real && a.imag == b.imag; }
__device__ inline bool operator!=(complex64_t a, complex64_t b) { return !(a == b); }

// Layout parameters, passed by value (as MLX's cuda_kernel does).
#define KK_MAX_NDIM 10
struct kk_shape {
  int32_t v[KK_MAX_NDIM];
  __device__ int32_t operator[](int i) const { return v[i]; }
  __device__ const int32_t* data() const { return v; }
};
struct kk_strides {
  int64_t v[KK_MAX_NDIM];
  __device__ int64_t operator[](int i) const { return v[i]; }
  __device__ const int64_t* data() const { return v; }
};

// A 0-d input: reads as a value (Metal's `const constant T&`) and as
// `x[0]` (MLX's cuda_kernel passes every input as `const T*`).
template <typename T>
struct kk_scalar {
  const T* p;
  __device__ operator T() const { return *p; }
  __device__ const T& operator[](int64_t i) const { return p[i]; }
  __device__ const T* operator&() const { return p; }
};

// Index helper, as in MLX: element index -> memory offset of a strided array.
template <typename IdxT = int64_t>
__device__ inline IdxT elem_to_loc(IdxT elem, const int32_t* shape, const int64_t* strides, int ndim) {
  IdxT loc = 0;
  for (int i = ndim - 1; i >= 0 && elem > 0; --i) {
    loc += (elem % shape[i]) * strides[i];
    elem /= shape[i];
  }
  return loc;
}
template <typename IdxT = int64_t>
__device__ inline IdxT elem_to_loc(IdxT elem, const kk_shape& shape, const kk_strides& strides, int ndim) {
  return elem_to_loc<IdxT>(elem, shape.v, strides.v, ndim);
}
__device__ inline int64_t elem_to_loc(uint elem, const kk_shape& shape, const kk_strides& strides, int ndim) {
  return elem_to_loc<int64_t>((int64_t)elem, shape.v, strides.v, ndim);
}
__device__ inline int64_t elem_to_loc(int elem, const kk_shape& shape, const kk_strides& strides, int ndim) {
  return elem_to_loc<int64_t>((int64_t)elem, shape.v, strides.v, ndim);
}

// Metal's math names, forwarding to CUDA's.
namespace metal {
template <typename T> __device__ inline T min(T a, T b) { return b < a ? b : a; }
template <typename T> __device__ inline T max(T a, T b) { return a < b ? b : a; }
template <typename T> __device__ inline T clamp(T x, T lo, T hi) { return min(max(x, lo), hi); }
template <typename T> __device__ inline T select(T a, T b, bool c) { return c ? b : a; }
template <typename T> __device__ inline T precise_divide(T a, T b) { return a / b; }
__device__ inline float rsqrt(float x) { return ::rsqrtf(x); }
__device__ inline double rsqrt(double x) { return ::rsqrt(x); }
__device__ inline float abs(float x) { return ::fabsf(x); }
__device__ inline double abs(double x) { return ::fabs(x); }
__device__ inline int abs(int x) { return ::abs(x); }
using ::exp; using ::exp2; using ::log; using ::log2; using ::log10; using ::log1p; using ::expm1;
using ::sqrt; using ::sin; using ::cos; using ::tan; using ::asin; using ::acos; using ::atan;
using ::atan2; using ::sinh; using ::cosh; using ::tanh; using ::pow; using ::floor; using ::ceil;
using ::round; using ::trunc; using ::fabs; using ::fmod; using ::fma; using ::erf;
using ::isnan; using ::isinf; using ::isfinite;
template <typename T, typename U> __device__ inline T as_type(U v) {
  static_assert(sizeof(T) == sizeof(U), "as_type needs equal sizes");
  T t;
  memcpy(&t, &v, sizeof(T));
  return t;
}
namespace precise { using namespace ::metal; }
namespace fast { using namespace ::metal; }
}  // namespace metal

// Metal atomics over plain storage: outputs declared `atomic<T>*`.
template <typename T> struct kk_atomic_cell { T value; };
template <typename T> using atomic = kk_atomic_cell<T>;
enum memory_order { memory_order_relaxed = 0, memory_order_seq_cst = 5 };

namespace kk {
template <typename T> struct same { typedef T type; };
template <int N> struct word;
template <> struct word<2> { typedef unsigned short int type; };
template <> struct word<4> { typedef unsigned int type; };
template <> struct word<8> { typedef unsigned long long int type; };

// Compare-and-swap loop for any 2-, 4- or 8-byte T.
// Reinterprets the bytes of a value (the CUDA counterpart of std::bit_cast).
template <typename To, typename From>
__device__ inline To bits(const From& v) {
  static_assert(sizeof(To) == sizeof(From), "bits needs equal sizes");
  To t;
  memcpy(&t, &v, sizeof(To));
  return t;
}

template <typename T, typename F>
__device__ inline T update(T* p, F f) {
  typedef typename word<sizeof(T)>::type W;
  W* w = reinterpret_cast<W*>(p);
  W old = *reinterpret_cast<volatile W*>(w);
  while (true) {
    T cur = bits<T>(old);
    W nw = bits<W>(f(cur));
    W seen = atomicCAS(w, old, nw);
    if (seen == old) return cur;
    old = seen;
  }
}
struct add { template <typename T> __device__ T operator()(T a, T b) const { return a + b; } };
struct sub { template <typename T> __device__ T operator()(T a, T b) const { return a - b; } };
struct mx { template <typename T> __device__ T operator()(T a, T b) const { return a < b ? b : a; } };
struct mn { template <typename T> __device__ T operator()(T a, T b) const { return b < a ? b : a; } };
struct bor { template <typename T> __device__ T operator()(T a, T b) const { return a | b; } };
struct band { template <typename T> __device__ T operator()(T a, T b) const { return a & b; } };
struct bxor { template <typename T> __device__ T operator()(T a, T b) const { return a ^ b; } };
template <typename Op, typename T>
__device__ inline T rmw(T* p, T v) {
  return update(p, [v](T o) { return (T)Op()(o, v); });
}
// Native atomics where CUDA has them.
__device__ inline int rmw_add(int* p, int v) { return atomicAdd(p, v); }
__device__ inline unsigned int rmw_add(unsigned int* p, unsigned int v) { return atomicAdd(p, v); }
__device__ inline float rmw_add(float* p, float v) { return atomicAdd(p, v); }
__device__ inline double rmw_add(double* p, double v) { return atomicAdd(p, v); }
__device__ inline int64_t rmw_add(int64_t* p, int64_t v) {
  return (int64_t)atomicAdd(reinterpret_cast<unsigned long long*>(p), (unsigned long long)v);
}
__device__ inline uint64_t rmw_add(uint64_t* p, uint64_t v) {
  return (uint64_t)atomicAdd(reinterpret_cast<unsigned long long*>(p), (unsigned long long)v);
}
template <typename T> __device__ inline T rmw_add(T* p, T v) { return rmw<add>(p, v); }
__device__ inline int rmw_max(int* p, int v) { return atomicMax(p, v); }
__device__ inline unsigned int rmw_max(unsigned int* p, unsigned int v) { return atomicMax(p, v); }
__device__ inline int64_t rmw_max(int64_t* p, int64_t v) {
  return (int64_t)atomicMax(reinterpret_cast<long long*>(p), (long long)v);
}
__device__ inline uint64_t rmw_max(uint64_t* p, uint64_t v) {
  return (uint64_t)atomicMax(reinterpret_cast<unsigned long long*>(p), (unsigned long long)v);
}
template <typename T> __device__ inline T rmw_max(T* p, T v) { return rmw<mx>(p, v); }
__device__ inline int rmw_min(int* p, int v) { return atomicMin(p, v); }
__device__ inline unsigned int rmw_min(unsigned int* p, unsigned int v) { return atomicMin(p, v); }
__device__ inline int64_t rmw_min(int64_t* p, int64_t v) {
  return (int64_t)atomicMin(reinterpret_cast<long long*>(p), (long long)v);
}
__device__ inline uint64_t rmw_min(uint64_t* p, uint64_t v) {
  return (uint64_t)atomicMin(reinterpret_cast<unsigned long long*>(p), (unsigned long long)v);
}
template <typename T> __device__ inline T rmw_min(T* p, T v) { return rmw<mn>(p, v); }
}  // namespace kk

template <typename T>
__device__ inline void atomic_store_explicit(atomic<T>* p, typename kk::same<T>::type v, memory_order) {
  *reinterpret_cast<volatile T*>(&p->value) = v;
}
template <typename T>
__device__ inline T atomic_load_explicit(atomic<T>* p, memory_order) {
  return *reinterpret_cast<volatile T*>(&p->value);
}
template <typename T>
__device__ inline T atomic_exchange_explicit(atomic<T>* p, typename kk::same<T>::type v, memory_order) {
  return kk::update(&p->value, [v](T) { return v; });
}
template <typename T>
__device__ inline T atomic_fetch_add_explicit(atomic<T>* p, typename kk::same<T>::type v, memory_order) {
  return kk::rmw_add(&p->value, v);
}
template <typename T>
__device__ inline T atomic_fetch_sub_explicit(atomic<T>* p, typename kk::same<T>::type v, memory_order) {
  return kk::rmw<kk::sub>(&p->value, v);
}
template <typename T>
__device__ inline T atomic_fetch_max_explicit(atomic<T>* p, typename kk::same<T>::type v, memory_order) {
  return kk::rmw_max(&p->value, v);
}
template <typename T>
__device__ inline T atomic_fetch_min_explicit(atomic<T>* p, typename kk::same<T>::type v, memory_order) {
  return kk::rmw_min(&p->value, v);
}
template <typename T>
__device__ inline T atomic_fetch_or_explicit(atomic<T>* p, typename kk::same<T>::type v, memory_order) {
  return kk::rmw<kk::bor>(&p->value, v);
}
template <typename T>
__device__ inline T atomic_fetch_and_explicit(atomic<T>* p, typename kk::same<T>::type v, memory_order) {
  return kk::rmw<kk::band>(&p->value, v);
}
template <typename T>
__device__ inline T atomic_fetch_xor_explicit(atomic<T>* p, typename kk::same<T>::type v, memory_order) {
  return kk::rmw<kk::bxor>(&p->value, v);
}
template <typename T>
__device__ inline bool atomic_compare_exchange_weak_explicit(
    atomic<T>* p, T* expected, typename kk::same<T>::type desired, memory_order, memory_order) {
  typedef typename kk::word<sizeof(T)>::type W;
  W e = kk::bits<W>(*expected);
  W seen = atomicCAS(reinterpret_cast<W*>(&p->value), e, kk::bits<W>(desired));
  if (seen == e) return true;
  *expected = kk::bits<T>(seen);
  return false;
}

// Metal's threadgroup barrier.
namespace mem_flags {
enum { mem_none = 0, mem_device = 1, mem_threadgroup = 2, mem_texture = 4 };
}  // namespace mem_flags
__device__ inline void threadgroup_barrier(int) { __syncthreads(); }
__device__ inline void simdgroup_barrier(int) { __syncwarp(); }

// Metal's SIMD-group functions on a full warp.
template <typename T> __device__ inline T simd_sum(T v) {
  for (int o = WARP_SIZE / 2; o > 0; o /= 2) v = v + __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
template <typename T> __device__ inline T simd_max(T v) {
  for (int o = WARP_SIZE / 2; o > 0; o /= 2) { T w = __shfl_xor_sync(0xffffffffu, v, o); v = v < w ? w : v; }
  return v;
}
template <typename T> __device__ inline T simd_min(T v) {
  for (int o = WARP_SIZE / 2; o > 0; o /= 2) { T w = __shfl_xor_sync(0xffffffffu, v, o); v = w < v ? w : v; }
  return v;
}
template <typename T> __device__ inline T simd_broadcast(T v, uint lane) { return __shfl_sync(0xffffffffu, v, lane); }
template <typename T> __device__ inline T simd_shuffle(T v, uint lane) { return __shfl_sync(0xffffffffu, v, lane); }
template <typename T> __device__ inline T simd_shuffle_down(T v, uint d) { return __shfl_down_sync(0xffffffffu, v, d); }
template <typename T> __device__ inline T simd_shuffle_up(T v, uint d) { return __shfl_up_sync(0xffffffffu, v, d); }
template <typename T> __device__ inline T simd_shuffle_xor(T v, uint m) { return __shfl_xor_sync(0xffffffffu, v, m); }

#endif  // KK_CUDA_PRELUDE
