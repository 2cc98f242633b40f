[[kernel]] void custom_kernel_my-kernel_float_float(
  const device float* a [[buffer(0)]],
  device float* o [[buffer(1)]]) {
o[0] = a[0];
}
