[[kernel]] void custom_kernel_Kernel123_float_float(
  const device float* A1 [[buffer(0)]],
  device float* B2 [[buffer(1)]],
  uint3 thread_position_in_grid [[thread_position_in_grid]]) {
uint i = thread_position_in_grid.x;
B2[i] = A1[i];
}
