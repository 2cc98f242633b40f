[[kernel]] void custom_kernel_attr_thread_index_in_quadgroup_float_float(
  const device float* inp [[buffer(0)]],
  device float* out [[buffer(1)]],
  uint thread_index_in_quadgroup [[thread_index_in_quadgroup]]) {
out[0] = inp[0] + thread_index_in_quadgroup;
}
