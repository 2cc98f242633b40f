// kernelkit bounds checks (KernelBuilder::check_bounds): checked views of a
// kernel's array arguments. Only sources of checked kernels hold this text.
//
// The host passes one block: a 64-byte record (below), then two 64-bit
// words per argument (inputs, then outputs): the lowest and one past the
// highest element index its view spans, relative to the argument's
// pointer. A view checks every access made through it; the first access
// outside the span is recorded (later ones are only skipped), the access
// itself goes to a scratch slot, so a write never lands outside the view.
#ifndef KK_BOUNDS_H
#define KK_BOUNDS_H
#ifdef __CUDACC__
#define KK_BOUNDS_FN __device__ __forceinline__
#else
#define KK_BOUNDS_FN inline
#endif
namespace kk {
struct bounds_record {
  unsigned long long hit;  // 0 until the first violation
  long long arg;           // the argument's position: inputs, then outputs
  long long index;         // the element index, relative to the pointer
  long long lo, hi;        // the view's span [lo, hi)
  unsigned int local[3];   // thread_position_in_threadgroup
  unsigned int group[3];   // threadgroup_position_in_grid
};
struct bounds_where {
  unsigned int local[3];
  unsigned int group[3];
};
#ifdef __CUDACC__
__device__ unsigned long long bounds_scratch[8];
#else
alignas(64) inline thread_local unsigned long long bounds_scratch[8];
#endif
KK_BOUNDS_FN void bounds_note(bounds_record* rec, long long arg, long long index, long long lo,
                              long long hi, const bounds_where* at) {
#ifdef __CUDACC__
  if (atomicCAS(&rec->hit, 0ull, 1ull) != 0ull) return;
  rec->local[0] = threadIdx.x; rec->local[1] = threadIdx.y; rec->local[2] = threadIdx.z;
  rec->group[0] = blockIdx.x; rec->group[1] = blockIdx.y; rec->group[2] = blockIdx.z;
  (void)at;
#else
  unsigned long long expected = 0;
  if (!__atomic_compare_exchange_n(&rec->hit, &expected, 1ull, false, __ATOMIC_ACQ_REL,
                                   __ATOMIC_ACQUIRE))
    return;
  for (int k = 0; k < 3; ++k) {
    rec->local[k] = at ? at->local[k] : 0u;
    rec->group[k] = at ? at->group[k] : 0u;
  }
#endif
  rec->arg = arg;
  rec->index = index;
  rec->lo = lo;
  rec->hi = hi;
#ifdef __CUDACC__
  __threadfence_system();
#endif
}
// A checked pointer into argument `arg`: `p + off` as the body wrote it.
template <typename T>
struct view {
  T* p;
  long long off;
  long long lo, hi;
  bounds_record* rec;
  long long arg;
  const bounds_where* at;
  KK_BOUNDS_FN view(T* p_, bounds_record* rec_, long long arg_, const bounds_where* at_)
      : p(p_), off(0), rec(rec_), arg(arg_), at(at_) {
    const long long* spans = reinterpret_cast<const long long*>(rec_ + 1);
    lo = spans[2 * arg_];
    hi = spans[2 * arg_ + 1];
  }
  // A 0-d input: its one element.
  KK_BOUNDS_FN view(T* p_, bounds_record* rec_, long long arg_, const bounds_where* at_, int)
      : p(p_), off(0), lo(0), hi(1), rec(rec_), arg(arg_), at(at_) {}
  KK_BOUNDS_FN T& at_index(long long k) const {
    if (k >= lo && k < hi) return p[k];
    bounds_note(rec, arg, k, lo, hi, at);
    return *reinterpret_cast<T*>(&bounds_scratch[0]);
  }
  template <typename I>
  KK_BOUNDS_FN T& operator[](I i) const { return at_index(off + (long long)i); }
  KK_BOUNDS_FN T& operator*() const { return at_index(off); }
  KK_BOUNDS_FN T* operator->() const { return &at_index(off); }
  template <typename I>
  KK_BOUNDS_FN view operator+(I k) const { view v = *this; v.off += (long long)k; return v; }
  template <typename I>
  KK_BOUNDS_FN view operator-(I k) const { view v = *this; v.off -= (long long)k; return v; }
  // Decays to the raw pointer where one is needed (a cast, a call).
  KK_BOUNDS_FN operator T*() const { return p + off; }
};
}  // namespace kk
#endif  // KK_BOUNDS_H
