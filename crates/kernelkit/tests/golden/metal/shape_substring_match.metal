[[kernel]] void custom_kernel_shape_substring_match_float_float_float(
  const device float* a [[buffer(0)]],
  const constant int* a_shape [[buffer(1)]],
  const device float* data [[buffer(2)]],
  const constant int* data_shape [[buffer(3)]],
  device float* out [[buffer(4)]],
  uint3 thread_position_in_grid [[thread_position_in_grid]]) {
uint elem = thread_position_in_grid.x;
int data_shape0 = 8; // input a is never indexed by shape here
out[elem] = a[elem] + data[elem] + data_shape0;
}
