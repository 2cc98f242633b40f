"""MLX's spelling: ``kernelkit.fast.metal_kernel`` is ``kernelkit.metal_kernel``
(as ``mx.fast.metal_kernel``), so code written for MLX reads the same."""

from ._kernel import cuda_kernel, metal_kernel

__all__ = ["metal_kernel", "cuda_kernel"]
