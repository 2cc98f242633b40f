[[kernel]] void custom_kernel_no_inputs_two_outputs_float_int32_t(
  device float* o1 [[buffer(0)]],
  device int32_t* o2 [[buffer(1)]]) {
o1[0] = 1.0f; o2[0] = 2;
}
