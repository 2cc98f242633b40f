[[kernel]] void custom_kernel_atomic_one_output_float_float(
  const device float* inp [[buffer(0)]],
  device atomic<float>* out [[buffer(1)]],
  uint3 thread_position_in_grid [[thread_position_in_grid]]) {
uint i = thread_position_in_grid.x;
atomic_fetch_add_explicit(&out[0], inp[i], memory_order_relaxed);
}
