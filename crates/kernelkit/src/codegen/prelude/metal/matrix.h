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
