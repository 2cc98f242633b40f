[[kernel]] void custom_kernel_shape_on_scalar_floats_float_float(
  const constant float& x [[buffer(0)]],
  const device float* y [[buffer(1)]],
  device float* out [[buffer(2)]],
  uint3 thread_position_in_grid [[thread_position_in_grid]]) {
uint elem = thread_position_in_grid.x;
out[elem] = y[elem] + x; // x_shape x_strides x_ndim are not generated for 0-d inputs
}
