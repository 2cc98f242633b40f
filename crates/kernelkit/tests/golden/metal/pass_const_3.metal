[[kernel]] void custom_kernel_pass_const_3_floatc_float(
  const constant float* x [[buffer(0)]],
  device float* out [[buffer(1)]],
  uint3 thread_position_in_grid [[thread_position_in_grid]]) {
uint i = thread_position_in_grid.x;
out[i] = x[i % 3];
}
