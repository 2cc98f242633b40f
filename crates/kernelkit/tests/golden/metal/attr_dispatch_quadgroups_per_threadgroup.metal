[[kernel]] void custom_kernel_attr_dispatch_quadgroups_per_threadgroup_float_float(
  const device float* inp [[buffer(0)]],
  device float* out [[buffer(1)]],
  uint dispatch_quadgroups_per_threadgroup [[dispatch_quadgroups_per_threadgroup]],
  uint quadgroups_per_threadgroup [[quadgroups_per_threadgroup]]) {
out[0] = inp[0] + dispatch_quadgroups_per_threadgroup;
}
