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
