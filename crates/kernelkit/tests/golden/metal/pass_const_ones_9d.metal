[[kernel]] void custom_kernel_pass_const_ones_9d_floatc_float(
  const constant float* x [[buffer(0)]],
  device float* out [[buffer(1)]]) {
out[0] = x[0];
}
