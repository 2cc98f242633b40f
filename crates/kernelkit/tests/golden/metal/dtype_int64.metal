template <typename T>
[[kernel]] void custom_kernel_dtype_int64__int64_t_int64_t_int64_tc_int64_ts_int64_t(
  const device int64_t* a [[buffer(0)]],
  const constant int64_t* c [[buffer(1)]],
  const constant int64_t& s [[buffer(2)]],
  device int64_t* o [[buffer(3)]],
  uint3 thread_position_in_grid [[thread_position_in_grid]]) {
uint i = thread_position_in_grid.x;
o[i] = a[i];
}

template [[host_name("custom_kernel_dtype_int64__int64_t_int64_t_int64_tc_int64_ts_int64_t")]] [[kernel]] decltype(custom_kernel_dtype_int64__int64_t_int64_t_int64_tc_int64_ts_int64_t<int64_t>) custom_kernel_dtype_int64__int64_t_int64_t_int64_tc_int64_ts_int64_t<int64_t>;
