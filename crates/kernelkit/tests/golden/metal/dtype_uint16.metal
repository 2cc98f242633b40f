template <typename T>
[[kernel]] void custom_kernel_dtype_uint16__uint16_t_uint16_t_uint16_tc_uint16_ts_uint16_t(
  const device uint16_t* a [[buffer(0)]],
  const constant uint16_t* c [[buffer(1)]],
  const constant uint16_t& s [[buffer(2)]],
  device uint16_t* o [[buffer(3)]],
  uint3 thread_position_in_grid [[thread_position_in_grid]]) {
uint i = thread_position_in_grid.x;
o[i] = a[i];
}

template [[host_name("custom_kernel_dtype_uint16__uint16_t_uint16_t_uint16_tc_uint16_ts_uint16_t")]] [[kernel]] decltype(custom_kernel_dtype_uint16__uint16_t_uint16_t_uint16_tc_uint16_ts_uint16_t<uint16_t>) custom_kernel_dtype_uint16__uint16_t_uint16_t_uint16_tc_uint16_ts_uint16_t<uint16_t>;
