template <typename T>
[[kernel]] void custom_kernel_dtype_bfloat16__bfloat16_t_bfloat16_t_bfloat16_tc_bfloat16_ts_bfloat16_t(
  const device bfloat16_t* a [[buffer(0)]],
  const constant bfloat16_t* c [[buffer(1)]],
  const constant bfloat16_t& s [[buffer(2)]],
  device bfloat16_t* o [[buffer(3)]],
  uint3 thread_position_in_grid [[thread_position_in_grid]]) {
uint i = thread_position_in_grid.x;
o[i] = a[i];
}

template [[host_name("custom_kernel_dtype_bfloat16__bfloat16_t_bfloat16_t_bfloat16_tc_bfloat16_ts_bfloat16_t")]] [[kernel]] decltype(custom_kernel_dtype_bfloat16__bfloat16_t_bfloat16_t_bfloat16_tc_bfloat16_ts_bfloat16_t<bfloat16_t>) custom_kernel_dtype_bfloat16__bfloat16_t_bfloat16_t_bfloat16_tc_bfloat16_ts_bfloat16_t<bfloat16_t>;
