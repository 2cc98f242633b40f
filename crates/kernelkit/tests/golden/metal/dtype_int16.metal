template <typename T>
[[kernel]] void custom_kernel_dtype_int16__int16_t_int16_t_int16_tc_int16_ts_int16_t(
  const device int16_t* a [[buffer(0)]],
  const constant int16_t* c [[buffer(1)]],
  const constant int16_t& s [[buffer(2)]],
  device int16_t* o [[buffer(3)]],
  uint3 thread_position_in_grid [[thread_position_in_grid]]) {
uint i = thread_position_in_grid.x;
o[i] = a[i];
}

template [[host_name("custom_kernel_dtype_int16__int16_t_int16_t_int16_tc_int16_ts_int16_t")]] [[kernel]] decltype(custom_kernel_dtype_int16__int16_t_int16_t_int16_tc_int16_ts_int16_t<int16_t>) custom_kernel_dtype_int16__int16_t_int16_t_int16_tc_int16_ts_int16_t<int16_t>;
