[[kernel]] void custom_kernel_attr_from_input_name_float_float(
  const device float* grid_size_buf [[buffer(0)]],
  device float* out [[buffer(1)]],
  uint3 grid_size [[grid_size]]) {
out[0] = grid_size_buf[0];
}
