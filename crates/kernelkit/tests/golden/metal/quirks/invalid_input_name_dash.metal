[[kernel]] void custom_kernel_k_float_float(
  const device float* in-put [[buffer(0)]],
  device float* o [[buffer(1)]]) {
o[0] = 1;
}
