// kernelkit CUDA prelude, base: the dtypes of kernelkit, layout parameters
// and the atomics of `atomic_outputs`, for bodies in either language.
#ifndef KK_CUDA_PRELUDE
#define KK_CUDA_PRELUDE

#define WARP_SIZE 32

typedef unsigned int uint;
// CUDA's own uint3, by a name no Metal macro touches (the grid parameter).
typedef uint3 kk_cuda_uint3;
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
__device__ inline float to_float(__half v) { return __half2float(v); }
__device__ inline float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename Raw> __device__ inline Raw from_float(float f);
template <typename Raw> struct raw_bits;
template <> struct raw_bits<__half> { typedef __half_raw type; };
template <> struct raw_bits<__nv_bfloat16> { typedef __nv_bfloat16_raw type; };
template <typename Raw> KK_HD constexpr typename raw_bits<Raw>::type raw_of(unsigned short b) { return {b}; }
template <> __device__ inline __half from_float<__half>(float f) { return __float2half(f); }
template <> __device__ inline __nv_bfloat16 from_float<__nv_bfloat16>(float f) { return __float2bfloat16(f); }
template <typename Raw>
struct small_float {
  Raw v;
  small_float() = default;
  KK_HD constexpr small_float(Raw r) : v(r) {}
  template <typename T, typename = enable_if_t<builtin<T>::value>>
  __device__ small_float(T x) : v(from_float<Raw>((float)x)) {}
  template <typename Other>
  __device__ small_float(small_float<Other> o) : v(from_float<Raw>((float)o)) {}
  __device__ operator float() const { return to_float(v); }
  template <typename T> __device__ small_float& operator+=(T x) { return *this = (float)*this + x; }
  template <typename T> __device__ small_float& operator-=(T x) { return *this = (float)*this - x; }
  template <typename T> __device__ small_float& operator*=(T x) { return *this = (float)*this * x; }
  template <typename T> __device__ small_float& operator/=(T x) { return *this = (float)*this / x; }
  __device__ small_float& operator++() { return *this = (float)*this + 1.0f; }
  __device__ small_float& operator--() { return *this = (float)*this - 1.0f; }
  __device__ small_float operator++(int) { small_float o = *this; ++*this; return o; }
  __device__ small_float operator--(int) { small_float o = *this; --*this; return o; }
  // A value from its bits, usable in constant expressions.
  static KK_HD constexpr small_float from_bits(unsigned short b) { return small_float(Raw(raw_of<Raw>(b))); }
  KK_SMALL_FLOAT_OPS(small_float)
};
template <class Raw> struct small<small_float<Raw>> : yes {};
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
namespace kk {
template <class T> struct wrapper<::kk_scalar<T>> : yes { typedef T type; };
}  // namespace kk

#endif  // KK_CUDA_PRELUDE
