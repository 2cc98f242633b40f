[[kernel]] void custom_kernel_outputs_two_float_float_float(
  const device float* a [[buffer(0)]],
  device float* lo [[buffer(1)]],
  device float* hi [[buffer(2)]],
  uint3 thread_position_in_grid [[thread_position_in_grid]]) {
uint i = thread_position_in_grid.x;
lo[i] = min(a[i], 0.0f); hi[i] = max(a[i], 0.0f);
}
