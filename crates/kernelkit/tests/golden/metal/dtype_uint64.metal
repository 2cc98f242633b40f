template <typename T>
[[kernel]] void custom_kernel_dtype_uint64__uint64_t_uint64_t_uint64_tc_uint64_ts_uint64_t(
  const device uint64_t* a [[buffer(0)]],
  const constant uint64_t* c [[buffer(1)]],
  const constant uint64_t& s [[buffer(2)]],
  device uint64_t* o [[buffer(3)]],
  uint3 thread_position_in_grid [[thread_position_in_grid]]) {
uint i = thread_position_in_grid.x;
o[i] = a[i];
}

template [[host_name("custom_kernel_dtype_uint64__uint64_t_uint64_t_uint64_tc_uint64_ts_uint64_t")]] [[kernel]] decltype(custom_kernel_dtype_uint64__uint64_t_uint64_t_uint64_tc_uint64_ts_uint64_t<uint64_t>) custom_kernel_dtype_uint64__uint64_t_uint64_t_uint64_tc_uint64_ts_uint64_t<uint64_t>;
