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
