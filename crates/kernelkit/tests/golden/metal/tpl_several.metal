template <typename T, int N, bool B>
[[kernel]] void custom_kernel_tpl_several__float16_t_4_1_float16_t_int32_ts_float16_t(
  const device float16_t* inp [[buffer(0)]],
  const constant int32_t& x [[buffer(1)]],
  device float16_t* out [[buffer(2)]],
  uint3 thread_position_in_grid [[thread_position_in_grid]]) {
uint i = thread_position_in_grid.x;
if (B) out[i] = static_cast<T>(inp[i] * x * N);
}

template [[host_name("custom_kernel_tpl_several__float16_t_4_1_float16_t_int32_ts_float16_t")]] [[kernel]] decltype(custom_kernel_tpl_several__float16_t_4_1_float16_t_int32_ts_float16_t<float16_t, 4, 1>) custom_kernel_tpl_several__float16_t_4_1_float16_t_int32_ts_float16_t<float16_t, 4, 1>;
