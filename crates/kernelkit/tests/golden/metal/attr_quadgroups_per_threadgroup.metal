[[kernel]] void custom_kernel_attr_quadgroups_per_threadgroup_float_float(
  const device float* inp [[buffer(0)]],
  device float* out [[buffer(1)]],
  uint quadgroups_per_threadgroup [[quadgroups_per_threadgroup]]) {
out[0] = inp[0] + quadgroups_per_threadgroup;
}
