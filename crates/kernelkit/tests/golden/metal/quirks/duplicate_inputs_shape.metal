[[kernel]] void custom_kernel_k_float_int32_tc_float(
  const device float* a [[buffer(0)]],
  const constant int* a_shape [[buffer(1)]],
  const constant int32_t* a [[buffer(2)]],
  const constant int* a_shape [[buffer(3)]],
  device float* o [[buffer(4)]],
  uint thread_index_in_threadgroup [[thread_index_in_threadgroup]]) {
o[thread_index_in_threadgroup] = a_shape[0];
}
