[[kernel]] void custom_kernel_attr_all_float_float(
  const device float* inp [[buffer(0)]],
  device float* out [[buffer(1)]],
  uint dispatch_quadgroups_per_threadgroup [[dispatch_quadgroups_per_threadgroup]],
  uint dispatch_simdgroups_per_threadgroup [[dispatch_simdgroups_per_threadgroup]],
  uint3 dispatch_threads_per_threadgroup [[dispatch_threads_per_threadgroup]],
  uint3 grid_origin [[grid_origin]],
  uint3 grid_size [[grid_size]],
  uint quadgroup_index_in_threadgroup [[quadgroup_index_in_threadgroup]],
  uint quadgroups_per_threadgroup [[quadgroups_per_threadgroup]],
  uint simdgroup_index_in_threadgroup [[simdgroup_index_in_threadgroup]],
  uint simdgroups_per_threadgroup [[simdgroups_per_threadgroup]],
  uint thread_execution_width [[thread_execution_width]],
  uint thread_index_in_quadgroup [[thread_index_in_quadgroup]],
  uint thread_index_in_simdgroup [[thread_index_in_simdgroup]],
  uint thread_index_in_threadgroup [[thread_index_in_threadgroup]],
  uint3 thread_position_in_grid [[thread_position_in_grid]],
  uint3 thread_position_in_threadgroup [[thread_position_in_threadgroup]],
  uint3 threadgroup_position_in_grid [[threadgroup_position_in_grid]],
  uint3 threadgroups_per_grid [[threadgroups_per_grid]],
  uint3 threads_per_grid [[threads_per_grid]],
  uint threads_per_simdgroup [[threads_per_simdgroup]],
  uint3 threads_per_threadgroup [[threads_per_threadgroup]]) {
float acc = 0;
acc += threads_per_threadgroup.x;
acc += threads_per_simdgroup;
acc += threads_per_grid.x;
acc += threadgroups_per_grid.x;
acc += threadgroup_position_in_grid.x;
acc += thread_position_in_threadgroup.x;
acc += thread_position_in_grid.x;
acc += thread_index_in_threadgroup;
acc += thread_index_in_simdgroup;
acc += thread_index_in_quadgroup;
acc += thread_execution_width;
acc += simdgroups_per_threadgroup;
acc += simdgroup_index_in_threadgroup;
acc += quadgroups_per_threadgroup;
acc += quadgroup_index_in_threadgroup;
acc += grid_size.x;
acc += grid_origin.x;
acc += dispatch_threads_per_threadgroup.x;
acc += dispatch_simdgroups_per_threadgroup;
acc += dispatch_quadgroups_per_threadgroup;
out[0] = acc;
}
