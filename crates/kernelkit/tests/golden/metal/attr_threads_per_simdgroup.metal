[[kernel]] void custom_kernel_attr_threads_per_simdgroup_float_float(
  const device float* inp [[buffer(0)]],
  device float* out [[buffer(1)]],
  uint threads_per_simdgroup [[threads_per_simdgroup]]) {
out[0] = inp[0] + threads_per_simdgroup;
}
