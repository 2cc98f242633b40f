[[kernel]] void custom_kernel_shape_only_float_float(
  const device float* inp [[buffer(0)]],
  const constant int* inp_shape [[buffer(1)]],
  device float* out [[buffer(2)]],
  uint3 thread_position_in_grid [[thread_position_in_grid]]) {
uint elem = thread_position_in_grid.x;
out[elem] = inp[elem] * inp_shape[0];
}
