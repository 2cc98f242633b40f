#include <cooperative_groups.h>
namespace cg = cooperative_groups;
// @kernelkit-cuda-prelude (src/codegen/cuda_prelude.cuh)

// header


#define device
#define constant
#define thread
#define threadgroup __shared__
#define inf __int_as_float(0x7f800000)
#define half float16_t
#define bfloat bfloat16_t

extern "C" __global__ void custom_kernel_cg_sum_float32_float32_acad47c44e902fb0(
    const float* inp,
    float* out,
    const uint3 kk_grid) {
  // ---- body ----
auto block = cg::this_thread_block();
auto warp = cg::tiled_partition<32>(block);
uint i = blockIdx.x * blockDim.x + threadIdx.x;
float v = i < kk_grid.x ? inp[i] : 0.0f;
for (int o = 16; o > 0; o /= 2) v += warp.shfl_down(v, o);
if (warp.thread_rank() == 0) atomicAdd(out, v);
  // ---- end of body ----
}

#undef device
#undef constant
#undef thread
#undef threadgroup
#undef inf
#undef half
#undef bfloat
