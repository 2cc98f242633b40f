[[kernel]] void custom_kernel_atomic_false_explicit_int32_t_int32_t(
  const device int32_t* inp [[buffer(0)]],
  device int32_t* out [[buffer(1)]],
  uint3 thread_position_in_grid [[thread_position_in_grid]]) {
uint i = thread_position_in_grid.x;
out[i] = inp[i];
}
