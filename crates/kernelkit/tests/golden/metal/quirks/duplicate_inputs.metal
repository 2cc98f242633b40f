[[kernel]] void custom_kernel_k_float_int32_tc_float(
  const device float* a [[buffer(0)]],
  const constant int32_t* a [[buffer(1)]],
  device float* o [[buffer(2)]]) {
o[0] = a[0];
}
