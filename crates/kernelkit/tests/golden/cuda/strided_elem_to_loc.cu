// kernelkit prelude: portable
// kernelkit prelude: cuda_base
// kernelkit prelude: layout
// kernelkit prelude: types
// kernelkit prelude: traits
// kernelkit prelude: limits
// kernelkit prelude: mlx
// kernelkit prelude: cuda_tail
// ---- end of prelude ----
#define inf __int_as_float(0x7f800000)
#define half float16_t
#define bfloat bfloat16_t
#define uint3 kk_uint3

// header



extern "C" __global__ void custom_kernel_strided_copy_int32_int32_40c16f8936200ee4(
    const int32_t* inp,
    const kk_shape inp_shape,
    const kk_strides inp_strides,
    const int inp_ndim,
    int32_t* out,
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
uint elem = thread_position_in_grid.x;
int64_t loc = elem_to_loc(elem, inp_shape, inp_strides, inp_ndim);
out[elem] = inp[loc];
  // ---- end of body ----
}

#undef inf
#undef half
#undef bfloat
#undef uint3
