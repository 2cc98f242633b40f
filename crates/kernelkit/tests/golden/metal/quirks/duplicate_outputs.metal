[[kernel]] void custom_kernel_k_float_float_float(
  const device float* a [[buffer(0)]],
  device float* o [[buffer(1)]],
  device float* o [[buffer(2)]]) {
o[0] = 1;
}
