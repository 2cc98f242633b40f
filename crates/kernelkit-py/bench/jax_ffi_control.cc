// The control of kernelkit.jax's per-call benchmark (jax_bench.py): a C++
// XLA FFI handler, as JAX's FFI tutorial builds one, launching the same
// trivial kernel (y = x + 1, one thread per element) on XLA's stream.
// Built on the GPU machine by jax_bench.py with nvcc against jaxlib's
// headers (jax.ffi.include_dir()); command-buffer compatible, as kernelkit's
// handler is.
#include <cstdint>

#include <cuda_runtime.h>

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

__global__ void kk_control_add_one(const float* x, float* y, int64_t n) {
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] + 1.0f;
}

static ffi::Error AddOne(cudaStream_t stream, ffi::Buffer<ffi::F32> x,
                         ffi::ResultBuffer<ffi::F32> y) {
  const int64_t n = x.element_count();
  const int block = 256;
  const int64_t grid = (n + block - 1) / block;
  kk_control_add_one<<<static_cast<unsigned>(grid), block, 0, stream>>>(
      x.typed_data(), y->typed_data(), n);
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) return ffi::Error::Internal(cudaGetErrorString(err));
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(KkControlAddOne, AddOne,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>(),
                              {ffi::Traits::kCmdBufferCompatible});
