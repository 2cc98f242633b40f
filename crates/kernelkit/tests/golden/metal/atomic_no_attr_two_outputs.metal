[[kernel]] void custom_kernel_atomic_no_attr_two_outputs_int32_t_int32_t_int32_t(
  const device int32_t* inp [[buffer(0)]],
  device atomic<int32_t>* a [[buffer(1)]],
  device atomic<int32_t>* b [[buffer(2)]]) {
atomic_store_explicit(&a[0], inp[0], memory_order_relaxed); atomic_store_explicit(&b[0], 1, memory_order_relaxed);
}
