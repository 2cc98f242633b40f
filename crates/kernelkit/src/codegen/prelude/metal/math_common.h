// ---- 6.2 Common functions (abs, min, max, clamp, mix, ...): any element
// type, integers included.
namespace kk {
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

