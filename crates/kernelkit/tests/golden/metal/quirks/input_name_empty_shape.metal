[[kernel]] void custom_kernel_k_float_float(
  const device float*  [[buffer(0)]],
  const constant int* _shape [[buffer(1)]],
  device float* o [[buffer(2)]]) {
o[0] = _shape[0];
}
