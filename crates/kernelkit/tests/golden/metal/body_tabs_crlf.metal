[[kernel]] void custom_kernel_body_tabs_crlf_float_float(
  const device float* a [[buffer(0)]],
  device float* o [[buffer(1)]],
  uint3 thread_position_in_grid [[thread_position_in_grid]]) {
	uint i = thread_position_in_grid.x;
	if (i < 8) {
		o[i] = a[i];
	}

}
