// kernelkit prelude: portable
// kernelkit prelude: cuda_base
// kernelkit prelude: layout
// kernelkit prelude: atomic
// kernelkit prelude: types
// kernelkit prelude: math
// kernelkit prelude: math_common
// kernelkit prelude: metal_atomic
// kernelkit prelude: simd_common
// kernelkit prelude: group_cuda
// kernelkit prelude: mem_flags
// kernelkit prelude: simd
// kernelkit prelude: cuda_tail
// ---- end of prelude ----
#define inf __int_as_float(0x7f800000)
#define half float16_t
#define bfloat bfloat16_t
#define uint3 kk_uint3

// header



extern "C" __global__ void custom_kernel_block_sum_float32_float32_532440bf64924281(
    const float* inp,
    float* out,
    const kk_cuda_uint3 kk_grid,
    const unsigned kk_partial) {
  if (kk_partial) {
    if (threadIdx.x >= kk_grid.x - blockIdx.x * blockDim.x) {
      return;
    }
    if (kk_grid.y != gridDim.y * blockDim.y || kk_grid.z != gridDim.z * blockDim.z) {
      if (threadIdx.y >= kk_grid.y - blockIdx.y * blockDim.y ||
          threadIdx.z >= kk_grid.z - blockIdx.z * blockDim.z) {
        return;
      }
    }
  }
  const uint3 kk_tg = blockDim;
  const uint3 kk_group = blockIdx;
  const uint3 kk_local = threadIdx;
  const uint kk_lid = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
  const uint kk_simd = WARP_SIZE;
  const uint simdgroup_index_in_threadgroup = (uint)(kk_lid / kk_simd);
  const uint simdgroups_per_threadgroup = (uint)((kk_tg.x * kk_tg.y * kk_tg.z + kk_simd - 1) / kk_simd);
  const uint thread_index_in_simdgroup = (uint)(kk_lid % kk_simd);
  const uint thread_index_in_threadgroup = (uint)kk_lid;
  const uint3 thread_position_in_grid = uint3{kk_group.x * kk_tg.x + kk_local.x, kk_group.y * kk_tg.y + kk_local.y, kk_group.z * kk_tg.z + kk_local.z};
  const uint3 threadgroup_position_in_grid = kk_group;
  const uint3 threads_per_grid = kk_grid;
  // ---- body ----
__shared__ float partial[32];
uint gid = thread_position_in_grid.x;
float v = gid < threads_per_grid.x ? inp[gid] : 0.0f;
v = simd_sum(v);
if (thread_index_in_simdgroup == 0) partial[simdgroup_index_in_threadgroup] = v;
threadgroup_barrier(mem_flags::mem_threadgroup);
if (thread_index_in_threadgroup == 0) {
  float s = 0.0f;
  for (uint w = 0; w < simdgroups_per_threadgroup; ++w) s += partial[w];
  out[threadgroup_position_in_grid.x] = s;
}
  // ---- end of body ----
}

#undef inf
#undef half
#undef bfloat
#undef uint3
