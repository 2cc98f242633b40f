// kernelkit prelude: portable
// kernelkit prelude: cuda_base
// kernelkit prelude: layout
// kernelkit prelude: atomic
// kernelkit prelude: types
// kernelkit prelude: metal_atomic
// kernelkit prelude: cuda_tail
// ---- end of prelude ----
#define inf __int_as_float(0x7f800000)
#define half float16_t
#define bfloat bfloat16_t
#define uint3 kk_uint3

// header



extern "C" __global__ void custom_kernel_histogram_uint32_uint32_float32_08c085a2f1541ab1(
    const uint32_t* values,
    atomic<uint32_t>* counts,
    atomic<float>* total,
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
atomic_fetch_add_explicit(&counts[values[i] % 16], 1u, memory_order_relaxed);
atomic_fetch_add_explicit(&total[0], 1.0f, memory_order_relaxed);
atomic_fetch_max_explicit(&counts[16], values[i], memory_order_relaxed);
atomic_fetch_min_explicit(&total[1], -float(values[i]), memory_order_relaxed);
uint expected = 0;
atomic_compare_exchange_weak_explicit(&counts[17], &expected, 1u, memory_order_relaxed, memory_order_relaxed);
atomic_exchange_explicit(&total[2], 3.0f, memory_order_relaxed);
atomic_fetch_or_explicit(&counts[18], 1u << (values[i] % 32), memory_order_relaxed);
  // ---- end of body ----
}

#undef inf
#undef half
#undef bfloat
#undef uint3
