[[kernel]] void custom_kernel_attr_threadgroups_per_grid_float_float(
  const device float* inp [[buffer(0)]],
  device float* out [[buffer(1)]],
  uint3 threadgroups_per_grid [[threadgroups_per_grid]]) {
out[0] = inp[0] + threadgroups_per_grid.x;
}
