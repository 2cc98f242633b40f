// en-tête: ünïcödé ⚙
[[kernel]] void custom_kernel_body_unicode_float_float(
  const device float* a [[buffer(0)]],
  device float* o [[buffer(1)]],
  uint3 thread_position_in_grid [[thread_position_in_grid]]) {
// Größe × 2 — naïve café ✓ 日本語 🚀
uint i = thread_position_in_grid.x;
o[i] = a[i] * 2; // “quotes” ±

}
