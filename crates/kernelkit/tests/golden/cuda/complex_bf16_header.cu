#include <cuda_fp16.h>
#include <cuda_bf16.h>
#define KK_HALF_TYPES 1
// kernelkit prelude: portable
// kernelkit prelude: cuda_base
// kernelkit prelude: layout
// kernelkit prelude: types
// kernelkit prelude: cuda_tail
// ---- end of prelude ----
#define inf __int_as_float(0x7f800000)
#define half float16_t
#define bfloat bfloat16_t
#define uint3 kk_uint3

// header
__device__ inline float scale(float v) { return 2.0f * v; }


extern "C" __global__ void custom_kernel_mixed_complex64_bfloat16_float32_bfloat16_3c748f4efa4de029(
    const complex64_t* z,
    const bfloat16_t* w,
    float* re,
    bfloat16_t* out,
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
  const uint3 thread_position_in_grid = uint3{kk_group.x * kk_tg.x + kk_local.x, kk_group.y * kk_tg.y + kk_local.y, kk_group.z * kk_tg.z + kk_local.z};
  // ---- body ----
uint i = thread_position_in_grid.x;
complex64_t c = z[i] * z[i];
re[i] = scale(c.real);
out[i] = bfloat16_t(float(w[i]) + 1.0f);
  // ---- end of body ----
}

#undef inf
#undef half
#undef bfloat
#undef uint3
