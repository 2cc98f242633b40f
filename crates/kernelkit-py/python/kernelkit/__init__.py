"""kernelkit: custom CPU and GPU kernels written inline, with MLX's interface.

``kernelkit.metal_kernel`` is a drop-in for ``mlx.core.fast.metal_kernel``:
give the body of a kernel as a string, name its inputs and outputs, and call
it with arrays. kernelkit generates the source of each variant, compiles it
once (per device, however many threads ask), caches it in memory and on disk,
and launches it, on the CPU (the system C++ compiler) or an NVIDIA GPU.

>>> import numpy as np, kernelkit as kk
>>> k = kk.metal_kernel(name="add_offset", input_names=["inp"], output_names=["out"],
...                     source="uint i = thread_position_in_grid.x; out[i] = inp[i] + OFFSET;")
>>> x = np.arange(4, dtype=np.float32)
>>> k(inputs=[x], template=[("OFFSET", 3)], grid=(4, 1, 1), threadgroup=(4, 1, 1),
...   output_shapes=[x.shape], output_dtypes=[x.dtype])[0]
array([3., 4., 5., 6.], dtype=float32)

Arrays: NumPy arrays and Python scalars in, NumPy arrays out. This first
stage copies: inputs are copied to the device and outputs back into new
NumPy arrays (``device="cuda"`` takes NumPy in and gives NumPy out the same
way). Zero-copy PyTorch, CuPy and DLPack arrays come later.
"""

from ._errors import (
    ArgumentTypeError,
    ArrayError,
    BuildError,
    CallError,
    CompileError,
    DeviceError,
    KernelError,
)
from ._kernelkit import (
    Device,
    Kernel,
    Stream,
    __version__,
    cache_stats,
    clear_streams,
    cpu,
    cuda_kernel,
    gpu,
    metal_kernel,
    new_stream,
)
from . import fast


def eval(*arrays: object) -> None:
    """Returns once the given arrays (or lists or tuples of them) hold their
    results, as MLX's ``mx.eval``.

    kernelkit returns NumPy arrays only after their results are in them (the
    outputs are read back before a call returns), so every array a call
    returned is complete already; ``eval`` checks that it was given arrays.
    """
    pending = list(arrays)
    while pending:
        a = pending.pop()
        if isinstance(a, (list, tuple)):
            pending.extend(a)
        elif not hasattr(a, "__array_interface__"):
            raise ArgumentTypeError(
                f"eval: expected arrays or lists of arrays, got {type(a).__name__}"
            )


__all__ = [
    "metal_kernel",
    "cuda_kernel",
    "Kernel",
    "Device",
    "Stream",
    "cpu",
    "gpu",
    "new_stream",
    "clear_streams",
    "cache_stats",
    "eval",
    "fast",
    "KernelError",
    "BuildError",
    "CallError",
    "ArgumentTypeError",
    "ArrayError",
    "CompileError",
    "DeviceError",
    "__version__",
]
