[[kernel]] void custom_kernel_attr_grid_size_float_float(
  const device float* inp [[buffer(0)]],
  device float* out [[buffer(1)]],
  uint3 grid_size [[grid_size]]) {
out[0] = inp[0] + grid_size.x;
}
