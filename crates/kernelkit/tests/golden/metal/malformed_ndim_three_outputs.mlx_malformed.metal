[[kernel]] void custom_kernel_malformed_ndim_three_outputs_float_float_float_float_float(
  const device float* x [[buffer(0)]],
  const constant int& x_ndim [[buffer(1)]],
  const device float* y [[buffer(2)]],
  device float* o1 [[buffer(3)]],
  device float* o2 [[buffer(4)]]) {
  device float* o3 [[buffer(5)]]) {
o1[0] = x_ndim; o2[0] = y[0]; o3[0] = 0;
}
