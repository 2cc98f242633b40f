// x_shape x_strides x_ndim thread_index_in_simdgroup only in the header
[[kernel]] void custom_kernel_shape_in_header_only_float_float(
  const device float* x [[buffer(0)]],
  device float* out [[buffer(1)]],
  uint3 thread_position_in_grid [[thread_position_in_grid]]) {
uint elem = thread_position_in_grid.x;
out[elem] = x[elem];
}
