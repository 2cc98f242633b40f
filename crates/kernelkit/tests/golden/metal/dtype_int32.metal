template <typename T>
[[kernel]] void custom_kernel_dtype_int32__int32_t_int32_t_int32_tc_int32_ts_int32_t(
  const device int32_t* a [[buffer(0)]],
  const constant int32_t* c [[buffer(1)]],
  const constant int32_t& s [[buffer(2)]],
  device int32_t* o [[buffer(3)]],
  uint3 thread_position_in_grid [[thread_position_in_grid]]) {
uint i = thread_position_in_grid.x;
o[i] = a[i];
}

template [[host_name("custom_kernel_dtype_int32__int32_t_int32_t_int32_tc_int32_ts_int32_t")]] [[kernel]] decltype(custom_kernel_dtype_int32__int32_t_int32_t_int32_tc_int32_ts_int32_t<int32_t>) custom_kernel_dtype_int32__int32_t_int32_t_int32_tc_int32_ts_int32_t<int32_t>;
