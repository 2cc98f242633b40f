// ---- Metal compatibility layer -------------------------------------------
// What a body written for Metal (MLX's `metal_kernel`) uses of the Metal
// Shading Language, in C++ that g++/clang++ (the CPU backend) and NVRTC
// (CUDA) both compile. Organised by the chapters of the MSL specification:
// this file is chapter 2 (data types; the operators of chapter 3 are in
// vec_ops.h). Swizzles
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
// Where Metal's fast and precise math live (math*.h fill them): a body may
// name them before it names a function of theirs.
namespace fast {}
namespace precise {}
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
// The value a scalar argument stands for (CUDA's 0-d input wrapper reads
// as its element; the CUDA tail specialises it).
template <class T> struct value_of { typedef T type; };
template <class T> using value_t = typename value_of<plain_t<T>>::type;
// Elementwise results: r[i] = f(a[i]) and friends, for the operators and
// the function chapters.
template <class R, int N, class F> KK_FN metal::vec<R, N> build(F f) {
  metal::vec<R, N> r;
  for (int i = 0; i < N; ++i) r.kk_e[i] = f(i);
  return r;
}
}  // namespace kk

namespace metal {
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
