[[kernel]] void custom_kernel_body_comments_float_float(
  const device float* a [[buffer(0)]],
  device float* o [[buffer(1)]],
  uint3 thread_position_in_grid [[thread_position_in_grid]]) {
// leading comment
uint i = thread_position_in_grid.x; // index
/* block
   comment */
o[i] = a[i]; // trailing comment without newline
}
