// kernelkit: Metal's atomics over plain storage, for both backends.
// `atomic<T>` has the layout of a T, so outputs declared `atomic<T>*`
// (`atomic_outputs`), pointer casts of plain memory
// (`(device atomic_float*)&out[i]`) and threadgroup variables
// (`threadgroup atomic_int n;`) all work. Every operation is atomic for the
// whole device (Metal's relaxed order is the weakest asked for).
namespace kk {
template <typename T> struct atomic_cell { T value; };
template <typename T> struct ident { typedef T type; };
}  // namespace kk
template <typename T> using atomic = kk::atomic_cell<T>;
enum memory_order {
  memory_order_relaxed = 0,
  memory_order_acquire = 2,
  memory_order_release = 3,
  memory_order_acq_rel = 4,
  memory_order_seq_cst = 5
};
enum thread_scope {
  thread_scope_thread = 0,
  thread_scope_simdgroup = 1,
  thread_scope_threadgroup = 2,
  thread_scope_device = 3
};

namespace kk {
template <typename T> KK_FN T* cell(volatile atomic<T>* p) { return const_cast<T*>(&p->value); }
struct add { template <typename T> KK_FN T operator()(T a, T b) const { return (T)(a + b); } };
struct sub { template <typename T> KK_FN T operator()(T a, T b) const { return (T)(a - b); } };
struct mx { template <typename T> KK_FN T operator()(T a, T b) const { return a < b ? b : a; } };
struct mn { template <typename T> KK_FN T operator()(T a, T b) const { return b < a ? b : a; } };
struct bor { template <typename T> KK_FN T operator()(T a, T b) const { return (T)(a | b); } };
struct band { template <typename T> KK_FN T operator()(T a, T b) const { return (T)(a & b); } };
struct bxor { template <typename T> KK_FN T operator()(T a, T b) const { return (T)(a ^ b); } };
struct put { template <typename T> KK_FN T operator()(T, T b) const { return b; } };

#ifdef KK_CPU
template <typename T> KK_FN T load(T* p) { return std::atomic_ref<T>(*p).load(std::memory_order_relaxed); }
template <typename T> KK_FN void store(T* p, T v) { std::atomic_ref<T>(*p).store(v, std::memory_order_relaxed); }
template <typename T> KK_FN bool cas(T* p, T* expected, T desired) {
  return std::atomic_ref<T>(*p).compare_exchange_strong(*expected, desired, std::memory_order_relaxed);
}
// Read-modify-write with `Op`: native where the hardware has it.
template <typename Op, typename T> KK_FN T rmw(T* p, T v) {
  std::atomic_ref<T> r(*p);
  if constexpr (!builtin_float<T>::value && same<Op, add>::value) {
    return r.fetch_add(v, std::memory_order_relaxed);
  } else if constexpr (!builtin_float<T>::value && same<Op, sub>::value) {
    return r.fetch_sub(v, std::memory_order_relaxed);
  } else {
    T old = r.load(std::memory_order_relaxed);
    while (!r.compare_exchange_weak(old, Op()(old, v), std::memory_order_relaxed)) {}
    return old;
  }
}
#else
template <int N> struct word;
template <> struct word<2> { typedef unsigned short int type; };
template <> struct word<4> { typedef unsigned int type; };
template <> struct word<8> { typedef unsigned long long int type; };
// Reinterprets the bytes of a value (the CUDA counterpart of std::bit_cast).
template <typename To, typename From> KK_FN To bits(const From& v) {
  static_assert(sizeof(To) == sizeof(From), "bits needs equal sizes");
  To t;
  memcpy(&t, &v, sizeof(To));
  return t;
}
template <typename T> KK_FN T load(T* p) { return *reinterpret_cast<volatile T*>(p); }
template <typename T> KK_FN void store(T* p, T v) { *reinterpret_cast<volatile T*>(p) = v; }
// Compare-and-swap of a 1-byte value: on the 4-byte word that holds it.
template <typename T> KK_FN bool cas1(T* p, T* expected, T desired) {
  unsigned long long a = reinterpret_cast<unsigned long long>(p);
  unsigned int* w = reinterpret_cast<unsigned int*>(a & ~3ull);
  unsigned int shift = (unsigned int)(a & 3ull) * 8u;
  unsigned int e = (unsigned int)bits<unsigned char>(*expected);
  unsigned int d = (unsigned int)bits<unsigned char>(desired);
  unsigned int old = *reinterpret_cast<volatile unsigned int*>(w);
  while (true) {
    unsigned int cur = (old >> shift) & 0xffu;
    if (cur != e) { *expected = bits<T>((unsigned char)cur); return false; }
    unsigned int nw = (old & ~(0xffu << shift)) | (d << shift);
    unsigned int seen = atomicCAS(w, old, nw);
    if (seen == old) return true;
    old = seen;
  }
}
template <typename T> KK_FN bool cas(T* p, T* expected, T desired) {
  if constexpr (sizeof(T) == 1) {
    return cas1(p, expected, desired);
  } else {
    typedef typename word<sizeof(T)>::type W;
    W e = bits<W>(*expected);
    W seen = atomicCAS(reinterpret_cast<W*>(p), e, bits<W>(desired));
    if (seen == e) return true;
    *expected = bits<T>(seen);
    return false;
  }
}
template <typename Op, typename T> KK_FN T rmw_loop(T* p, T v) {
  T old = load(p);
  while (!cas(p, &old, Op()(old, v))) {}
  return old;
}
// Native atomics where CUDA has them, a compare-and-swap loop elsewhere.
template <typename Op, typename T> KK_FN T rmw(T* p, T v) {
  typedef unsigned long long ull;
  constexpr bool i32 = same<T, int>::value || same<T, unsigned int>::value;
  constexpr bool i64 = (same<T, long long>::value || same<T, long>::value) && sizeof(T) == 8;
  constexpr bool u64 = (same<T, unsigned long long>::value || same<T, unsigned long>::value) && sizeof(T) == 8;
  if constexpr (same<Op, add>::value && (i32 || same<T, float>::value || same<T, double>::value)) {
    return atomicAdd(p, v);
  } else if constexpr (same<Op, add>::value && (i64 || u64)) {
    return (T)atomicAdd(reinterpret_cast<ull*>(p), (ull)v);
  } else if constexpr (same<Op, sub>::value && i32) {
    return atomicSub(p, v);
  } else if constexpr (same<Op, mx>::value && i32) {
    return atomicMax(p, v);
  } else if constexpr (same<Op, mx>::value && i64) {
    return (T)atomicMax(reinterpret_cast<long long*>(p), (long long)v);
  } else if constexpr (same<Op, mx>::value && u64) {
    return (T)atomicMax(reinterpret_cast<ull*>(p), (ull)v);
  } else if constexpr (same<Op, mn>::value && i32) {
    return atomicMin(p, v);
  } else if constexpr (same<Op, mn>::value && i64) {
    return (T)atomicMin(reinterpret_cast<long long*>(p), (long long)v);
  } else if constexpr (same<Op, mn>::value && u64) {
    return (T)atomicMin(reinterpret_cast<ull*>(p), (ull)v);
  } else if constexpr (same<Op, bor>::value && i32) {
    return atomicOr(p, v);
  } else if constexpr (same<Op, band>::value && i32) {
    return atomicAnd(p, v);
  } else if constexpr (same<Op, bxor>::value && i32) {
    return atomicXor(p, v);
  } else if constexpr (same<Op, put>::value && (i32 || same<T, float>::value)) {
    return atomicExch(p, v);
  } else {
    return rmw_loop<Op>(p, v);
  }
}
#endif
}  // namespace kk

#define KK_ATOMIC_RMW(NAME, OP)                                                                  \
  template <typename T>                                                                          \
  KK_FN T NAME(volatile atomic<T>* p, typename kk::ident<T>::type v, memory_order = memory_order_relaxed, \
               thread_scope = thread_scope_device) {                                             \
    return kk::rmw<kk::OP>(kk::cell(p), v);                                                      \
  }
KK_ATOMIC_RMW(atomic_fetch_add_explicit, add)
KK_ATOMIC_RMW(atomic_fetch_sub_explicit, sub)
KK_ATOMIC_RMW(atomic_fetch_max_explicit, mx)
KK_ATOMIC_RMW(atomic_fetch_min_explicit, mn)
KK_ATOMIC_RMW(atomic_fetch_or_explicit, bor)
KK_ATOMIC_RMW(atomic_fetch_and_explicit, band)
KK_ATOMIC_RMW(atomic_fetch_xor_explicit, bxor)
KK_ATOMIC_RMW(atomic_exchange_explicit, put)
#undef KK_ATOMIC_RMW
template <typename T>
KK_FN void atomic_store_explicit(volatile atomic<T>* p, typename kk::ident<T>::type v,
                                 memory_order = memory_order_relaxed, thread_scope = thread_scope_device) {
  kk::store(kk::cell(p), v);
}
template <typename T>
KK_FN T atomic_load_explicit(volatile atomic<T>* p, memory_order = memory_order_relaxed,
                             thread_scope = thread_scope_device) {
  return kk::load(kk::cell(p));
}
// Metal's weak compare-exchange never fails spuriously here.
template <typename T>
KK_FN bool atomic_compare_exchange_weak_explicit(volatile atomic<T>* p, T* expected,
                                                 typename kk::ident<T>::type desired, memory_order = memory_order_relaxed,
                                                 memory_order = memory_order_relaxed,
                                                 thread_scope = thread_scope_device) {
  return kk::cas(kk::cell(p), expected, desired);
}
template <typename T>
KK_FN bool atomic_compare_exchange_strong_explicit(volatile atomic<T>* p, T* expected,
                                                   typename kk::ident<T>::type desired,
                                                   memory_order = memory_order_relaxed,
                                                   memory_order = memory_order_relaxed,
                                                   thread_scope = thread_scope_device) {
  return kk::cas(kk::cell(p), expected, desired);
}
