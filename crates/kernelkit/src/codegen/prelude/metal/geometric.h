// ---- 6.8 Geometric functions.
namespace metal {
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
