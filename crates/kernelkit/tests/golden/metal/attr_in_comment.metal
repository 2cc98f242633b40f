[[kernel]] void custom_kernel_attr_in_comment_float_float(
  const device float* inp [[buffer(0)]],
  device float* out [[buffer(1)]],
  uint3 grid_size [[grid_size]],
  uint threads_per_simdgroup [[threads_per_simdgroup]]) {
// grid_size and threads_per_simdgroup appear only in this comment
out[0] = inp[0];
}
