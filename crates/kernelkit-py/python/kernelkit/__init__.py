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

Arrays: the caller's own, without copies, and outputs of the same kind.
NumPy arrays on the CPU are read and written in place; PyTorch tensors (CPU
or CUDA) are read through ``data_ptr()``/``stride()`` and outputs come from
``torch.empty`` on their device, on torch's current stream; CuPy arrays and
anything with ``__cuda_array_interface__`` or ``__dlpack__`` go through
those protocols (with their stream exchange), outputs from CuPy or, for
other libraries, ``kernelkit.Array`` handed to their ``from_dlpack``.
``out=[...]`` writes into arrays the caller gives. NumPy arrays given to a
CUDA device are copied there and back. Python scalars are 0-d inputs.
"""

from ._errors import (
    ArgumentTypeError,
    ArrayError,
    BuildError,
    CallError,
    DonationError,
    CompileError,
    DeviceError,
    JitError,
    KernelError,
    OutOfBoundsError,
)
from ._kernelkit import (
    Array,
    Device,
    Stream,
    __version__,
    cache_stats,
    clear_streams,
    cpu,
    gpu,
    new_stream,
)
from ._kernel import Kernel, cuda_kernel, metal_kernel
from ._autotune import Autotuned, autotune
from . import fast
from ._production import import_bundle, jit_policy, keygen, precompile, record, set_jit
from ._site import export_site_dirs as _export_site_dirs

# Before any device opens: NVRTC from NVIDIA's wheels is found (see _site).
_export_site_dirs()


def eval(*arrays: object) -> None:
    """Returns once the given arrays (or lists or tuples of them) hold their
    results, as MLX's ``mx.eval``.

    NumPy outputs hold their results when a call returns; GPU outputs are
    queued on the stream of the call (torch's or CuPy's current one, or a
    kernelkit stream), in order with the framework's own work, which reads
    them after the kernel as any of its arrays. ``eval`` checks that it was
    given arrays and waits for none (no hidden synchronize).
    """
    pending = list(arrays)
    while pending:
        a = pending.pop()
        if isinstance(a, (list, tuple)):
            pending.extend(a)
        elif not any(
            hasattr(a, p) for p in ("__array_interface__", "__cuda_array_interface__", "__dlpack__")
        ):
            raise ArgumentTypeError(
                f"eval: expected arrays or lists of arrays, got {type(a).__name__}"
            )


__all__ = [
    "autotune",
    "Autotuned",
    "metal_kernel",
    "cuda_kernel",
    "Kernel",
    "Array",
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
    "DonationError",
    "ArgumentTypeError",
    "ArrayError",
    "CompileError",
    "DeviceError",
    "OutOfBoundsError",
    "JitError",
    "record",
    "precompile",
    "import_bundle",
    "keygen",
    "set_jit",
    "jit_policy",
    "__version__",
]
