[[kernel]] void custom_kernel_pass_device_large_float16_t_float16_t(
  const device float16_t* x [[buffer(0)]],
  device float16_t* out [[buffer(1)]],
  uint3 thread_position_in_grid [[thread_position_in_grid]]) {
uint i = thread_position_in_grid.x;
out[i] = x[i];
}
