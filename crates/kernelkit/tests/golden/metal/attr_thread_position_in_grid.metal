[[kernel]] void custom_kernel_attr_thread_position_in_grid_float_float(
  const device float* inp [[buffer(0)]],
  device float* out [[buffer(1)]],
  uint3 thread_position_in_grid [[thread_position_in_grid]]) {
out[0] = inp[0] + thread_position_in_grid.x;
}
