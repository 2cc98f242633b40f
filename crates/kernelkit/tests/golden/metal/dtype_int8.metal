template <typename T>
[[kernel]] void custom_kernel_dtype_int8__int8_t_int8_t_int8_tc_int8_ts_int8_t(
  const device int8_t* a [[buffer(0)]],
  const constant int8_t* c [[buffer(1)]],
  const constant int8_t& s [[buffer(2)]],
  device int8_t* o [[buffer(3)]],
  uint3 thread_position_in_grid [[thread_position_in_grid]]) {
uint i = thread_position_in_grid.x;
o[i] = a[i];
}

template [[host_name("custom_kernel_dtype_int8__int8_t_int8_t_int8_tc_int8_ts_int8_t")]] [[kernel]] decltype(custom_kernel_dtype_int8__int8_t_int8_t_int8_tc_int8_ts_int8_t<int8_t>) custom_kernel_dtype_int8__int8_t_int8_t_int8_tc_int8_ts_int8_t<int8_t>;
