template <int T, int T>
[[kernel]] void custom_kernel_k__1_2_float_float(
  const device float* a [[buffer(0)]],
  device float* o [[buffer(1)]]) {
o[0] = T;
}

template [[host_name("custom_kernel_k__1_2_float_float")]] [[kernel]] decltype(custom_kernel_k__1_2_float_float<1, 2>) custom_kernel_k__1_2_float_float<1, 2>;
