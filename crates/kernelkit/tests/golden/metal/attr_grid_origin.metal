[[kernel]] void custom_kernel_attr_grid_origin_float_float(
  const device float* inp [[buffer(0)]],
  device float* out [[buffer(1)]],
  uint3 grid_origin [[grid_origin]]) {
out[0] = inp[0] + grid_origin.x;
}
