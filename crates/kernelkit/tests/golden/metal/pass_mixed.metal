[[kernel]] void custom_kernel_pass_mixed_floats_int32_tc_float16_t_bfloat16_tc_uint32_ts_float16_t(
  const constant float& scale [[buffer(0)]],
  const constant int32_t* lut [[buffer(1)]],
  const device float16_t* data [[buffer(2)]],
  const constant bfloat16_t* bias [[buffer(3)]],
  const constant uint32_t& n [[buffer(4)]],
  device float16_t* out [[buffer(5)]],
  uint3 thread_position_in_grid [[thread_position_in_grid]]) {
uint i = thread_position_in_grid.x;
if (i < n) out[i] = data[i] * scale + bias[lut[i % 7] % 5];
}
