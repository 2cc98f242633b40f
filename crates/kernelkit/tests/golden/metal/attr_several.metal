[[kernel]] void custom_kernel_attr_several_float_float(
  const device float* inp [[buffer(0)]],
  device float* out [[buffer(1)]],
  uint thread_index_in_simdgroup [[thread_index_in_simdgroup]],
  uint3 thread_position_in_grid [[thread_position_in_grid]],
  uint3 threadgroup_position_in_grid [[threadgroup_position_in_grid]]) {
uint3 tg = threadgroup_position_in_grid;
uint lane = thread_index_in_simdgroup;
uint3 gid = thread_position_in_grid;
out[gid.x] = inp[gid.x] + tg.x + lane;
}
