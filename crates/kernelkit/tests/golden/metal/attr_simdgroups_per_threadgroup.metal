[[kernel]] void custom_kernel_attr_simdgroups_per_threadgroup_float_float(
  const device float* inp [[buffer(0)]],
  device float* out [[buffer(1)]],
  uint simdgroups_per_threadgroup [[simdgroups_per_threadgroup]]) {
out[0] = inp[0] + simdgroups_per_threadgroup;
}
