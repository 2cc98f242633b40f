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
    "ArgumentTypeError",
    "ArrayError",
    "CompileError",
    "DeviceError",
    "JitError",
]

# Shown as `kernelkit.CallError`, where users import them from.
for _class in (
    KernelError,
    BuildError,
    CallError,
    ArgumentTypeError,
    ArrayError,
    CompileError,
    DeviceError,
    JitError,
):
    _class.__module__ = "kernelkit"
del _class
