// ---- 6.2 - 6.5, 6.8 Common, integer, relational, math and geometric
// functions: this file holds what they share (the per-component
// machinery and the macros that declare a function in metal::,
// metal::fast:: and metal::precise::); the functions are in math_*.h and
// geometric.h. Each Metal function is a template constrained to scalars and
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

