[[kernel]] void custom_kernel_attr_thread_execution_width_float_float(
  const device float* inp [[buffer(0)]],
  device float* out [[buffer(1)]],
  uint thread_execution_width [[thread_execution_width]]) {
out[0] = inp[0] + thread_execution_width;
}
