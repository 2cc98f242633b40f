template <typename T>
[[kernel]] void custom_kernel_dtype_uint8__uint8_t_uint8_t_uint8_tc_uint8_ts_uint8_t(
  const device uint8_t* a [[buffer(0)]],
  const constant uint8_t* c [[buffer(1)]],
  const constant uint8_t& s [[buffer(2)]],
  device uint8_t* o [[buffer(3)]],
  uint3 thread_position_in_grid [[thread_position_in_grid]]) {
uint i = thread_position_in_grid.x;
o[i] = a[i];
}

template [[host_name("custom_kernel_dtype_uint8__uint8_t_uint8_t_uint8_tc_uint8_ts_uint8_t")]] [[kernel]] decltype(custom_kernel_dtype_uint8__uint8_t_uint8_t_uint8_tc_uint8_ts_uint8_t<uint8_t>) custom_kernel_dtype_uint8__uint8_t_uint8_t_uint8_tc_uint8_ts_uint8_t<uint8_t>;
