[[kernel]] void custom_kernel_attr_no_inputs_uint32_t(
  device uint32_t* out [[buffer(0)]],
  uint thread_index_in_threadgroup [[thread_index_in_threadgroup]],
  uint threads_per_simdgroup [[threads_per_simdgroup]]) {
out[thread_index_in_threadgroup] = threads_per_simdgroup;
}
