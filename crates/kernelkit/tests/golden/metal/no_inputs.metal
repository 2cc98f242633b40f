[[kernel]] void custom_kernel_no_inputs_float(
  device float* out [[buffer(0)]]) {
out[0] = 1.0f;
}
