template <typename T>
[[kernel]] void custom_kernel_dtype_float64_template__double_float_float(
  const device float* a [[buffer(0)]],
  device float* o [[buffer(1)]],
  uint3 thread_position_in_grid [[thread_position_in_grid]]) {
uint i = thread_position_in_grid.x;
o[i] = static_cast<float>(static_cast<T>(a[i]));
}

template [[host_name("custom_kernel_dtype_float64_template__double_float_float")]] [[kernel]] decltype(custom_kernel_dtype_float64_template__double_float_float<double>) custom_kernel_dtype_float64_template__double_float_float<double>;
