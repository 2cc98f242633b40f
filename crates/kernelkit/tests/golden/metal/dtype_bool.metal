template <typename T>
[[kernel]] void custom_kernel_dtype_bool__bool_bool_boolc_bools_bool(
  const device bool* a [[buffer(0)]],
  const constant bool* c [[buffer(1)]],
  const constant bool& s [[buffer(2)]],
  device bool* o [[buffer(3)]],
  uint3 thread_position_in_grid [[thread_position_in_grid]]) {
uint i = thread_position_in_grid.x;
o[i] = a[i];
}

template [[host_name("custom_kernel_dtype_bool__bool_bool_boolc_bools_bool")]] [[kernel]] decltype(custom_kernel_dtype_bool__bool_bool_boolc_bools_bool<bool>) custom_kernel_dtype_bool__bool_bool_boolc_bools_bool<bool>;
