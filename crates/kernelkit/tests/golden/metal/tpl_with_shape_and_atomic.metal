template <typename T, int S>
[[kernel]] void custom_kernel_tpl_with_shape_and_atomic__float_2_float_float(
  const device float* x [[buffer(0)]],
  const constant int* x_shape [[buffer(1)]],
  device atomic<float>* acc [[buffer(2)]],
  uint3 thread_position_in_grid [[thread_position_in_grid]]) {
uint i = thread_position_in_grid.x;
if (i < uint(x_shape[0] * x_shape[1])) atomic_fetch_add_explicit(&acc[0], T(x[i]) * S, memory_order_relaxed);
}

template [[host_name("custom_kernel_tpl_with_shape_and_atomic__float_2_float_float")]] [[kernel]] decltype(custom_kernel_tpl_with_shape_and_atomic__float_2_float_float<float, 2>) custom_kernel_tpl_with_shape_and_atomic__float_2_float_float<float, 2>;
