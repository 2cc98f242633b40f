[[kernel]] void custom_kernel_attr_threadgroup_position_in_grid_float_float(
  const device float* inp [[buffer(0)]],
  device float* out [[buffer(1)]],
  uint3 threadgroup_position_in_grid [[threadgroup_position_in_grid]]) {
out[0] = inp[0] + threadgroup_position_in_grid.x;
}
