[[kernel]] void custom_kernel_shape_two_outputs_with_attr_float_float_float(
  const device float* x [[buffer(0)]],
  const constant int* x_shape [[buffer(1)]],
  const constant int& x_ndim [[buffer(2)]],
  device float* out1 [[buffer(3)]],
  device float* out2 [[buffer(4)]],
  uint3 thread_position_in_grid [[thread_position_in_grid]]) {
uint elem = thread_position_in_grid.x;
out1[elem] = x_shape[0]; out2[elem] = x_ndim;
}
