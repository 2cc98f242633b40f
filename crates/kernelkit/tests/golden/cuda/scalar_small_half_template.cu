#include <cuda_fp16.h>
#include <cuda_bf16.h>
#define KK_HALF_TYPES 1
// kernelkit: what the CPU and CUDA preludes share below the Metal layer:
// function qualifiers and the few type traits the preludes need (CUDA's
// <type_traits> would cost NVRTC a header parse per compile).
#if defined(__CUDACC_RTC__) || defined(__CUDACC__)
#define KK_CUDA 1
#define KK_FN __device__ inline
#define KK_HD __host__ __device__
#define KK_FORCE __device__ __forceinline__
#else
#define KK_CPU 1
#define KK_FN inline
#define KK_HD
#define KK_FORCE inline __attribute__((always_inline))
#endif
#define KK_CFN KK_HD constexpr inline

namespace kk {
template <class T, T V> struct constant { static constexpr T value = V; typedef T value_type; KK_HD constexpr operator T() const { return V; } };
typedef constant<bool, true> yes;
typedef constant<bool, false> no;
template <bool B, class T = void> struct enable_if {};
template <class T> struct enable_if<true, T> { typedef T type; };
template <bool B, class T = void> using enable_if_t = typename enable_if<B, T>::type;
template <bool B, class T, class F> struct conditional { typedef T type; };
template <class T, class F> struct conditional<false, T, F> { typedef F type; };
template <class A, class B> struct same : no {};
template <class A> struct same<A, A> : yes {};
template <class T> struct remove_cv { typedef T type; };
template <class T> struct remove_cv<const T> { typedef T type; };
template <class T> struct remove_cv<volatile T> { typedef T type; };
template <class T> struct remove_cv<const volatile T> { typedef T type; };
template <class T> struct remove_ref { typedef T type; };
template <class T> struct remove_ref<T&> { typedef T type; };
template <class T> struct remove_ref<T&&> { typedef T type; };
template <class T> using plain_t = typename remove_cv<typename remove_ref<T>::type>::type;
template <class T> T&& declval();

// Built-in arithmetic types (the 16-bit float classes are added by each
// backend's prelude through `small`).
template <class T> struct builtin : no {};
#define KK_BUILTIN(T) template <> struct builtin<T> : yes {};
KK_BUILTIN(bool) KK_BUILTIN(char) KK_BUILTIN(signed char) KK_BUILTIN(unsigned char)
KK_BUILTIN(short) KK_BUILTIN(unsigned short) KK_BUILTIN(int) KK_BUILTIN(unsigned int)
KK_BUILTIN(long) KK_BUILTIN(unsigned long) KK_BUILTIN(long long) KK_BUILTIN(unsigned long long)
KK_BUILTIN(float) KK_BUILTIN(double)
#undef KK_BUILTIN
template <class T> struct builtin_float : no {};
template <> struct builtin_float<float> : yes {};
template <> struct builtin_float<double> : yes {};
// The 16-bit float classes (float16_t, bfloat16_t): specialised by each
// backend's prelude.
template <class T> struct small : no {};
// A scalar: what a vector is made of, and what broadcasts to one.
template <class T> struct scalar : constant<bool, builtin<T>::value || small<T>::value> {};
// A class that stands for a scalar of type `type` (CUDA's 0-d input).
template <class T> struct wrapper : no { typedef T type; };
}  // namespace kk

// Arithmetic of the 16-bit float classes as Metal types it: half with
// half or an integer gives half, with float gives float (computed in float,
// then rounded). A scalar of either kind then matches exactly one operator,
// so `c ? h : -h` and `h * 2` mean what they mean in Metal.
#define KK_SMALL_FLOAT_OPS(SF)                                                                        \
  KK_FN SF operator-() const { return SF(-(float)*this); }                                             \
  KK_FN SF operator+() const { return *this; }                                                         \
  KK_SMALL_FLOAT_OP(SF, +) KK_SMALL_FLOAT_OP(SF, -) KK_SMALL_FLOAT_OP(SF, *) KK_SMALL_FLOAT_OP(SF, /)
#define KK_SMALL_FLOAT_OP(SF, OP)                                                                     \
  friend KK_FN SF operator OP(SF a, SF b) { return SF((float)a OP(float) b); }                        \
  template <class I, kk::enable_if_t<kk::builtin<I>::value && !kk::builtin_float<I>::value, int> = 0>  \
  friend KK_FN SF operator OP(SF a, I b) {                                                              \
    return SF((float)a OP(float) b);                                                                   \
  }                                                                                                    \
  template <class I, kk::enable_if_t<kk::builtin<I>::value && !kk::builtin_float<I>::value, int> = 0>  \
  friend KK_FN SF operator OP(I a, SF b) {                                                              \
    return SF((float)a OP(float) b);                                                                   \
  }                                                                                                    \
  friend KK_FN float operator OP(SF a, float b) { return (float)a OP b; }                              \
  friend KK_FN float operator OP(float a, SF b) { return a OP(float) b; }                              \
  friend KK_FN double operator OP(SF a, double b) { return (double)(float)a OP b; }                    \
  friend KK_FN double operator OP(double a, SF b) { return a OP(double)(float) b; }                    \
  template <class C, kk::enable_if_t<kk::wrapper<C>::value, int> = 0>                                  \
  friend KK_FN auto operator OP(SF a, const C& b) {                                                     \
    return a OP(typename kk::wrapper<C>::type)(b);                                                      \
  }                                                                                                    \
  template <class C, kk::enable_if_t<kk::wrapper<C>::value, int> = 0>                                  \
  friend KK_FN auto operator OP(const C& a, SF b) {                                                     \
    return (typename kk::wrapper<C>::type)(a) OP b;                                                     \
  }
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
// kernelkit: element index -> memory offset of a strided array (MLX's
// `elem_to_loc`). Shape and strides are pointers on the CPU and by-value
// `kk_shape` / `kk_strides` on CUDA; both index like arrays.
template <typename IdxT = int64_t, typename Shape, typename Strides>
KK_FN IdxT elem_to_loc(IdxT elem, const Shape& shape, const Strides& strides, int ndim) {
  IdxT loc = 0;
  for (int i = ndim - 1; i >= 0 && elem > 0; --i) {
    loc += (elem % shape[i]) * IdxT(strides[i]);
    elem /= shape[i];
  }
  return loc;
}
// kernelkit: Metal's atomics over plain storage, for both backends.
// `atomic<T>` has the layout of a T, so outputs declared `atomic<T>*`
// (`atomic_outputs`), pointer casts of plain memory
// (`(device atomic_float*)&out[i]`) and threadgroup variables
// (`threadgroup atomic_int n;`) all work. Every operation is atomic for the
// whole device (Metal's relaxed order is the weakest asked for).
namespace kk {
template <typename T> struct atomic_cell { T value; };
template <typename T> struct ident { typedef T type; };
}  // namespace kk
template <typename T> using atomic = kk::atomic_cell<T>;
enum memory_order {
  memory_order_relaxed = 0,
  memory_order_acquire = 2,
  memory_order_release = 3,
  memory_order_acq_rel = 4,
  memory_order_seq_cst = 5
};
enum thread_scope {
  thread_scope_thread = 0,
  thread_scope_simdgroup = 1,
  thread_scope_threadgroup = 2,
  thread_scope_device = 3
};

namespace kk {
template <typename T> KK_FN T* cell(volatile atomic<T>* p) { return const_cast<T*>(&p->value); }
struct add { template <typename T> KK_FN T operator()(T a, T b) const { return (T)(a + b); } };
struct sub { template <typename T> KK_FN T operator()(T a, T b) const { return (T)(a - b); } };
struct mx { template <typename T> KK_FN T operator()(T a, T b) const { return a < b ? b : a; } };
struct mn { template <typename T> KK_FN T operator()(T a, T b) const { return b < a ? b : a; } };
struct bor { template <typename T> KK_FN T operator()(T a, T b) const { return (T)(a | b); } };
struct band { template <typename T> KK_FN T operator()(T a, T b) const { return (T)(a & b); } };
struct bxor { template <typename T> KK_FN T operator()(T a, T b) const { return (T)(a ^ b); } };
struct put { template <typename T> KK_FN T operator()(T, T b) const { return b; } };

#ifdef KK_CPU
template <typename T> KK_FN T load(T* p) { return std::atomic_ref<T>(*p).load(std::memory_order_relaxed); }
template <typename T> KK_FN void store(T* p, T v) { std::atomic_ref<T>(*p).store(v, std::memory_order_relaxed); }
template <typename T> KK_FN bool cas(T* p, T* expected, T desired) {
  return std::atomic_ref<T>(*p).compare_exchange_strong(*expected, desired, std::memory_order_relaxed);
}
// Read-modify-write with `Op`: native where the hardware has it.
template <typename Op, typename T> KK_FN T rmw(T* p, T v) {
  std::atomic_ref<T> r(*p);
  if constexpr (!builtin_float<T>::value && same<Op, add>::value) {
    return r.fetch_add(v, std::memory_order_relaxed);
  } else if constexpr (!builtin_float<T>::value && same<Op, sub>::value) {
    return r.fetch_sub(v, std::memory_order_relaxed);
  } else {
    T old = r.load(std::memory_order_relaxed);
    while (!r.compare_exchange_weak(old, Op()(old, v), std::memory_order_relaxed)) {}
    return old;
  }
}
#else
template <int N> struct word;
template <> struct word<2> { typedef unsigned short int type; };
template <> struct word<4> { typedef unsigned int type; };
template <> struct word<8> { typedef unsigned long long int type; };
// Reinterprets the bytes of a value (the CUDA counterpart of std::bit_cast).
template <typename To, typename From> KK_FN To bits(const From& v) {
  static_assert(sizeof(To) == sizeof(From), "bits needs equal sizes");
  To t;
  memcpy(&t, &v, sizeof(To));
  return t;
}
template <typename T> KK_FN T load(T* p) { return *reinterpret_cast<volatile T*>(p); }
template <typename T> KK_FN void store(T* p, T v) { *reinterpret_cast<volatile T*>(p) = v; }
// Compare-and-swap of a 1-byte value: on the 4-byte word that holds it.
template <typename T> KK_FN bool cas1(T* p, T* expected, T desired) {
  unsigned long long a = reinterpret_cast<unsigned long long>(p);
  unsigned int* w = reinterpret_cast<unsigned int*>(a & ~3ull);
  unsigned int shift = (unsigned int)(a & 3ull) * 8u;
  unsigned int e = (unsigned int)bits<unsigned char>(*expected);
  unsigned int d = (unsigned int)bits<unsigned char>(desired);
  unsigned int old = *reinterpret_cast<volatile unsigned int*>(w);
  while (true) {
    unsigned int cur = (old >> shift) & 0xffu;
    if (cur != e) { *expected = bits<T>((unsigned char)cur); return false; }
    unsigned int nw = (old & ~(0xffu << shift)) | (d << shift);
    unsigned int seen = atomicCAS(w, old, nw);
    if (seen == old) return true;
    old = seen;
  }
}
template <typename T> KK_FN bool cas(T* p, T* expected, T desired) {
  if constexpr (sizeof(T) == 1) {
    return cas1(p, expected, desired);
  } else {
    typedef typename word<sizeof(T)>::type W;
    W e = bits<W>(*expected);
    W seen = atomicCAS(reinterpret_cast<W*>(p), e, bits<W>(desired));
    if (seen == e) return true;
    *expected = bits<T>(seen);
    return false;
  }
}
template <typename Op, typename T> KK_FN T rmw_loop(T* p, T v) {
  T old = load(p);
  while (!cas(p, &old, Op()(old, v))) {}
  return old;
}
// Native atomics where CUDA has them, a compare-and-swap loop elsewhere.
template <typename Op, typename T> KK_FN T rmw(T* p, T v) {
  typedef unsigned long long ull;
  constexpr bool i32 = same<T, int>::value || same<T, unsigned int>::value;
  constexpr bool i64 = (same<T, long long>::value || same<T, long>::value) && sizeof(T) == 8;
  constexpr bool u64 = (same<T, unsigned long long>::value || same<T, unsigned long>::value) && sizeof(T) == 8;
  if constexpr (same<Op, add>::value && (i32 || same<T, float>::value || same<T, double>::value)) {
    return atomicAdd(p, v);
  } else if constexpr (same<Op, add>::value && (i64 || u64)) {
    return (T)atomicAdd(reinterpret_cast<ull*>(p), (ull)v);
  } else if constexpr (same<Op, sub>::value && i32) {
    return atomicSub(p, v);
  } else if constexpr (same<Op, mx>::value && i32) {
    return atomicMax(p, v);
  } else if constexpr (same<Op, mx>::value && i64) {
    return (T)atomicMax(reinterpret_cast<long long*>(p), (long long)v);
  } else if constexpr (same<Op, mx>::value && u64) {
    return (T)atomicMax(reinterpret_cast<ull*>(p), (ull)v);
  } else if constexpr (same<Op, mn>::value && i32) {
    return atomicMin(p, v);
  } else if constexpr (same<Op, mn>::value && i64) {
    return (T)atomicMin(reinterpret_cast<long long*>(p), (long long)v);
  } else if constexpr (same<Op, mn>::value && u64) {
    return (T)atomicMin(reinterpret_cast<ull*>(p), (ull)v);
  } else if constexpr (same<Op, bor>::value && i32) {
    return atomicOr(p, v);
  } else if constexpr (same<Op, band>::value && i32) {
    return atomicAnd(p, v);
  } else if constexpr (same<Op, bxor>::value && i32) {
    return atomicXor(p, v);
  } else if constexpr (same<Op, put>::value && (i32 || same<T, float>::value)) {
    return atomicExch(p, v);
  } else {
    return rmw_loop<Op>(p, v);
  }
}
#endif
}  // namespace kk

#define KK_ATOMIC_RMW(NAME, OP)                                                                  \
  template <typename T>                                                                          \
  KK_FN T NAME(volatile atomic<T>* p, typename kk::ident<T>::type v, memory_order = memory_order_relaxed, \
               thread_scope = thread_scope_device) {                                             \
    return kk::rmw<kk::OP>(kk::cell(p), v);                                                      \
  }
KK_ATOMIC_RMW(atomic_fetch_add_explicit, add)
KK_ATOMIC_RMW(atomic_fetch_sub_explicit, sub)
KK_ATOMIC_RMW(atomic_fetch_max_explicit, mx)
KK_ATOMIC_RMW(atomic_fetch_min_explicit, mn)
KK_ATOMIC_RMW(atomic_fetch_or_explicit, bor)
KK_ATOMIC_RMW(atomic_fetch_and_explicit, band)
KK_ATOMIC_RMW(atomic_fetch_xor_explicit, bxor)
KK_ATOMIC_RMW(atomic_exchange_explicit, put)
#undef KK_ATOMIC_RMW
template <typename T>
KK_FN void atomic_store_explicit(volatile atomic<T>* p, typename kk::ident<T>::type v,
                                 memory_order = memory_order_relaxed, thread_scope = thread_scope_device) {
  kk::store(kk::cell(p), v);
}
template <typename T>
KK_FN T atomic_load_explicit(volatile atomic<T>* p, memory_order = memory_order_relaxed,
                             thread_scope = thread_scope_device) {
  return kk::load(kk::cell(p));
}
// Metal's weak compare-exchange never fails spuriously here.
template <typename T>
KK_FN bool atomic_compare_exchange_weak_explicit(volatile atomic<T>* p, T* expected,
                                                 typename kk::ident<T>::type desired, memory_order = memory_order_relaxed,
                                                 memory_order = memory_order_relaxed,
                                                 thread_scope = thread_scope_device) {
  return kk::cas(kk::cell(p), expected, desired);
}
template <typename T>
KK_FN bool atomic_compare_exchange_strong_explicit(volatile atomic<T>* p, T* expected,
                                                   typename kk::ident<T>::type desired,
                                                   memory_order = memory_order_relaxed,
                                                   memory_order = memory_order_relaxed,
                                                   thread_scope = thread_scope_device) {
  return kk::cas(kk::cell(p), expected, desired);
}
// ---- Metal compatibility layer -------------------------------------------
// What a body written for Metal (MLX's `metal_kernel`) uses of the Metal
// Shading Language, in C++ that g++/clang++ (the CPU backend) and NVRTC
// (CUDA) both compile. Organised by the chapters of the MSL specification:
// this file is chapter 2 (data types) and 3 (operators). Swizzles
// (`v.xy`) and address spaces reach these types through the lowering pass
// (codegen/lower.rs), which rewrites those spellings.

namespace metal {
// ---- 2.1 Scalar types
typedef unsigned char uchar;
typedef unsigned short ushort;
using ::uint;
typedef unsigned long ulong;
#ifdef KK_CPU
typedef ::float16_t half;
typedef ::bfloat16_t bfloat;
#endif

// ---- 2.2 Vector types: vec<T, N>, N = 2, 3, 4. As in Metal, a 3-vector
// takes the size and alignment of a 4-vector (`float3` is 16 bytes); the
// packed types (2.2.3) do not.
template <typename T, int N> struct vec;
template <typename T, int N> struct packed_vec;
}  // namespace metal

namespace kk {
template <int... I> struct sw {};
template <class T, int N> struct arr { T v[N]; };
template <class T> struct vec_info { static constexpr int n = 0; static constexpr bool packed = false; typedef T elem; };
template <class T, int N> struct vec_info<metal::vec<T, N>> { static constexpr int n = N; static constexpr bool packed = false; typedef T elem; };
template <class T, int N> struct vec_info<metal::packed_vec<T, N>> { static constexpr int n = N; static constexpr bool packed = true; typedef T elem; };
// How many components an argument of a vector constructor gives.
template <class A> struct ncomp : constant<int, scalar<A>::value ? 1 : vec_info<A>::n> {};
// A vector type: vec or packed_vec.
template <class A> struct is_vec : constant<bool, (vec_info<A>::n > 0)> {};
template <class T, int N> struct packer {
  arr<T, N> a{};
  int k = 0;
  template <class S, enable_if_t<scalar<S>::value, int> = 0> KK_CFN void add(const S& s) { a.v[k++] = T(s); }
  template <class V, enable_if_t<is_vec<V>::value, int> = 0> KK_CFN void add(const V& v) {
    for (int i = 0; i < vec_info<V>::n; ++i) a.v[k++] = T(v.get(i));
  }
};
// The components of a constructor's arguments, in order, as T.
template <class T, int N, class... A> KK_CFN arr<T, N> gather(const A&... a) {
  packer<T, N> p;
  (p.add(a), ...);
  return p.a;
}
template <class T, int N> KK_CFN arr<T, N> splat(T s) {
  arr<T, N> a{};
  for (int i = 0; i < N; ++i) a.v[i] = s;
  return a;
}
// The components of another vector, as T.
template <class T, int N, class V> KK_CFN arr<T, N> comps(const V& v) {
  arr<T, N> a{};
  for (int i = 0; i < N; ++i) a.v[i] = T(v.get(i));
  return a;
}
// A written swizzle (`v.zx = w`): a reference to some components.
template <class T, int... I> struct swref {
  T* e;
  static constexpr int K = sizeof...(I);
  KK_FN operator metal::vec<T, K>() const { return metal::vec<T, K>(arr<T, K>{{e[I]...}}); }
  KK_FN swref& operator=(const metal::vec<T, K>& v) {
    int k = 0;
    ((e[I] = v[k++]), ...);
    return *this;
  }
  template <class S, enable_if_t<scalar<S>::value, int> = 0> KK_FN swref& operator=(const S& s) {
    ((e[I] = T(s)), ...);
    return *this;
  }
#define KK_SWREF_OP(OP)                                                                               \
  template <class A> KK_FN swref& operator OP##=(const A& o) {                                        \
    return *this = metal::vec<T, K>(*this) OP o;                                                      \
  }
  KK_SWREF_OP(+) KK_SWREF_OP(-) KK_SWREF_OP(*) KK_SWREF_OP(/) KK_SWREF_OP(%)
  KK_SWREF_OP(&) KK_SWREF_OP(|) KK_SWREF_OP(^) KK_SWREF_OP(<<) KK_SWREF_OP(>>)
#undef KK_SWREF_OP
};
}  // namespace kk

// The members every vector type has: construction (broadcast, component
// lists, explicit conversion from other element types, implicit between a
// vector and its packed form), indexing, swizzles (read: kk_swz, written:
// kk_swr), increments. (Other operators are below, chapter 3.)
#define KK_VEC_MEMBERS(V, OTHER, N)                                                                   \
  V() = default;                                                                                      \
  KK_HD constexpr V(const OTHER<T, N>& o) : V(kk::comps<T, N>(o)) {}                                  \
  template <class U, kk::enable_if_t<!kk::same<U, T>::value, int> = 0>                                \
  KK_HD explicit constexpr V(const vec<U, N>& o) : V(kk::comps<T, N>(o)) {}                           \
  template <class U, kk::enable_if_t<!kk::same<U, T>::value, int> = 0>                                \
  KK_HD explicit constexpr V(const packed_vec<U, N>& o) : V(kk::comps<T, N>(o)) {}                    \
  template <class S, kk::enable_if_t<kk::scalar<S>::value, int> = 0>                                  \
  KK_HD constexpr V(const S& s) : V(kk::splat<T, N>(T(s))) {}                                        \
  template <class A, class B, class... C,                                                             \
            kk::enable_if_t<(kk::ncomp<A>::value > 0 && kk::ncomp<B>::value > 0) &&                  \
                                (kk::ncomp<A>::value + kk::ncomp<B>::value + (0 + ... + kk::ncomp<C>::value)) == N, \
                            int> = 0>                                                                 \
  KK_HD constexpr V(const A& a, const B& b, const C&... c) : V(kk::gather<T, N>(a, b, c...)) {}      \
  KK_FN T& operator[](int i) { return kk_e[i]; }                                                     \
  KK_FN const T& operator[](int i) const { return kk_e[i]; }                                         \
  KK_FN volatile T& operator[](int i) volatile { return kk_e[i]; }                                   \
  template <int... I> KK_HD constexpr vec<T, sizeof...(I)> kk_swz(kk::sw<I...>) const {              \
    return vec<T, sizeof...(I)>(kk::arr<T, sizeof...(I)>{{get(I)...}});                               \
  }                                                                                                   \
  template <int... I> KK_FN kk::swref<T, I...> kk_swr(kk::sw<I...>) { return kk::swref<T, I...>{kk_e}; } \
  KK_FN V& operator++() { for (int i = 0; i < N; ++i) ++kk_e[i]; return *this; }                      \
  KK_FN V& operator--() { for (int i = 0; i < N; ++i) --kk_e[i]; return *this; }                      \
  KK_FN V operator++(int) { V o = *this; ++*this; return o; }                                         \
  KK_FN V operator--(int) { V o = *this; --*this; return o; }

namespace metal {
template <typename T> struct alignas(2 * sizeof(T)) vec<T, 2> {
  union { struct { T x, y; }; struct { T r, g; }; T kk_e[2]; };
  KK_HD constexpr vec(const kk::arr<T, 2>& a) : x(a.v[0]), y(a.v[1]) {}
  KK_HD constexpr T get(int i) const { return i == 0 ? x : y; }
  KK_VEC_MEMBERS(vec, packed_vec, 2)
};
template <typename T> struct alignas(4 * sizeof(T)) vec<T, 3> {
  union { struct { T x, y, z; }; struct { T r, g, b; }; T kk_e[4]; };
  KK_HD constexpr vec(const kk::arr<T, 3>& a) : x(a.v[0]), y(a.v[1]), z(a.v[2]) {}
  KK_HD constexpr T get(int i) const { return i == 0 ? x : i == 1 ? y : z; }
  KK_VEC_MEMBERS(vec, packed_vec, 3)
#ifdef KK_CUDA
  // CUDA's own position types (blockIdx, blockDim): Metal's position
  // attributes are built from them.
  KK_HD constexpr vec(const ::uint3& c) : x(T(c.x)), y(T(c.y)), z(T(c.z)) {}
  KK_HD constexpr vec(const ::dim3& c) : x(T(c.x)), y(T(c.y)), z(T(c.z)) {}
#endif
};
template <typename T> struct alignas(4 * sizeof(T)) vec<T, 4> {
  union { struct { T x, y, z, w; }; struct { T r, g, b, a; }; T kk_e[4]; };
  KK_HD constexpr vec(const kk::arr<T, 4>& a) : x(a.v[0]), y(a.v[1]), z(a.v[2]), w(a.v[3]) {}
  KK_HD constexpr T get(int i) const { return i == 0 ? x : i == 1 ? y : i == 2 ? z : w; }
  KK_VEC_MEMBERS(vec, packed_vec, 4)
};

// ---- 2.2.3 Packed vectors: no padding, the alignment of T; convert to and
// from vectors implicitly.
template <typename T> struct packed_vec<T, 2> {
  union { struct { T x, y; }; struct { T r, g; }; T kk_e[2]; };
  KK_HD constexpr packed_vec(const kk::arr<T, 2>& a) : x(a.v[0]), y(a.v[1]) {}
  KK_HD constexpr T get(int i) const { return i == 0 ? x : y; }
  KK_VEC_MEMBERS(packed_vec, vec, 2)
};
template <typename T> struct packed_vec<T, 3> {
  union { struct { T x, y, z; }; struct { T r, g, b; }; T kk_e[3]; };
  KK_HD constexpr packed_vec(const kk::arr<T, 3>& a) : x(a.v[0]), y(a.v[1]), z(a.v[2]) {}
  KK_HD constexpr T get(int i) const { return i == 0 ? x : i == 1 ? y : z; }
  KK_VEC_MEMBERS(packed_vec, vec, 3)
};
template <typename T> struct packed_vec<T, 4> {
  union { struct { T x, y, z, w; }; struct { T r, g, b, a; }; T kk_e[4]; };
  KK_HD constexpr packed_vec(const kk::arr<T, 4>& a) : x(a.v[0]), y(a.v[1]), z(a.v[2]), w(a.v[3]) {}
  KK_HD constexpr T get(int i) const { return i == 0 ? x : i == 1 ? y : i == 2 ? z : w; }
  KK_VEC_MEMBERS(packed_vec, vec, 4)
};
#undef KK_VEC_MEMBERS
}  // namespace metal

namespace kk {
// Elementwise results: r[i] = f(a[i]) and friends, for the operators and
// the function chapters.
template <class R, int N, class F> KK_FN metal::vec<R, N> build(F f) {
  metal::vec<R, N> r;
  for (int i = 0; i < N; ++i) r.kk_e[i] = f(i);
  return r;
}
}  // namespace kk

// ---- Chapter 3: operators. Vector-vector operators are plain friends;
// vector-scalar ones are templates over the scalar, so a scalar of a class
// type (half, bfloat) matches them exactly and never turns into a vector
// first (which would make the call ambiguous).
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

// ---- 2.2.x Vector type names. CUDA declares its own `float4`, `uint3`,
// ... in the global namespace, so there bodies reach these through macros
// (`#define float4 kk_float4`, see codegen/cuda.rs): each name also has a
// `kk_` twin.
#ifdef KK_CUDA
#define KK_VEC_TWINS(T, NAME)                                                                          \
  typedef vec<T, 2> kk_##NAME##2;                                                                      \
  typedef vec<T, 3> kk_##NAME##3;                                                                      \
  typedef vec<T, 4> kk_##NAME##4;                                                                      \
  typedef packed_vec<T, 2> kk_packed_##NAME##2;                                                        \
  typedef packed_vec<T, 3> kk_packed_##NAME##3;                                                        \
  typedef packed_vec<T, 4> kk_packed_##NAME##4;
#else
#define KK_VEC_TWINS(T, NAME)
#endif
#define KK_VEC_NAMES(T, NAME)                                                                          \
  typedef vec<T, 2> NAME##2;                                                                           \
  typedef vec<T, 3> NAME##3;                                                                           \
  typedef vec<T, 4> NAME##4;                                                                           \
  typedef packed_vec<T, 2> packed_##NAME##2;                                                           \
  typedef packed_vec<T, 3> packed_##NAME##3;                                                           \
  typedef packed_vec<T, 4> packed_##NAME##4;                                                           \
  KK_VEC_TWINS(T, NAME)
KK_VEC_NAMES(bool, bool)
KK_VEC_NAMES(char, char)
KK_VEC_NAMES(unsigned char, uchar)
KK_VEC_NAMES(short, short)
KK_VEC_NAMES(unsigned short, ushort)
KK_VEC_NAMES(int, int)
KK_VEC_NAMES(unsigned int, uint)
KK_VEC_NAMES(long, long)
KK_VEC_NAMES(unsigned long, ulong)
KK_VEC_NAMES(float, float)
#if defined(KK_CPU) || defined(KK_HALF_TYPES)
KK_VEC_NAMES(::float16_t, half)
KK_VEC_NAMES(::bfloat16_t, bfloat)
#endif
#undef KK_VEC_NAMES
#undef KK_VEC_TWINS
}  // namespace metal
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
// ---- 2.3 Matrix types (column-major: floatCxR has C columns of R
// components), 6.6 matrix functions, and metal::array (2.x).
namespace metal {
template <class T, int C, int R> struct matrix {
  vec<T, R> columns[C];
  matrix() = default;
  // A scalar fills the diagonal.
  template <class S, kk::enable_if_t<kk::scalar<S>::value, int> = 0> KK_FN explicit matrix(const S& s) {
    for (int c = 0; c < C; ++c)
      for (int r = 0; r < R; ++r) columns[c][r] = c == r ? T(s) : T(0);
  }
  // C column vectors, or C * R scalars in column order.
  template <class A, class B, class... More,
            kk::enable_if_t<(2 + sizeof...(More) == C) || (2 + sizeof...(More) == C * R), int> = 0>
  KK_FN matrix(const A& a, const B& b, const More&... more) {
    if constexpr (2 + sizeof...(More) == C && kk::is_vec<A>::value) {
      const vec<T, R> cols[C] = {vec<T, R>(a), vec<T, R>(b), vec<T, R>(more)...};
      for (int c = 0; c < C; ++c) columns[c] = cols[c];
    } else {
      const T v[C * R] = {T(a), T(b), T(more)...};
      for (int c = 0; c < C; ++c)
        for (int r = 0; r < R; ++r) columns[c][r] = v[c * R + r];
    }
  }
  template <class U> KK_FN explicit matrix(const matrix<U, C, R>& o) {
    for (int c = 0; c < C; ++c) columns[c] = vec<T, R>(o.columns[c]);
  }
  KK_FN vec<T, R>& operator[](int c) { return columns[c]; }
  KK_FN const vec<T, R>& operator[](int c) const { return columns[c]; }
};
template <class T, int C, int R> KK_FN matrix<T, C, R> operator+(const matrix<T, C, R>& a, const matrix<T, C, R>& b) {
  matrix<T, C, R> m;
  for (int c = 0; c < C; ++c) m.columns[c] = a.columns[c] + b.columns[c];
  return m;
}
template <class T, int C, int R> KK_FN matrix<T, C, R> operator-(const matrix<T, C, R>& a, const matrix<T, C, R>& b) {
  matrix<T, C, R> m;
  for (int c = 0; c < C; ++c) m.columns[c] = a.columns[c] - b.columns[c];
  return m;
}
template <class T, int C, int R, class S, kk::enable_if_t<kk::scalar<S>::value, int> = 0>
KK_FN matrix<T, C, R> operator*(const matrix<T, C, R>& a, const S& s) {
  matrix<T, C, R> m;
  for (int c = 0; c < C; ++c) m.columns[c] = a.columns[c] * s;
  return m;
}
template <class T, int C, int R, class S, kk::enable_if_t<kk::scalar<S>::value, int> = 0>
KK_FN matrix<T, C, R> operator*(const S& s, const matrix<T, C, R>& a) {
  return a * s;
}
// matrix * column vector, row vector * matrix, matrix * matrix.
template <class T, int C, int R> KK_FN vec<T, R> operator*(const matrix<T, C, R>& m, const vec<T, C>& v) {
  vec<T, R> r = m.columns[0] * v[0];
  for (int c = 1; c < C; ++c) r = r + m.columns[c] * v[c];
  return r;
}
template <class T, int C, int R> KK_FN vec<T, C> operator*(const vec<T, R>& v, const matrix<T, C, R>& m) {
  vec<T, C> r;
  for (int c = 0; c < C; ++c) r[c] = dot(v, m.columns[c]);
  return r;
}
template <class T, int C, int R, int K>
KK_FN matrix<T, K, R> operator*(const matrix<T, C, R>& a, const matrix<T, K, C>& b) {
  matrix<T, K, R> m;
  for (int k = 0; k < K; ++k) m.columns[k] = a * b.columns[k];
  return m;
}
template <class T, int C, int R, class A> KK_FN matrix<T, C, R>& operator*=(matrix<T, C, R>& a, const A& b) {
  return a = a * b;
}
template <class T, int C, int R> KK_FN matrix<T, C, R>& operator+=(matrix<T, C, R>& a, const matrix<T, C, R>& b) {
  return a = a + b;
}
template <class T, int C, int R> KK_FN matrix<T, C, R>& operator-=(matrix<T, C, R>& a, const matrix<T, C, R>& b) {
  return a = a - b;
}
template <class T, int C, int R> KK_FN matrix<T, R, C> transpose(const matrix<T, C, R>& a) {
  matrix<T, R, C> m;
  for (int c = 0; c < C; ++c)
    for (int r = 0; r < R; ++r) m.columns[r][c] = a.columns[c][r];
  return m;
}
template <class T> KK_FN T determinant(const matrix<T, 2, 2>& m) {
  return T(m[0][0] * m[1][1] - m[1][0] * m[0][1]);
}
template <class T> KK_FN T determinant(const matrix<T, 3, 3>& m) {
  return T(dot(m[0], cross(m[1], m[2])));
}
template <class T> KK_FN T determinant(const matrix<T, 4, 4>& m) {
  // Expansion along the first column.
  T d = T(0);
  for (int i = 0; i < 4; ++i) {
    matrix<T, 3, 3> s;
    for (int c = 1; c < 4; ++c)
      for (int r = 0, k = 0; r < 4; ++r)
        if (r != i) s.columns[c - 1][k++] = m[c][r];
    T term = T(m[0][i] * determinant(s));
    d = (i % 2 == 0) ? T(d + term) : T(d - term);
  }
  return d;
}
#define KK_MAT_NAMES(T, NAME)                                                                          \
  typedef matrix<T, 2, 2> NAME##2x2;                                                                   \
  typedef matrix<T, 2, 3> NAME##2x3;                                                                   \
  typedef matrix<T, 2, 4> NAME##2x4;                                                                   \
  typedef matrix<T, 3, 2> NAME##3x2;                                                                   \
  typedef matrix<T, 3, 3> NAME##3x3;                                                                   \
  typedef matrix<T, 3, 4> NAME##3x4;                                                                   \
  typedef matrix<T, 4, 2> NAME##4x2;                                                                   \
  typedef matrix<T, 4, 3> NAME##4x3;                                                                   \
  typedef matrix<T, 4, 4> NAME##4x4;
KK_MAT_NAMES(float, float)
#if defined(KK_CPU) || defined(KK_HALF_TYPES)
KK_MAT_NAMES(::float16_t, half)
#endif
#undef KK_MAT_NAMES

// metal::array<T, N>: a fixed array with size() and iteration.
template <class T, unsigned long N> struct array {
  T _elems[N > 0 ? N : 1];
  KK_FN T& operator[](unsigned long i) { return _elems[i]; }
  KK_FN const T& operator[](unsigned long i) const { return _elems[i]; }
  static KK_CFN unsigned long size() { return N; }
  KK_FN T* begin() { return _elems; }
  KK_FN T* end() { return _elems + N; }
  KK_FN const T* begin() const { return _elems; }
  KK_FN const T* end() const { return _elems + N; }
  KK_FN T* data() { return _elems; }
  KK_FN const T* data() const { return _elems; }
};
}  // namespace metal
// ---- 2.5 / 6.13 Atomic types and functions: the prelude's atomics (for
// device memory reached through any pointer, and threadgroup variables)
// under Metal's names.
namespace metal {
using ::atomic;
typedef atomic<int> atomic_int;
typedef atomic<unsigned int> atomic_uint;
typedef atomic<bool> atomic_bool;
typedef atomic<unsigned long> atomic_ulong;
typedef atomic<long> atomic_long;
typedef atomic<float> atomic_float;
using ::memory_order;
using ::memory_order_relaxed;
using ::memory_order_acquire;
using ::memory_order_release;
using ::memory_order_acq_rel;
using ::memory_order_seq_cst;
using ::thread_scope;
using ::thread_scope_thread;
using ::thread_scope_simdgroup;
using ::thread_scope_threadgroup;
using ::thread_scope_device;
using ::atomic_store_explicit;
using ::atomic_load_explicit;
using ::atomic_exchange_explicit;
using ::atomic_compare_exchange_weak_explicit;
using ::atomic_compare_exchange_strong_explicit;
using ::atomic_fetch_add_explicit;
using ::atomic_fetch_sub_explicit;
using ::atomic_fetch_and_explicit;
using ::atomic_fetch_or_explicit;
using ::atomic_fetch_xor_explicit;
using ::atomic_fetch_min_explicit;
using ::atomic_fetch_max_explicit;
}  // namespace metal
// ---- 6.9.2 SIMD-group and quad functions: what both backends share.
// Lanes are the threads of a simdgroup (32 consecutive threads of a
// threadgroup; quads: 4 consecutive lanes). A function works over the
// active lanes: those that reach the call together. Its operation is
// computed per segment of W lanes (W = 32 for simd_*, 4 for quad_*).
namespace kk {
// A call site of a SIMD-group function in the user's code (numbered by the
// lowering pass; 0: not numbered). On the CPU, lanes parked at different
// sites never share an operation, as divergent paths on a GPU do not.
template <int N> struct site { static constexpr int value = N; };
namespace simd {
struct add {
  template <class T> static KK_FN T f(const T& a, const T& b) { return T(a + b); }
  template <class T> static KK_FN T identity() { return T(0); }
};
struct mul {
  template <class T> static KK_FN T f(const T& a, const T& b) { return T(a * b); }
  template <class T> static KK_FN T identity() { return T(1); }
};
struct min_ { template <class T> static KK_FN T f(const T& a, const T& b) { return T(metal::min(a, b)); } };
struct max_ { template <class T> static KK_FN T f(const T& a, const T& b) { return T(metal::max(a, b)); } };
struct and_ { template <class T> static KK_FN T f(const T& a, const T& b) { return T(a & b); } };
struct or_ { template <class T> static KK_FN T f(const T& a, const T& b) { return T(a | b); } };
struct xor_ { template <class T> static KK_FN T f(const T& a, const T& b) { return T(a ^ b); } };

template <int W> KK_FN unsigned seg_bits() { return W == 32 ? 0xffffffffu : ((1u << W) - 1u); }
// Shuffle kinds, and the source lane of lane l (an absolute lane) for one:
// `fill` says whether the value comes from the filling argument.
enum { BY_INDEX, UP, DOWN, XOR, ROTATE_UP, ROTATE_DOWN, FILL_UP, FILL_DOWN, FIRST };
template <int W> KK_FN int source(int kind, int l, unsigned arg, unsigned modulo, bool* fill) {
  const int base = l & ~(W - 1), i = l - base;
  const int d = (int)arg;
  *fill = false;
  switch (kind) {
    case BY_INDEX: return base + (int)(arg & (unsigned)(W - 1));
    case UP: return i >= d ? l - d : l;
    case DOWN: return i + d < W ? l + d : l;
    case XOR: return base + ((i ^ d) & (W - 1));
    case ROTATE_UP: return base + (((i - d) % W) + W) % W;
    case ROTATE_DOWN: return base + (i + d) % W;
    case FILL_UP: {
      const int mdl = modulo ? (int)modulo : W, j = i % mdl, sb = l - j;
      if (j >= d) return l - d;
      *fill = true;
      return sb + j + mdl - d;
    }
    case FILL_DOWN: {
      const int mdl = modulo ? (int)modulo : W, j = i % mdl, sb = l - j;
      if (j + d < mdl) return l + d;
      *fill = true;
      return sb + j + d - mdl;
    }
    default: return l;
  }
}
enum { BALLOT, ALL, ANY, ACTIVE, IS_FIRST };
}  // namespace simd
// The pair of an 8x8 SIMD-group matrix lane l owns: its row and first
// column (Apple's layout, as MLX's steel kernels use it).
KK_FN int sm_row(unsigned l) { return int(((l / 4) & 4) + ((l / 2) % 4)); }
KK_FN int sm_col(unsigned l) { return int(((l / 4) & 2) * 2 + (l % 2) * 2); }
namespace simd {
// Ballot and active-lane bits of a segment (bit i: lane i of the segment).
struct vote_bits {
  unsigned long long bits, active;
};
}  // namespace simd
}  // namespace kk
// ---- 6.9 Threadgroup and SIMD-group execution on CUDA: a threadgroup is
// a block, a simdgroup a warp. Every SIMD-group function works over the
// lanes active at the call (`__activemask()`): a full-warp mask with some
// lanes inactive would wait forever (or read garbage) on an sm_70+ GPU.
// Lanes are counted in the order of the active mask (rank r: the r-th
// active lane), so scans and reductions over a partial warp are exact.
// (The call site S matters on the CPU only.)
namespace kk {
namespace simd {
KK_FN unsigned lane_id() {
  unsigned l;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(l));
  return l;
}
// Any value, shuffled word by word.
template <class T> KK_FN T shfl(unsigned mask, const T& v, int src) {
  constexpr int words = (int)((sizeof(T) + 3) / 4);
  unsigned u[words] = {};
  memcpy(u, &v, sizeof(T));
  for (int k = 0; k < words; ++k) u[k] = __shfl_sync(mask, u[k], src);
  T r;
  memcpy(&r, u, sizeof(T));
  return r;
}
// The lane of the n-th (from 0) set bit of m.
KK_FN int nth_lane(unsigned m, unsigned n) {
  int pos = 0;
  for (int w = 16; w > 0; w >>= 1) {
    const unsigned lo = __popc(m & ((1u << w) - 1u));
    if (n >= lo) {
      n -= lo;
      m >>= w;
      pos += w;
    }
  }
  return pos;
}
KK_FN unsigned lane_id_of_thread() { return lane_id(); }
// Every active lane's own pair of an 8x8 matrix, into every lane's copy.
template <class T> KK_FN void gather_pairs(T* m) {
  const unsigned mask = __activemask(), lane = lane_id();
  const metal::vec<T, 2> own(m[sm_row(lane) * 8 + sm_col(lane)], m[sm_row(lane) * 8 + sm_col(lane) + 1]);
  for (unsigned s = 0; s < 32; ++s) {
    if (!(mask >> s & 1u)) continue;
    const metal::vec<T, 2> p = shfl(mask, own, (int)s);
    m[sm_row(s) * 8 + sm_col(s)] = p.x;
    m[sm_row(s) * 8 + sm_col(s) + 1] = p.y;
  }
}
template <int W> KK_FN unsigned segment(unsigned lane) { return seg_bits<W>() << (lane & ~(unsigned)(W - 1)); }

template <class Op, int W, class S, class T> KK_FN T reduce(const T& x) {
  const unsigned mask = __activemask(), lane = lane_id();
  T v = x;
  if (mask == 0xffffffffu) {
    for (int o = W / 2; o > 0; o >>= 1) v = Op::f(v, shfl(mask, v, (int)(lane ^ (unsigned)o)));
    return v;
  }
  // Tree over ranks: after the step of width o, rank r holds the segment's
  // ranks [r, r + 2o); rank 0 ends with all of them.
  const unsigned m = mask & segment<W>(lane);
  const int n = __popc(m), rank = __popc(m & ((1u << lane) - 1u));
  for (int o = 1; o < W; o <<= 1) {
    const bool has = rank + o < n;
    const T w = shfl(mask, v, has ? nth_lane(m, (unsigned)(rank + o)) : (int)lane);
    if (has) v = Op::f(v, w);
  }
  return shfl(mask, v, nth_lane(m, 0));
}
template <class Op, int W, bool Inclusive, class S, class T> KK_FN T scan(const T& x) {
  const unsigned mask = __activemask(), lane = lane_id();
  const unsigned m = mask & segment<W>(lane);
  const bool full = mask == 0xffffffffu;
  const int rank = __popc(m & ((1u << lane) - 1u));
  T v = x;
  for (int o = 1; o < W; o <<= 1) {
    const bool has = rank >= o;
    const int src = !has ? (int)lane : full ? (int)lane - o : nth_lane(m, (unsigned)(rank - o));
    const T w = shfl(mask, v, src);
    if (has) v = Op::f(w, v);
  }
  if (Inclusive) return v;
  const int src = rank == 0 ? (int)lane : full ? (int)lane - 1 : nth_lane(m, (unsigned)(rank - 1));
  const T e = shfl(mask, v, src);
  return rank == 0 ? Op::template identity<T>() : e;
}
template <int Kind, int W, class S, class T> KK_FN T shuffle(const T& x, unsigned arg) {
  const unsigned mask = __activemask(), lane = lane_id();
  bool fill;
  const int s = Kind == FIRST ? __ffs(mask & segment<W>(lane)) - 1 : source<W>(Kind, (int)lane, arg, 0, &fill);
  const T r = shfl(mask, x, s);
  // A source lane outside the active set: the caller's own value (as on the CPU).
  return (mask >> s & 1u) ? r : x;
}
template <int Kind, int W, class S, class T> KK_FN T fill(const T& x, const T& filling, unsigned delta, unsigned modulo) {
  const unsigned mask = __activemask(), lane = lane_id();
  bool from_fill;
  const int s = source<W>(Kind, (int)lane, delta, modulo, &from_fill);
  const T a = shfl(mask, x, s);
  const T b = shfl(mask, filling, s);
  if (!(mask >> s & 1u)) return from_fill ? filling : x;
  return from_fill ? b : a;
}
template <int Kind, int W, class S = site<0>> KK_FN vote_bits vote_mask(bool p) {
  const unsigned mask = __activemask(), lane = lane_id();
  const unsigned base = lane & ~(unsigned)(W - 1);
  const unsigned yes = __ballot_sync(mask, p);
  vote_bits r;
  r.active = (mask >> base) & seg_bits<W>();
  r.bits = Kind == ACTIVE ? r.active : ((yes >> base) & seg_bits<W>());
  return r;
}
template <int Kind, int W, class S> KK_FN bool vote(bool p) {
  const unsigned lane = lane_id();
  const vote_bits v = vote_mask<BALLOT, W>(p);
  switch (Kind) {
    case ALL: return v.bits == v.active;
    case ANY: return v.bits != 0;
    default: return (lane & (unsigned)(W - 1)) == (unsigned)(__ffs((unsigned)v.active) - 1);
  }
}
}  // namespace simd
}  // namespace kk

namespace metal {
KK_FN void threadgroup_barrier(int = 0) { __syncthreads(); }
KK_FN void simdgroup_barrier(int = 0) { __syncwarp(__activemask()); }
KK_FN void atomic_thread_fence(int = 0, memory_order = memory_order_seq_cst, thread_scope = thread_scope_device) {
  __threadfence();
}
}  // namespace metal
// ---- 6.9.1 Threadgroup synchronization flags, 6.9.2 SIMD-group and quad
// functions: the API, over each backend's primitives (group_cpu.h,
// group_cuda.h). T is any scalar or vector (shuffles: any trivially
// copyable value; and/or/xor: integers).
namespace metal {
namespace mem_flags {
enum { mem_none = 0, mem_device = 1, mem_threadgroup = 2, mem_texture = 4, mem_threadgroup_imageblock = 8, mem_object_data = 16 };
}  // namespace mem_flags
// The result of a vote: a bit per lane (for quads, per lane of the quad).
template <class V> struct kk_vote {
  typedef V vote_t;
  vote_t kk_bits;
  vote_t kk_active;
  explicit constexpr kk_vote(vote_t v = 0) : kk_bits(v), kk_active(vote_t(~vote_t(0))) {}
  constexpr kk_vote(vote_t v, vote_t active) : kk_bits(v), kk_active(active) {}
  explicit constexpr operator vote_t() const { return kk_bits; }
  // Whether every active lane voted true / whether any did.
  constexpr bool all() const { return (kk_bits & kk_active) == kk_active; }
  constexpr bool any() const { return kk_bits != 0; }
};
typedef kk_vote<unsigned long> simd_vote;
typedef kk_vote<unsigned short> quad_vote;

#define KK_SIMD_FAMILY(P, W, VOTE)                                                                     \
  template <class S = kk::site<0>, class T> KK_FORCE T P##_sum(T x) { return kk::simd::reduce<kk::simd::add, W, S>(x); }         \
  template <class S = kk::site<0>, class T> KK_FORCE T P##_product(T x) { return kk::simd::reduce<kk::simd::mul, W, S>(x); }     \
  template <class S = kk::site<0>, class T> KK_FORCE T P##_min(T x) { return kk::simd::reduce<kk::simd::min_, W, S>(x); }        \
  template <class S = kk::site<0>, class T> KK_FORCE T P##_max(T x) { return kk::simd::reduce<kk::simd::max_, W, S>(x); }        \
  template <class S = kk::site<0>, class T> KK_FORCE T P##_and(T x) { return kk::simd::reduce<kk::simd::and_, W, S>(x); }        \
  template <class S = kk::site<0>, class T> KK_FORCE T P##_or(T x) { return kk::simd::reduce<kk::simd::or_, W, S>(x); }          \
  template <class S = kk::site<0>, class T> KK_FORCE T P##_xor(T x) { return kk::simd::reduce<kk::simd::xor_, W, S>(x); }        \
  template <class S = kk::site<0>, class T> KK_FORCE T P##_prefix_inclusive_sum(T x) { return kk::simd::scan<kk::simd::add, W, true, S>(x); } \
  template <class S = kk::site<0>, class T> KK_FORCE T P##_prefix_exclusive_sum(T x) { return kk::simd::scan<kk::simd::add, W, false, S>(x); } \
  template <class S = kk::site<0>, class T> KK_FORCE T P##_prefix_inclusive_product(T x) { return kk::simd::scan<kk::simd::mul, W, true, S>(x); } \
  template <class S = kk::site<0>, class T> KK_FORCE T P##_prefix_exclusive_product(T x) { return kk::simd::scan<kk::simd::mul, W, false, S>(x); } \
  template <class S = kk::site<0>, class T> KK_FORCE T P##_shuffle(T x, ushort lane) { return kk::simd::shuffle<kk::simd::BY_INDEX, W, S>(x, lane); } \
  template <class S = kk::site<0>, class T> KK_FORCE T P##_broadcast(T x, ushort lane) { return kk::simd::shuffle<kk::simd::BY_INDEX, W, S>(x, lane); } \
  template <class S = kk::site<0>, class T> KK_FORCE T P##_broadcast_first(T x) { return kk::simd::shuffle<kk::simd::FIRST, W, S>(x, 0u); } \
  template <class S = kk::site<0>, class T> KK_FORCE T P##_shuffle_up(T x, ushort d) { return kk::simd::shuffle<kk::simd::UP, W, S>(x, d); } \
  template <class S = kk::site<0>, class T> KK_FORCE T P##_shuffle_down(T x, ushort d) { return kk::simd::shuffle<kk::simd::DOWN, W, S>(x, d); } \
  template <class S = kk::site<0>, class T> KK_FORCE T P##_shuffle_xor(T x, ushort m) { return kk::simd::shuffle<kk::simd::XOR, W, S>(x, m); } \
  template <class S = kk::site<0>, class T> KK_FORCE T P##_shuffle_rotate_up(T x, ushort d) { return kk::simd::shuffle<kk::simd::ROTATE_UP, W, S>(x, d); } \
  template <class S = kk::site<0>, class T> KK_FORCE T P##_shuffle_rotate_down(T x, ushort d) { return kk::simd::shuffle<kk::simd::ROTATE_DOWN, W, S>(x, d); } \
  template <class S = kk::site<0>, class T> KK_FORCE T P##_shuffle_and_fill_up(T x, T filling, ushort d) {                    \
    return kk::simd::fill<kk::simd::FILL_UP, W, S>(x, filling, d, 0u);                                    \
  }                                                                                                    \
  template <class S = kk::site<0>, class T> KK_FORCE T P##_shuffle_and_fill_up(T x, T filling, ushort d, ushort modulo) {     \
    return kk::simd::fill<kk::simd::FILL_UP, W, S>(x, filling, d, modulo);                                \
  }                                                                                                    \
  template <class S = kk::site<0>, class T> KK_FORCE T P##_shuffle_and_fill_down(T x, T filling, ushort d) {                  \
    return kk::simd::fill<kk::simd::FILL_DOWN, W, S>(x, filling, d, 0u);                                  \
  }                                                                                                    \
  template <class S = kk::site<0>, class T> KK_FORCE T P##_shuffle_and_fill_down(T x, T filling, ushort d, ushort modulo) {   \
    return kk::simd::fill<kk::simd::FILL_DOWN, W, S>(x, filling, d, modulo);                              \
  }                                                                                                    \
  template <class S = kk::site<0>> KK_FORCE bool P##_all(bool b) { return kk::simd::vote<kk::simd::ALL, W, S>(b); }                         \
  template <class S = kk::site<0>> KK_FORCE bool P##_any(bool b) { return kk::simd::vote<kk::simd::ANY, W, S>(b); }                         \
  template <class S = kk::site<0>> KK_FORCE bool P##_is_first() { return kk::simd::vote<kk::simd::IS_FIRST, W, S>(true); }                  \
  template <class S = kk::site<0>> KK_FORCE VOTE P##_ballot(bool b) {                                                                    \
    const kk::simd::vote_bits v = kk::simd::vote_mask<kk::simd::BALLOT, W, S>(b);                          \
    return VOTE(typename VOTE::vote_t(v.bits), typename VOTE::vote_t(v.active));                        \
  }                                                                                                    \
  template <class S = kk::site<0>> KK_FORCE VOTE P##_active_threads_mask() {                                                             \
    const kk::simd::vote_bits v = kk::simd::vote_mask<kk::simd::ACTIVE, W, S>(true);                       \
    return VOTE(typename VOTE::vote_t(v.bits), typename VOTE::vote_t(v.active));                        \
  }
KK_SIMD_FAMILY(simd, 32, simd_vote)
KK_SIMD_FAMILY(quad, 4, quad_vote)
#undef KK_SIMD_FAMILY
}  // namespace metal
// ---- 6.7 SIMD-group matrix functions: 8x8 matrices spread over the 32
// lanes of a simdgroup. Here every lane holds the whole matrix (row-major),
// so loads and products need no lane to talk to another; each lane still
// owns the two elements Apple's layout gives it (thread_elements()), which
// it alone may change: a product first gathers every lane's pair into
// every copy (one SIMD-group exchange per operand changed that way), and a
// store writes each lane's own pair only.
namespace metal {
template <class T, int Cols, int Rows> struct simdgroup_matrix {
  static_assert(Cols == 8 && Rows == 8, "kernelkit: only 8x8 SIMD-group matrices exist");
  alignas(2 * sizeof(T)) T kk_m[64];
  // Whether this lane changed its own pair since the copies last agreed.
  bool kk_dirty;
  simdgroup_matrix() = default;
  // A diagonal matrix (Metal's scalar constructor).
  KK_FN explicit simdgroup_matrix(T diagonal) : kk_dirty(false) {
    for (int i = 0; i < 64; ++i) kk_m[i] = (i / 8 == i % 8) ? diagonal : T(0);
  }
  // This lane's two elements, (row, col) and (row, col + 1).
  KK_FN vec<T, 2>& thread_elements() {
    kk_dirty = true;
    const unsigned l = kk::simd::lane_id_of_thread();
    return *reinterpret_cast<vec<T, 2>*>(&kk_m[kk::sm_row(l) * 8 + kk::sm_col(l)]);
  }
};
typedef simdgroup_matrix<float, 8, 8> simdgroup_float8x8;
#if defined(KK_CPU) || defined(KK_HALF_TYPES)
typedef simdgroup_matrix<::float16_t, 8, 8> simdgroup_half8x8;
typedef simdgroup_matrix<::bfloat16_t, 8, 8> simdgroup_bfloat8x8;
#endif

template <class T, int C, int R> KK_FN simdgroup_matrix<T, C, R> make_filled_simdgroup_matrix(T value) {
  simdgroup_matrix<T, C, R> m;
  for (int i = 0; i < 64; ++i) m.kk_m[i] = value;
  m.kk_dirty = false;
  return m;
}
// Loads the 8x8 block at (column, row) `origin` of a row-major array with
// `elements_per_row` elements per row (transposed: the block's transpose).
template <class T, class U>
KK_FN void simdgroup_load(simdgroup_matrix<T, 8, 8>& d, const U* src, ulong elements_per_row = 8,
                          ulong2 origin = ulong2(0), bool transpose = false) {
  for (int r = 0; r < 8; ++r)
    for (int c = 0; c < 8; ++c) {
      const ulong row = origin.y + ulong(transpose ? c : r), col = origin.x + ulong(transpose ? r : c);
      d.kk_m[r * 8 + c] = T(src[row * elements_per_row + col]);
    }
  d.kk_dirty = false;
}
// Stores the block: each lane writes the pair it owns.
template <class T, class U>
KK_FN void simdgroup_store(const simdgroup_matrix<T, 8, 8>& a, U* dst, ulong elements_per_row = 8,
                           ulong2 origin = ulong2(0), bool transpose = false) {
  const unsigned l = kk::simd::lane_id_of_thread();
  const int r = kk::sm_row(l);
  for (int k = 0; k < 2; ++k) {
    const int c = kk::sm_col(l) + k;
    const ulong row = origin.y + ulong(transpose ? c : r), col = origin.x + ulong(transpose ? r : c);
    dst[row * elements_per_row + col] = U(a.kk_m[r * 8 + c]);
  }
}
}  // namespace metal

namespace kk {
// Makes every lane's copy whole again after lanes changed their pairs.
template <class T> KK_FN void sm_agree(metal::simdgroup_matrix<T, 8, 8>& m) {
  if (!m.kk_dirty) return;
  simd::gather_pairs(m.kk_m);
  m.kk_dirty = false;
}
template <class T> KK_FN metal::simdgroup_matrix<T, 8, 8> sm_agreed(const metal::simdgroup_matrix<T, 8, 8>& m) {
  metal::simdgroup_matrix<T, 8, 8> c = m;
  sm_agree(c);
  return c;
}
}  // namespace kk

namespace metal {
template <class T>
KK_FN void simdgroup_multiply_accumulate(simdgroup_matrix<T, 8, 8>& d, const simdgroup_matrix<T, 8, 8>& a0,
                                         const simdgroup_matrix<T, 8, 8>& b0, const simdgroup_matrix<T, 8, 8>& c0) {
  const simdgroup_matrix<T, 8, 8> a = kk::sm_agreed(a0), b = kk::sm_agreed(b0), c = kk::sm_agreed(c0);
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j) {
      float s = float(c.kk_m[i * 8 + j]);
      for (int k = 0; k < 8; ++k) s += float(a.kk_m[i * 8 + k]) * float(b.kk_m[k * 8 + j]);
      d.kk_m[i * 8 + j] = T(s);
    }
  d.kk_dirty = false;
}
template <class T>
KK_FN void simdgroup_multiply(simdgroup_matrix<T, 8, 8>& d, const simdgroup_matrix<T, 8, 8>& a,
                              const simdgroup_matrix<T, 8, 8>& b) {
  simdgroup_multiply_accumulate(d, a, b, make_filled_simdgroup_matrix<T, 8, 8>(T(0)));
}
}  // namespace metal
// ---- MLX's kernel utilities: what mlx/backend/metal/kernels/utils.h (and
// defines.h) give every `metal_kernel` body, which bodies use without an
// include (`ceildiv`, the `elem_to_loc` family, `Limits`, ...). Shapes and
// strides may be pointers (CPU) or kk_shape / kk_strides (CUDA), so the
// index helpers take either.
#define METAL_FUNC KK_FN
#define MTL_CONST
#ifdef KK_CUDA
#define MLX_MTL_PRAGMA_UNROLL _Pragma("unroll")
#else
#define MLX_MTL_PRAGMA_UNROLL _Pragma("GCC unroll 16")
#endif
enum {
  MAX_REDUCE_SPECIALIZED_DIMS = 4,
  REDUCE_N_READS = 4,
  REDUCE_N_WRITES = 4,
  SOFTMAX_N_READS = 4,
  RMS_N_READS = 4,
  RMS_LOOPED_LIMIT = 4096
};

template <typename U> struct WorkPerThread {
  static_assert(sizeof(U) <= 8, "Type too large");
  static constexpr int n = 8 / sizeof(U);
};

// Limits<T>: max/min (infinities for floats) and the finite extremes.
template <typename U, bool F = metal::is_floating_point<U>::value> struct Limits {
  static constexpr U max = metal::numeric_limits<U>::max();
  static constexpr U min = metal::numeric_limits<U>::min();
  static constexpr U finite_max = metal::numeric_limits<U>::max();
  static constexpr U finite_min = metal::numeric_limits<U>::min();
};
template <typename U> struct Limits<U, true> {
  static constexpr U max = metal::numeric_limits<U>::infinity();
  static constexpr U min = metal::numeric_limits<U>::kk_neg_infinity();
  static constexpr U finite_max = metal::numeric_limits<U>::max();
  static constexpr U finite_min = metal::numeric_limits<U>::lowest();
};
template <> struct Limits<bool, false> {
  static constexpr bool max = true;
  static constexpr bool min = false;
};

// Element index of a (possibly strided) array -> memory offset: with the
// index as a grid position (x, y: the last two axes; z: the rest).
template <typename IdxT = int64_t, typename Shape, typename Strides>
KK_FN IdxT elem_to_loc(metal::uint3 elem, const Shape& shape, const Strides& strides, int ndim) {
  IdxT loc = elem.x * IdxT(strides[ndim - 1]) + elem.y * IdxT(strides[ndim - 2]);
  for (int d = ndim - 3; d >= 0; --d) {
    loc += (elem.z % shape[d]) * IdxT(strides[d]);
    elem.z /= shape[d];
  }
  return loc;
}
template <typename IdxT = int64_t, typename Stride> KK_FN IdxT elem_to_loc_1(uint elem, const Stride& stride) {
  return elem * IdxT(stride);
}
template <typename IdxT = int64_t, typename Strides> KK_FN IdxT elem_to_loc_2(metal::uint2 elem, const Strides& strides) {
  return elem.x * IdxT(strides[1]) + elem.y * IdxT(strides[0]);
}
template <typename IdxT = int64_t, typename Strides> KK_FN IdxT elem_to_loc_3(metal::uint3 elem, const Strides& strides) {
  return elem.x * IdxT(strides[2]) + elem.y * IdxT(strides[1]) + elem.z * IdxT(strides[0]);
}
// Offsets of two and three arrays of one shape at once.
template <typename IdxT = int64_t, typename Shape, typename Strides>
KK_FN metal::vec<IdxT, 2> elem_to_loc_2_nd(metal::uint3 elem, const Shape& shape, const Strides& a_strides,
                                           const Strides& b_strides, int ndim) {
  metal::vec<IdxT, 2> loc = {IdxT(elem.x * IdxT(a_strides[ndim - 1]) + IdxT(elem.y) * IdxT(a_strides[ndim - 2])),
                             IdxT(elem.x * IdxT(b_strides[ndim - 1]) + elem.y * IdxT(b_strides[ndim - 2]))};
  for (int d = ndim - 3; d >= 0; --d) {
    uint l = elem.z % shape[d];
    loc.x += l * IdxT(a_strides[d]);
    loc.y += l * IdxT(b_strides[d]);
    elem.z /= shape[d];
  }
  return loc;
}
template <typename IdxT = int64_t, typename Shape, typename Strides>
KK_FN metal::vec<IdxT, 3> elem_to_loc_3_nd(metal::uint3 elem, const Shape& shape, const Strides& a_strides,
                                           const Strides& b_strides, const Strides& c_strides, int ndim) {
  metal::vec<IdxT, 3> loc = {IdxT(elem.x * IdxT(a_strides[ndim - 1])) + IdxT(elem.y * IdxT(a_strides[ndim - 2])),
                             IdxT(elem.x * IdxT(b_strides[ndim - 1])) + IdxT(elem.y * IdxT(b_strides[ndim - 2])),
                             IdxT(elem.x * IdxT(c_strides[ndim - 1])) + IdxT(elem.y * IdxT(c_strides[ndim - 2]))};
  for (int d = ndim - 3; d >= 0; --d) {
    uint l = elem.z % shape[d];
    loc.x += l * IdxT(a_strides[d]);
    loc.y += l * IdxT(b_strides[d]);
    loc.z += l * IdxT(c_strides[d]);
    elem.z /= shape[d];
  }
  return loc;
}

// Walks the offsets of consecutive elements of a strided array (DIM: the
// axes handled by the nested walkers).
template <int DIM, typename OffsetT = size_t, bool General = true> struct LoopedElemToLoc {
  int dim;
  LoopedElemToLoc<DIM - 1, OffsetT, General> inner_looper;
  OffsetT offset{0};
  int index{0};
  KK_FN LoopedElemToLoc(int dim) : dim(dim), inner_looper(dim - 1) {}
  template <typename Shape, typename Strides> KK_FN void next(const Shape& shape, const Strides& strides) {
    if (dim == 0) return;
    index++;
    offset += OffsetT(strides[dim - 1]);
    if (index >= shape[dim - 1]) {
      index = 0;
      inner_looper.next(shape, strides);
      offset = inner_looper.offset;
    }
  }
  template <typename Shape, typename Strides> KK_FN void next(int n, const Shape& shape, const Strides& strides) {
    if (dim == 0) return;
    index += n;
    offset += n * OffsetT(strides[dim - 1]);
    if (index >= shape[dim - 1]) {
      int extra = index - shape[dim - 1];
      if (extra >= shape[dim - 1]) {
        inner_looper.next(1 + extra / shape[dim - 1], shape, strides);
        extra = extra % shape[dim - 1];
      } else {
        inner_looper.next(shape, strides);
      }
      index = 0;
      offset = inner_looper.offset;
      if (extra > 0) next(extra, shape, strides);
    }
  }
  KK_FN OffsetT location() { return offset; }
};
template <typename OffsetT> struct LoopedElemToLoc<1, OffsetT, true> {
  int dim;
  OffsetT offset{0};
  uint index{0};
  KK_FN LoopedElemToLoc(int dim) : dim(dim) {}
  template <typename Shape, typename Strides> KK_FN void next(const Shape& shape, const Strides& strides) {
    index++;
    if (dim > 1) {
      offset = elem_to_loc<OffsetT>(OffsetT(index), shape, strides, dim);
    } else {
      offset += OffsetT(strides[0]);
    }
  }
  template <typename Shape, typename Strides> KK_FN void next(int n, const Shape& shape, const Strides& strides) {
    index += n;
    if (dim > 1) {
      offset = elem_to_loc<OffsetT>(OffsetT(index), shape, strides, dim);
    } else {
      offset = index * OffsetT(strides[0]);
    }
  }
  KK_FN OffsetT location() { return offset; }
};
template <typename OffsetT> struct LoopedElemToLoc<1, OffsetT, false> {
  OffsetT offset{0};
  KK_FN LoopedElemToLoc(int) {}
  template <typename Shape, typename Strides> KK_FN void next(const Shape&, const Strides& strides) {
    offset += OffsetT(strides[0]);
  }
  template <typename Shape, typename Strides> KK_FN void next(int n, const Shape&, const Strides& strides) {
    offset += n * OffsetT(strides[0]);
  }
  KK_FN OffsetT location() { return offset; }
};

// ceil(N / M) for integers.
template <typename T, typename U> KK_FN T ceildiv(T N, U M) { return (N + M - 1) / M; }
template <bool condition, typename T, typename U> struct ConditionalType { using type = U; };
template <typename T, typename U> struct ConditionalType<true, T, U> { using type = T; };
template <typename U, typename T> KK_FN U cast_to(T val) { return static_cast<U>(val); }
template <> KK_FN bool cast_to<bool, float>(float val) { return (metal::as_type<uint32_t>(val) & 0x7FFFFFFFu) != 0; }
template <> KK_FN bool cast_to<bool, complex64_t>(complex64_t val) {
  return cast_to<bool, float>(val.real) || cast_to<bool, float>(val.imag);
}
// ---- What the CPU and CUDA backends cannot provide: a clear compile-time
// error where a header names it (bodies are refused before compiling, with
// a typed error naming the feature; see codegen/scan.rs).
namespace kk {
template <class... T> struct never : no {};
}  // namespace kk
namespace metal {
enum class access { sample, read, write, read_write };
#define KK_NO_TEXTURE(NAME)                                                                            \
  template <class T = float, access A = access::sample, class... R> struct NAME {                     \
    static_assert(kk::never<T, R...>::value,                                                           \
                  "kernelkit: Metal textures (`" #NAME "`) are not supported on the CPU and CUDA backends"); \
  };
KK_NO_TEXTURE(texture1d)
KK_NO_TEXTURE(texture1d_array)
KK_NO_TEXTURE(texture2d)
KK_NO_TEXTURE(texture2d_array)
KK_NO_TEXTURE(texture2d_ms)
KK_NO_TEXTURE(texture3d)
KK_NO_TEXTURE(texturecube)
KK_NO_TEXTURE(texturecube_array)
KK_NO_TEXTURE(texture_buffer)
KK_NO_TEXTURE(depth2d)
KK_NO_TEXTURE(depth2d_array)
KK_NO_TEXTURE(depthcube)
#undef KK_NO_TEXTURE
template <int = 0> struct kk_sampler {
  static_assert(kk::never<kk_sampler>::value, "kernelkit: Metal samplers (`sampler`) are not supported on the CPU and CUDA backends");
};
typedef kk_sampler<> sampler;
}  // namespace metal
// kernelkit CUDA prelude, Metal tail: a 0-d input (kk_scalar) is a
// scalar to the Metal layer, and Metal's names are visible unqualified.
namespace kk {
template <class T> struct scalar<::kk_scalar<T>> : yes {};
template <class T> struct value_of<::kk_scalar<T>> { typedef T type; };
}  // namespace kk
using namespace metal;
#define inf __int_as_float(0x7f800000)
#define half float16_t
#define bfloat bfloat16_t
#define uint3 kk_uint3

// header



extern "C" __global__ void custom_kernel_myexp_float32_int32s_float32c_float16_c2fa3f3fa593807e(
    const float* inp,
    const kk_scalar<int32_t> x,
    const float* bias,
    float16_t* out,
    const kk_cuda_uint3 kk_grid) {
  using T = float16_t;
  constexpr int N = -4;
  constexpr bool B = true;

  if (blockIdx.x * blockDim.x + threadIdx.x >= kk_grid.x ||
      blockIdx.y * blockDim.y + threadIdx.y >= kk_grid.y ||
      blockIdx.z * blockDim.z + threadIdx.z >= kk_grid.z) {
    return;
  }
  const uint3 kk_tg = blockDim;
  const uint3 kk_group = blockIdx;
  const uint3 kk_local = threadIdx;
  const uint3 thread_position_in_grid = uint3{kk_group.x * kk_tg.x + kk_local.x, kk_group.y * kk_tg.y + kk_local.y, kk_group.z * kk_tg.z + kk_local.z};
  // ---- body ----
uint i = thread_position_in_grid.x;
T v = static_cast<T>(float(inp[i]) * x + float(bias[i % 4]));
out[i] = B ? kk::tc<decltype(v), decltype(T(N))>(v) : kk::tc<decltype(T(N)), decltype(v)>(T(N));
  // ---- end of body ----
}

#undef inf
#undef half
#undef bfloat
#undef uint3
