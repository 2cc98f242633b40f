[[kernel]] void custom_kernel_shape_several_inputs_float_float16_t_int32_tc_uint8_t_floats_float(
  const device float* a [[buffer(0)]],
  const constant int* a_shape [[buffer(1)]],
  const device float16_t* b [[buffer(2)]],
  const constant int64_t* b_strides [[buffer(3)]],
  const constant int& b_ndim [[buffer(4)]],
  const constant int32_t* c [[buffer(5)]],
  const device uint8_t* d [[buffer(6)]],
  const constant int* d_shape [[buffer(7)]],
  const constant int64_t* d_strides [[buffer(8)]],
  const constant int& d_ndim [[buffer(9)]],
  const constant float& e [[buffer(10)]],
  device float* out [[buffer(11)]],
  uint3 thread_position_in_grid [[thread_position_in_grid]]) {
uint elem = thread_position_in_grid.x;
out[elem] = a_shape[0] + b_strides[0] + b_ndim + c[0] + d_shape[1] + d_strides[1] + d_ndim + e;
}
