#include <cuda_fp16.h>
#include <cuda_bf16.h>
#define KK_HALF_TYPES 1
// kernelkit prelude: portable
// kernelkit prelude: cuda_base
// kernelkit prelude: layout
// kernelkit prelude: types
// kernelkit prelude: math
// kernelkit prelude: conditional
// kernelkit prelude: cuda_tail
// ---- end of prelude ----
#define inf __int_as_float(0x7f800000)
#define half float16_t
#define bfloat bfloat16_t
#define uint3 kk_uint3

// header



extern "C" __global__ void custom_kernel_myexp_float32_int32s_float32c_float16_c2fa3f3fa593807e(
    const float* inp,
    const kk_scalar<int32_t> x,
    const float* bias,
    float16_t* out,
    const kk_cuda_uint3 kk_grid,
    const unsigned kk_partial) {
  using T = float16_t;
  constexpr int N = -4;
  constexpr bool B = true;

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
T v = static_cast<T>(float(inp[i]) * x + float(bias[i % 4]));
out[i] = B ? kk::tc<decltype(v), decltype(T(N))>(v) : kk::tc<decltype(T(N)), decltype(v)>(T(N));
  // ---- end of body ----
}

#undef inf
#undef half
#undef bfloat
#undef uint3
