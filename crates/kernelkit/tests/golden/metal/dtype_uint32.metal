template <typename T>
[[kernel]] void custom_kernel_dtype_uint32__uint32_t_uint32_t_uint32_tc_uint32_ts_uint32_t(
  const device uint32_t* a [[buffer(0)]],
  const constant uint32_t* c [[buffer(1)]],
  const constant uint32_t& s [[buffer(2)]],
  device uint32_t* o [[buffer(3)]],
  uint3 thread_position_in_grid [[thread_position_in_grid]]) {
uint i = thread_position_in_grid.x;
o[i] = a[i];
}

template [[host_name("custom_kernel_dtype_uint32__uint32_t_uint32_t_uint32_tc_uint32_ts_uint32_t")]] [[kernel]] decltype(custom_kernel_dtype_uint32__uint32_t_uint32_t_uint32_tc_uint32_ts_uint32_t<uint32_t>) custom_kernel_dtype_uint32__uint32_t_uint32_t_uint32_tc_uint32_ts_uint32_t<uint32_t>;
