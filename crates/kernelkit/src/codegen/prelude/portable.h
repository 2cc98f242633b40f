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
