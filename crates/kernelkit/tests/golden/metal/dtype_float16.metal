template <typename T>
[[kernel]] void custom_kernel_dtype_float16__float16_t_float16_t_float16_tc_float16_ts_float16_t(
  const device float16_t* a [[buffer(0)]],
  const constant float16_t* c [[buffer(1)]],
  const constant float16_t& s [[buffer(2)]],
  device float16_t* o [[buffer(3)]],
  uint3 thread_position_in_grid [[thread_position_in_grid]]) {
uint i = thread_position_in_grid.x;
o[i] = a[i];
}

template [[host_name("custom_kernel_dtype_float16__float16_t_float16_t_float16_tc_float16_ts_float16_t")]] [[kernel]] decltype(custom_kernel_dtype_float16__float16_t_float16_t_float16_tc_float16_ts_float16_t<float16_t>) custom_kernel_dtype_float16__float16_t_float16_t_float16_tc_float16_ts_float16_t<float16_t>;
