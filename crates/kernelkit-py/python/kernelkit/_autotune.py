"""``kernelkit.autotune``: a kernel whose launch configuration (threadgroup,
template values, grid) is chosen by timing, once per tuning key, and kept
in every cache tier (memory, the disk store, the fleet's Redis, bundles).

The tuned kernel is the extension's (``_kernelkit._Tuned``): a call finds
its configuration in a memo of what its tuning key depends on (the inputs'
shapes and dtypes or the user's key, the outputs, the call's own template
values, the device), read natively as the kernel's call reads its
arguments; on a miss the library chooses (``kernelkit::Tuning::best``),
timing every configuration on the call's device and stream into scratch
outputs unless a cache tier has the key's record. The kernel's own call
route then runs with the configuration's threadgroup, grid and template.
See docs/autotune.md.

As a kernel is (``_kernel.py``), from Python 3.12 the tuned kernel is a
``functools.partial`` over its call entry, which CPython calls through
vectorcall; before 3.12 the extension's object itself.
"""

import functools
import sys
from typing import Any, Callable, Mapping, Optional, Sequence

from . import _kernelkit

__all__ = ["autotune", "Autotuned"]


def _dims(value: Any) -> tuple:
    t = tuple(int(v) for v in value)
    return t + (1,) * (3 - len(t))


def _template_items(template: Any) -> list:
    if template is None:
        return []
    if isinstance(template, Mapping):
        return list(template.items())
    return [tuple(p) for p in template]


def _native_tuned(
    kernel: Any,
    configs: Sequence[Mapping[str, Any]],
    grid: Optional[Callable[[Mapping[str, Any], Sequence[Any]], Any]],
    key: Optional[Callable[[Sequence[Any]], Any]],
) -> "_kernelkit._Tuned":
    name = getattr(kernel, "name", repr(kernel))
    if not configs:
        raise ValueError(f"autotune: kernel `{name}` needs at least one configuration")
    copies = [dict(c) for c in configs]
    for i, c in enumerate(copies):
        unknown = set(c) - {"threadgroup", "template", "grid"}
        if unknown or "threadgroup" not in c:
            raise ValueError(
                f"autotune: configs[{i}] of kernel `{name}` needs a threadgroup and may "
                f"have template and grid (got {sorted(c)})"
            )
    native = getattr(kernel, "native", kernel)
    if not isinstance(native, _kernelkit.Kernel):
        raise TypeError(f"autotune: expected a kernel from metal_kernel or cuda_kernel, got {type(kernel).__name__}")
    return _kernelkit._Tuned(
        kernel,
        native,
        [
            (
                c,
                _dims(c["threadgroup"]),
                _template_items(c.get("template")),
                None if c.get("grid") is None else _dims(c["grid"]),
            )
            for c in copies
        ],
        grid,
        key,
    )


if sys.version_info >= (3, 12):

    class Autotuned(functools.partial):
        """A kernel with a set of launch configurations to choose from. Call
        it as the kernel (the same keywords; ``threadgroup`` is the chosen
        configuration's, ``grid`` the configuration's or the grid function's
        when given, template values outside the configurations pass through).
        ``tuned`` is the extension's tuned kernel it calls.
        """

        __slots__ = ()

        def __new__(cls, tuned: "_kernelkit._Tuned") -> "Autotuned":
            if not isinstance(tuned, _kernelkit._Tuned):
                raise TypeError(f"Autotuned wraps a kernelkit._kernelkit._Tuned, got {type(tuned).__name__}")
            return super().__new__(cls, _kernelkit._tuned_entry(tuned))

        @property
        def tuned(self) -> "_kernelkit._Tuned":
            return self.func.__self__

        @property
        def kernel(self) -> Any:
            return self.func.__self__.kernel

        @property
        def native(self) -> Any:
            return self.func.__self__.native

        @property
        def configs(self) -> list:
            return self.func.__self__.configs

        @property
        def name(self) -> str:
            return self.func.__self__.name

        @property
        def input_names(self) -> list:
            return self.func.__self__.input_names

        @property
        def output_names(self) -> list:
            return self.func.__self__.output_names

        def best(self, **kwargs: Any) -> dict:
            """The configuration chosen for a call with these arguments,
            without running it (tuning its key first if no cache tier has a
            record)."""
            return self.func.__self__.best(**kwargs)

        def __repr__(self) -> str:
            return repr(self.func.__self__)

        if hasattr(functools.partial, "__get__"):
            # As `Kernel`'s: a tuned kernel kept as a class attribute does
            # not bind like a method.
            def __get__(self, obj, objtype=None) -> "Autotuned":
                return self

        def __reduce__(self):
            raise TypeError(f"cannot pickle {self!r}: build it again with kernelkit.autotune")

        def __copy__(self) -> "Autotuned":
            return self

        def __deepcopy__(self, memo) -> "Autotuned":
            return self

    Autotuned.__module__ = "kernelkit"

    def _returned(tuned: "_kernelkit._Tuned") -> Any:
        return Autotuned(tuned)

else:
    Autotuned = _kernelkit._Tuned

    def _returned(tuned: "_kernelkit._Tuned") -> Any:
        return tuned


def autotune(
    kernel: Any,
    configs: Sequence[Mapping[str, Any]],
    grid: Optional[Callable[[Mapping[str, Any], Sequence[Any]], Any]] = None,
    key: Optional[Callable[[Sequence[Any]], Any]] = None,
) -> Any:
    """``kernel`` with launch configurations to choose from: each a dict of
    ``threadgroup`` (required), ``template`` (a dict or list of pairs) and
    ``grid`` (fixed for that configuration). ``grid(config, inputs)`` gives
    the grid of a configuration for a call's inputs (called at each call
    whose configuration fixes no grid: the grid may depend on anything of
    the inputs); ``key(inputs)`` replaces the inputs' shapes and dtypes in
    the tuning key (called at each call: it names the call's key). Returns
    a callable with the kernel's call signature; ``.best(inputs=..., ...)``
    returns the chosen configuration without running the kernel."""
    return _returned(_native_tuned(kernel, configs, grid, key))
