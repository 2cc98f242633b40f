[[kernel]] void custom_kernel_k_float_float(
  const device float* a [[buffer(0)]],
  device float* a [[buffer(1)]]) {
a[0] = 1;
}
