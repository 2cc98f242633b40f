from ._kernelkit import cuda_kernel as cuda_kernel, metal_kernel as metal_kernel
