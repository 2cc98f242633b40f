// ---- 6.9.2 SIMD-group and quad functions: the API, over each backend's
// primitives (group_cpu.h, group_cuda.h; the flags of 6.9.1 are in
// mem_flags.h). T is any scalar or vector (shuffles: any trivially
// copyable value; and/or/xor: integers).
namespace kk {
namespace simd {
struct min_ { template <class T> static KK_FN T f(const T& a, const T& b) { return T(metal::min(a, b)); } };
struct max_ { template <class T> static KK_FN T f(const T& a, const T& b) { return T(metal::max(a, b)); } };
}  // namespace simd
}  // namespace kk
namespace metal {
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
