inline float sq(float x) { return x * x; }
[[kernel]] void custom_kernel_header_short_float_float(
  const device float* a [[buffer(0)]],
  device float* o [[buffer(1)]],
  uint3 thread_position_in_grid [[thread_position_in_grid]]) {
uint i = thread_position_in_grid.x;
o[i] = sq(a[i]);
}
