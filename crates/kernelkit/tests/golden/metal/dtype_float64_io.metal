[[kernel]] void custom_kernel_dtype_float64_io_double_doubles_double(
  const device double* a [[buffer(0)]],
  const constant double& s [[buffer(1)]],
  device double* o [[buffer(2)]],
  uint3 thread_position_in_grid [[thread_position_in_grid]]) {
uint i = thread_position_in_grid.x;
o[i] = a[i] + s;
}
