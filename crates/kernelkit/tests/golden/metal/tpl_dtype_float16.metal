template <typename T>
[[kernel]] void custom_kernel_tpl_dtype_float16__float16_t_float16_t_float16_t(
  const device float16_t* a [[buffer(0)]],
  device float16_t* o [[buffer(1)]],
  uint3 thread_position_in_grid [[thread_position_in_grid]]) {
uint i = thread_position_in_grid.x;
o[i] = static_cast<T>(a[i]);
}

template [[host_name("custom_kernel_tpl_dtype_float16__float16_t_float16_t_float16_t")]] [[kernel]] decltype(custom_kernel_tpl_dtype_float16__float16_t_float16_t_float16_t<float16_t>) custom_kernel_tpl_dtype_float16__float16_t_float16_t_float16_t<float16_t>;
