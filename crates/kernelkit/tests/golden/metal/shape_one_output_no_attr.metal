[[kernel]] void custom_kernel_shape_one_output_no_attr_float_float(
  const device float* x [[buffer(0)]],
  const constant int* x_shape [[buffer(1)]],
  const constant int& x_ndim [[buffer(2)]],
  device float* out [[buffer(3)]]) {
out[0] = x_shape[0] * x_shape[1] + x_ndim;
}
