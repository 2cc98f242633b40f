[[kernel]] void custom_kernel_pass_const_2x3_int32_tc_int32_t(
  const constant int32_t* x [[buffer(0)]],
  device int32_t* out [[buffer(1)]],
  uint3 thread_position_in_grid [[thread_position_in_grid]]) {
uint i = thread_position_in_grid.x;
out[i] = x[i];
}
