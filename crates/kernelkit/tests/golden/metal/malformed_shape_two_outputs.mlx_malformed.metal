[[kernel]] void custom_kernel_malformed_shape_two_outputs_float_float_float(
  const device float* x [[buffer(0)]],
  const constant int* x_shape [[buffer(1)]],
  device float* out1 [[buffer(2)]]) {
  device float* out2 [[buffer(3)]]) {
out1[0] = x_shape[0]; out2[0] = x_shape[1];
}
