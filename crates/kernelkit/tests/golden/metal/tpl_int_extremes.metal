template <int LO, int HI>
[[kernel]] void custom_kernel_tpl_int_extremes___2147483648_2147483647_float_float(
  const device float* a [[buffer(0)]],
  device float* o [[buffer(1)]],
  uint3 thread_position_in_grid [[thread_position_in_grid]]) {
uint i = thread_position_in_grid.x;
o[i] = a[i] + LO + HI;
}

template [[host_name("custom_kernel_tpl_int_extremes___2147483648_2147483647_float_float")]] [[kernel]] decltype(custom_kernel_tpl_int_extremes___2147483648_2147483647_float_float<-2147483648, 2147483647>) custom_kernel_tpl_int_extremes___2147483648_2147483647_float_float<-2147483648, 2147483647>;
