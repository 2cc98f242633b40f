[[kernel]] void custom_kernel_shape_on_constant_floatc_float(
  const constant float* x [[buffer(0)]],
  const constant int* x_shape [[buffer(1)]],
  const constant int64_t* x_strides [[buffer(2)]],
  const constant int& x_ndim [[buffer(3)]],
  device float* out [[buffer(4)]],
  uint3 thread_position_in_grid [[thread_position_in_grid]]) {
uint elem = thread_position_in_grid.x;
out[elem] = x[elem % x_shape[0]] + x_strides[0] + x_ndim;
}
