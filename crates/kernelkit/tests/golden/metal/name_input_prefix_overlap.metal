[[kernel]] void custom_kernel_name_input_prefix_overlap_float_float_float(
  const device float* x [[buffer(0)]],
  const constant int& x_ndim [[buffer(1)]],
  const device float* x_s [[buffer(2)]],
  const constant int& x_s_ndim [[buffer(3)]],
  device float* out [[buffer(4)]],
  uint3 thread_position_in_grid [[thread_position_in_grid]]) {
uint i = thread_position_in_grid.x;
out[i] = x[i] + x_s[i] + x_s_ndim;  // 'x_s_ndim' contains no 'x_ndim'
}
