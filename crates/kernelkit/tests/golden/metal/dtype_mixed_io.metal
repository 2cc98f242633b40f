[[kernel]] void custom_kernel_dtype_mixed_io_float16_t_bfloat16_tc_int64_ts_uint8_t_float_int16_t_complex64_t_bool(
  const device float16_t* a [[buffer(0)]],
  const constant bfloat16_t* b [[buffer(1)]],
  const constant int64_t& c [[buffer(2)]],
  const device uint8_t* d [[buffer(3)]],
  device float* o1 [[buffer(4)]],
  device int16_t* o2 [[buffer(5)]],
  device complex64_t* o3 [[buffer(6)]],
  device bool* o4 [[buffer(7)]],
  uint3 thread_position_in_grid [[thread_position_in_grid]]) {
uint i = thread_position_in_grid.x;
o1[i] = a[i]; o2[i] = c; o3[i] = complex64_t(0, 0); o4[i] = d[i] > 0;
}
