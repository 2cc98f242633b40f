[[kernel]] void custom_kernel_malformed_all_three_outputs_float_float_float_int32_t(
  const device float* x [[buffer(0)]],
  const constant int* x_shape [[buffer(1)]],
  const constant int64_t* x_strides [[buffer(2)]],
  const constant int& x_ndim [[buffer(3)]],
  device float* o1 [[buffer(4)]]) {
  device float* o2 [[buffer(5)]]) {
  device int32_t* o3 [[buffer(6)]]) {
o1[0] = x_shape[0]; o2[0] = x_strides[0]; o3[0] = x_ndim;
}
