# The kernels `metal_kernel` and `cuda_kernel` return have the interface of
# the extension's `Kernel` (on Python 3.12 and later they are a
# `functools.partial` over its call entry, for vectorcall: see `_kernel.py`).
from ._kernelkit import Kernel as Kernel, cuda_kernel as cuda_kernel, metal_kernel as metal_kernel
