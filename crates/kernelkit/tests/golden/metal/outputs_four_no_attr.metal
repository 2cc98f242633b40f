[[kernel]] void custom_kernel_outputs_four_no_attr_int32_t_int32_t_uint8_t_float16_t_bool(
  const device int32_t* a [[buffer(0)]],
  device int32_t* w [[buffer(1)]],
  device uint8_t* x [[buffer(2)]],
  device float16_t* y [[buffer(3)]],
  device bool* z [[buffer(4)]]) {
w[0] = a[0]; x[0] = 1; y[0] = 2; z[0] = true;
}
