[[kernel]] void custom_kernel_my_kernel_2d_v3_float_float_int32_ts_float_float(
  const device float* x0 [[buffer(0)]],
  const device float* in_1 [[buffer(1)]],
  const constant int32_t& _y2 [[buffer(2)]],
  device float* out_0 [[buffer(3)]],
  device float* o2_b [[buffer(4)]],
  uint3 thread_position_in_grid [[thread_position_in_grid]]) {
uint i = thread_position_in_grid.x;
out_0[i] = x0[i] + in_1[i]; o2_b[i] = _y2;
}
