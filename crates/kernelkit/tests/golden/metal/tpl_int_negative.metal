template <int N>
[[kernel]] void custom_kernel_tpl_int_negative___3_float_float(
  const device float* a [[buffer(0)]],
  device float* o [[buffer(1)]],
  uint3 thread_position_in_grid [[thread_position_in_grid]]) {
uint i = thread_position_in_grid.x;
o[i] = a[i] * N;
}

template [[host_name("custom_kernel_tpl_int_negative___3_float_float")]] [[kernel]] decltype(custom_kernel_tpl_int_negative___3_float_float<-3>) custom_kernel_tpl_int_negative___3_float_float<-3>;
