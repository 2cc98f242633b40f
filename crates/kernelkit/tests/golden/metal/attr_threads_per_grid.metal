[[kernel]] void custom_kernel_attr_threads_per_grid_float_float(
  const device float* inp [[buffer(0)]],
  device float* out [[buffer(1)]],
  uint3 threads_per_grid [[threads_per_grid]]) {
out[0] = inp[0] + threads_per_grid.x;
}
