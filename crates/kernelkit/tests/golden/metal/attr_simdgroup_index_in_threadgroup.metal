[[kernel]] void custom_kernel_attr_simdgroup_index_in_threadgroup_float_float(
  const device float* inp [[buffer(0)]],
  device float* out [[buffer(1)]],
  uint simdgroup_index_in_threadgroup [[simdgroup_index_in_threadgroup]]) {
out[0] = inp[0] + simdgroup_index_in_threadgroup;
}
