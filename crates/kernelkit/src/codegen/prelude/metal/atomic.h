// ---- 2.5 / 6.13 Atomic types and functions: the prelude's atomics (for
// device memory reached through any pointer, and threadgroup variables)
// under Metal's names.
namespace metal {
using ::atomic;
typedef atomic<int> atomic_int;
typedef atomic<unsigned int> atomic_uint;
typedef atomic<bool> atomic_bool;
typedef atomic<unsigned long> atomic_ulong;
typedef atomic<long> atomic_long;
typedef atomic<float> atomic_float;
using ::memory_order;
using ::memory_order_relaxed;
using ::memory_order_acquire;
using ::memory_order_release;
using ::memory_order_acq_rel;
using ::memory_order_seq_cst;
using ::thread_scope;
using ::thread_scope_thread;
using ::thread_scope_simdgroup;
using ::thread_scope_threadgroup;
using ::thread_scope_device;
using ::atomic_store_explicit;
using ::atomic_load_explicit;
using ::atomic_exchange_explicit;
using ::atomic_compare_exchange_weak_explicit;
using ::atomic_compare_exchange_strong_explicit;
using ::atomic_fetch_add_explicit;
using ::atomic_fetch_sub_explicit;
using ::atomic_fetch_and_explicit;
using ::atomic_fetch_or_explicit;
using ::atomic_fetch_xor_explicit;
using ::atomic_fetch_min_explicit;
using ::atomic_fetch_max_explicit;
}  // namespace metal
