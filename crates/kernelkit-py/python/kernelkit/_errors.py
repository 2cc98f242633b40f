"""The exceptions kernelkit raises.

Every error of the Rust library arrives as one of these, with the library's
message unchanged (it names the kernel and the argument at fault). Each class
also derives from the built-in exception that Python code expects for its kind
of fault, so ``except ValueError`` and ``except TypeError`` keep working for
code written against MLX.
"""


class KernelError(Exception):
    """Base class of every error kernelkit raises."""


class BuildError(KernelError, ValueError):
    """The kernel spec cannot become a kernel: a bad or colliding name, no
    outputs, a NUL byte in the source or header. Raised by ``metal_kernel``
    and ``cuda_kernel``."""


class CallError(KernelError, ValueError):
    """A call's values do not fit the kernel or the device: input or output
    counts, shapes, grid or threadgroup extents, template names, a dtype the
    backend lacks, an ``init_value`` that does not fit, a cleared stream."""


class DonationError(CallError):
    """A donation (``donate={"out": "inp"}``: an output that is an input's
    own buffer) the call cannot make: a name that is not the kernel's, one
    input donated to two outputs, a read-only input, an input kernelkit
    would copy first (not row-contiguous with ``ensure_row_contiguous``, a
    NumPy array sent to a GPU), or an output shape or dtype that is not the
    input's. The message names the kernel, the output and the input."""


class ArgumentTypeError(KernelError, TypeError):
    """An argument has the wrong Python type: an input that is not an array
    or a scalar, a template value that is not an int, a bool or a dtype, an
    object that names no dtype, or a call without ``inputs``, ``grid`` or
    ``threadgroup`` (or with ``None`` for one)."""


class ArrayError(KernelError, ValueError):
    """An array cannot be read, viewed or converted."""


class CompileError(KernelError, RuntimeError):
    """The compiler rejected the generated source, could not run, or its
    output could not be loaded.

    Attributes:
        log: the compiler's log (line numbers point into the kernel's body
            where they fall inside it), or ``None``.
        source: the full generated source the compiler saw, or ``None``.
    """

    log = None
    source = None


class DeviceError(KernelError, RuntimeError):
    """A device is not available (not built in, no driver, no GPU) or failed
    while running work."""


class OutOfBoundsError(KernelError, IndexError):
    """A kernel built with ``check_bounds=True`` (or run with
    ``KERNELKIT_CHECK_BOUNDS=1``) read or wrote outside an argument: the
    first such access of the call. The access itself was skipped (through the
    argument's name) or landed in a guard region after the buffer (through a
    raw pointer or a cast), so nothing else was overwritten.

    Attributes:
        kernel: the kernel's name.
        role: ``"input"`` or ``"output"``.
        argument: the argument's name.
        index: the element index, relative to the argument's pointer (an
            access through the name), else ``None``.
        span: ``(lo, hi)``, the indices the argument's view spans, or ``None``.
        thread: ``thread_position_in_threadgroup`` as ``(x, y, z)``, or ``None``.
        threadgroup: ``threadgroup_position_in_grid`` as ``(x, y, z)``, or ``None``.
        byte_offset: the first byte written past the end (a guard region),
            else ``None``.
        buffer_bytes: that buffer's size in bytes, else ``None``.
    """

    kernel = None
    role = None
    argument = None
    index = None
    span = None
    thread = None
    threadgroup = None
    byte_offset = None
    buffer_bytes = None
class JitError(KernelError, RuntimeError):
    """A variant that no cache tier holds was called while the process
    forbids compiles (``KERNELKIT_JIT=forbid`` or ``kk.set_jit("forbid")``).
    The message names the kernel, the variant (template values, shapes) and
    the architecture, and contains "JIT is forbidden". Raised before
    anything is queued: the device stays usable."""


__all__ = [
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
]

# Shown as `kernelkit.CallError`, where users import them from.
for _class in (
    KernelError,
    BuildError,
    CallError,
    DonationError,
    ArgumentTypeError,
    ArrayError,
    CompileError,
    DeviceError,
    OutOfBoundsError,
    JitError,
):
    _class.__module__ = "kernelkit"
del _class
