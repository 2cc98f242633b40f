template <typename T>
[[kernel]] void custom_kernel_dtype_complex64__complex64_t_complex64_t_complex64_tc_complex64_ts_complex64_t(
  const device complex64_t* a [[buffer(0)]],
  const constant complex64_t* c [[buffer(1)]],
  const constant complex64_t& s [[buffer(2)]],
  device complex64_t* o [[buffer(3)]],
  uint3 thread_position_in_grid [[thread_position_in_grid]]) {
uint i = thread_position_in_grid.x;
o[i] = a[i];
}

template [[host_name("custom_kernel_dtype_complex64__complex64_t_complex64_t_complex64_tc_complex64_ts_complex64_t")]] [[kernel]] decltype(custom_kernel_dtype_complex64__complex64_t_complex64_t_complex64_tc_complex64_ts_complex64_t<complex64_t>) custom_kernel_dtype_complex64__complex64_t_complex64_t_complex64_tc_complex64_ts_complex64_t<complex64_t>;
