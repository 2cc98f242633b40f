// ---- 2.13 / 6.1 Type traits (<metal_type_traits>) and as_type (numeric
// limits: limits.h; the constants of the math headers: constants.h).
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

