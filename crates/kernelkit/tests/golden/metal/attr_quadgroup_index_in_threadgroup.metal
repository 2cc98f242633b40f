[[kernel]] void custom_kernel_attr_quadgroup_index_in_threadgroup_float_float(
  const device float* inp [[buffer(0)]],
  device float* out [[buffer(1)]],
  uint quadgroup_index_in_threadgroup [[quadgroup_index_in_threadgroup]]) {
out[0] = inp[0] + quadgroup_index_in_threadgroup;
}
