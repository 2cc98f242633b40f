[[kernel]] void custom_kernel_shape_two_outputs_noncontig_attr_float_int32_t_float_int32_t(
  const device float* x [[buffer(0)]],
  const constant int64_t* x_strides [[buffer(1)]],
  const device int32_t* y [[buffer(2)]],
  const constant int* y_shape [[buffer(3)]],
  device float* out1 [[buffer(4)]],
  device int32_t* out2 [[buffer(5)]],
  uint3 thread_position_in_threadgroup [[thread_position_in_threadgroup]]) {
uint3 p = thread_position_in_threadgroup;
out1[p.x] = x[p.x * x_strides[1]]; out2[p.x] = y[p.x] + y_shape[0];
}
