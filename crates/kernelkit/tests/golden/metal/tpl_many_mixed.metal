template <typename U, int K, bool F, int M, typename V, typename W>
[[kernel]] void custom_kernel_tpl_many_mixed__float__1_0_10_int64_t_complex64_t_bfloat16_t_bfloat16_t_int8_t(
  const device bfloat16_t* a [[buffer(0)]],
  device bfloat16_t* o [[buffer(1)]],
  device int8_t* p [[buffer(2)]],
  uint3 thread_position_in_grid [[thread_position_in_grid]]) {
uint i = thread_position_in_grid.x;
o[i] = U(a[i]) * K; p[i] = F ? M : 0;
}

template [[host_name("custom_kernel_tpl_many_mixed__float__1_0_10_int64_t_complex64_t_bfloat16_t_bfloat16_t_int8_t")]] [[kernel]] decltype(custom_kernel_tpl_many_mixed__float__1_0_10_int64_t_complex64_t_bfloat16_t_bfloat16_t_int8_t<float, -1, 0, 10, int64_t, complex64_t>) custom_kernel_tpl_many_mixed__float__1_0_10_int64_t_complex64_t_bfloat16_t_bfloat16_t_int8_t<float, -1, 0, 10, int64_t, complex64_t>;
