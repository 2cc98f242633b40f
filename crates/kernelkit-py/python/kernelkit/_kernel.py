"""The callable ``metal_kernel`` and ``cuda_kernel`` return.

Python calls an object through its type: the extension's ``Kernel`` (built
with PyO3) has only the slot that takes the keyword arguments as a new dict,
which CPython builds for every call (PyO3 gives ``__call__`` no vectorcall:
PyO3 issue 4252). A function, and a ``functools.partial`` over one, take
them through vectorcall, their names in a tuple the caller's code already
holds. From Python 3.12 a subclass of ``functools.partial`` keeps
vectorcall, so there a kernel is a :class:`Kernel`: a ``partial`` over the
extension kernel's call entry (``_kernelkit._call_entry``: a function that
remembers which parameter each name of a call site's tuple is, where PyO3's
``call`` method matches the names' text at every call), with its name,
inputs and outputs. On the H200 the partial took 0.4-0.8 us off a warm call
against the extension object's own call; the entry's part of that, against
PyO3's ``call`` method, was within the noise there (callgrind counts 636
fewer instructions; BENCHMARKS.md, issue 16). Before 3.12 a subclass would lose vectorcall
(its calls would cost more, not less), and the extension's kernel is
returned as it is.
"""

import functools
import sys

from . import _kernelkit

__all__ = ["Kernel", "metal_kernel", "cuda_kernel"]

if sys.version_info >= (3, 12):

    class Kernel(functools.partial):
        """A custom kernel made by ``metal_kernel`` or ``cuda_kernel``; call
        it as MLX's (``kernel(inputs=[...], grid=..., threadgroup=...,
        ...)``). ``native`` is the extension's kernel it calls."""

        __slots__ = ()

        def __new__(cls, native: _kernelkit.Kernel) -> "Kernel":
            if not isinstance(native, _kernelkit.Kernel):
                raise TypeError(f"Kernel wraps a kernelkit._kernelkit.Kernel, got {type(native).__name__}")
            return super().__new__(cls, _kernelkit._call_entry(native))

        @property
        def native(self) -> _kernelkit.Kernel:
            return self.func.__self__

        @property
        def name(self) -> str:
            return self.func.__self__.name

        @property
        def input_names(self) -> list:
            return self.func.__self__.input_names

        @property
        def output_names(self) -> list:
            return self.func.__self__.output_names

        @property
        def _rebound_launches(self) -> int:
            return self.func.__self__._rebound_launches

        def __repr__(self) -> str:
            return repr(self.func.__self__)

        if hasattr(functools.partial, "__get__"):
            # From Python 3.13 a `partial` kept as a class attribute warns
            # that it will bind like a method (3.14 binds): a kernel does
            # not, as the extension's object does not. (Defined only where
            # needed: an attribute read through it costs a Python call.)
            def __get__(self, obj, objtype=None) -> "Kernel":
                return self

            @property
            def __signature__(self):
                # `inspect` takes an object with `__get__` for a method
                # descriptor: it is given the call's signature directly.
                import inspect

                return inspect.signature(self.func)

        def __reduce__(self):
            raise TypeError(f"cannot pickle {self!r}: build it again with metal_kernel or cuda_kernel")

        def __copy__(self) -> "Kernel":
            return self  # nothing a call changes: copies share it

        def __deepcopy__(self, memo) -> "Kernel":
            return self

    Kernel.__module__ = "kernelkit"

    def _returning_kernels(make):
        @functools.wraps(make)
        def made(*args, **kwargs):
            return Kernel(make(*args, **kwargs))

        return made

else:
    Kernel = _kernelkit.Kernel

    def _returning_kernels(make):
        return make


metal_kernel = _returning_kernels(_kernelkit.metal_kernel)
cuda_kernel = _returning_kernels(_kernelkit.cuda_kernel)
