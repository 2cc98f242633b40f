template <typename T>
[[kernel]] void custom_kernel_dtype_float32__float_float_floatc_floats_float(
  const device float* a [[buffer(0)]],
  const constant float* c [[buffer(1)]],
  const constant float& s [[buffer(2)]],
  device float* o [[buffer(3)]],
  uint3 thread_position_in_grid [[thread_position_in_grid]]) {
uint i = thread_position_in_grid.x;
o[i] = a[i];
}

template [[host_name("custom_kernel_dtype_float32__float_float_floatc_floats_float")]] [[kernel]] decltype(custom_kernel_dtype_float32__float_float_floatc_floats_float<float>) custom_kernel_dtype_float32__float_float_floatc_floats_float<float>;
