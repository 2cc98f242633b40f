[[kernel]] void custom_kernel_body_empty_float_float(
  const device float* a [[buffer(0)]],
  device float* o [[buffer(1)]]) {

}
