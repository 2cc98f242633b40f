template <typename T, int N, bool B>
[[kernel]] void custom_kernel_myexp__float16_t_4_1_floatc_int32_ts_float(
  const constant float* inp [[buffer(0)]],
  const constant int32_t& x [[buffer(1)]],
  device float* out [[buffer(2)]],
  uint3 thread_position_in_grid [[thread_position_in_grid]]) {
uint i = thread_position_in_grid.x; out[i] = inp[i] * x;
}

template [[host_name("custom_kernel_myexp__float16_t_4_1_floatc_int32_ts_float")]] [[kernel]] decltype(custom_kernel_myexp__float16_t_4_1_floatc_int32_ts_float<float16_t, 4, 1>) custom_kernel_myexp__float16_t_4_1_floatc_int32_ts_float<float16_t, 4, 1>;
