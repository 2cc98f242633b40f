template <int 1-x>
[[kernel]] void custom_kernel_k__1_float_float(
  const device float* a [[buffer(0)]],
  device float* o [[buffer(1)]]) {
o[0] = 1;
}

template [[host_name("custom_kernel_k__1_float_float")]] [[kernel]] decltype(custom_kernel_k__1_float_float<1>) custom_kernel_k__1_float_float<1>;
