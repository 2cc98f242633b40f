[[kernel]] void custom_kernel_k_float_float(
  const device float* float [[buffer(0)]],
  device float* device [[buffer(1)]]) {
device[0] = 1;
}
