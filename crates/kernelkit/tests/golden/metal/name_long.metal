[[kernel]] void custom_kernel_a_rather_long_kernel_name_used_to_check_nothing_is_truncated_0123456789_float_float(
  const device float* a_very_long_input_name_with_many_words_0123456789 [[buffer(0)]],
  device float* o [[buffer(1)]],
  uint3 thread_position_in_grid [[thread_position_in_grid]]) {
uint i = thread_position_in_grid.x;
o[i] = a_very_long_input_name_with_many_words_0123456789[i];
}
