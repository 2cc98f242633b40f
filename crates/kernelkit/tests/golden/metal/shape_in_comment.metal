[[kernel]] void custom_kernel_shape_in_comment_float_float(
  const device float* x [[buffer(0)]],
  const constant int64_t* x_strides [[buffer(1)]],
  device float* out [[buffer(2)]],
  uint3 thread_position_in_grid [[thread_position_in_grid]]) {
uint elem = thread_position_in_grid.x;
// x_strides is mentioned only in this comment
out[elem] = x[elem];
}
