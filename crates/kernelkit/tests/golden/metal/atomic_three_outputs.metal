[[kernel]] void custom_kernel_atomic_three_outputs_int32_t_int32_ts_int32_t_uint32_t_float(
  const device int32_t* inp [[buffer(0)]],
  const constant int32_t& k [[buffer(1)]],
  device atomic<int32_t>* sum [[buffer(2)]],
  device atomic<uint32_t>* cnt [[buffer(3)]],
  device atomic<float>* fsum [[buffer(4)]],
  uint3 thread_position_in_grid [[thread_position_in_grid]]) {
uint i = thread_position_in_grid.x;
atomic_fetch_add_explicit(&sum[0], inp[i] * k, memory_order_relaxed);
atomic_fetch_add_explicit(&cnt[0], 1u, memory_order_relaxed);
atomic_fetch_add_explicit(&fsum[0], float(inp[i]), memory_order_relaxed);
}
