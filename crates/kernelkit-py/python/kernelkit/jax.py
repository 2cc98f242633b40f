"""kernelkit kernels inside JAX programs: ``jax.jit``, ``vmap``, ``grad`` and
``shard_map``, through XLA's FFI, with no C++ toolchain.

:func:`metal_kernel` and :func:`cuda_kernel` take MLX's constructor
arguments and return a kernel called like kernelkit's others, on
``jax.Array``\\ s, inside or outside ``jax.jit``::

    import jax, jax.numpy as jnp, kernelkit.jax as kkj
    add = kkj.metal_kernel(name="add_offset", input_names=["inp"], output_names=["out"],
                           source="uint i = thread_position_in_grid.x; out[i] = inp[i] + OFFSET;")

    @jax.jit
    def f(x):
        (y,) = add(inputs=[x], template=[("OFFSET", 3)], grid=(x.size, 1, 1),
                   threadgroup=(256, 1, 1), output_shapes=[x.shape], output_dtypes=[x.dtype])
        return y

A call lowers to ``jax.ffi.ffi_call`` of one handler, written in Rust in
kernelkit's extension and registered once per platform (``cpu``, ``cuda``)
as the target ``kernelkit``: the lowered program holds a typed-FFI
``custom_call`` to it. The kernel travels as FFI attributes: its spec text
and that text's hash (its identity), so ``jax.export`` and JAX's persistent
compilation cache reload the program in another process. XLA's instantiate
stage binds the kernel once per call site; the variant is compiled when the
call is traced (shapes are static), so XLA's execution only launches, on
XLA's stream (CUDA graphs included: the handler is command-buffer
compatible).

Transformations: ``vmap`` calls the kernel once per batch element
(``sequential``), or once on the batched arrays when the kernel was built
with ``batched=True`` (its grid's z extent multiplied by the batch size;
the body reads the batch index from ``thread_position_in_grid.z``);
``grad`` through :func:`custom_vjp`, which pairs a forward and a backward
function of kernelkit calls; ``input_output_aliases`` for in-place
kernels; ``shard_map`` runs the kernel on each device's shard.

Errors keep kernelkit's types: a compile error is raised as
:class:`kernelkit.CompileError` when the call is traced; an error XLA's
execution meets carries the type's name first in its message
(``kernelkit.CallError: ...``) and is raised as that type by an eager call.
"""

from __future__ import annotations

import functools
import json
import os
import re
import threading
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from . import _errors
from ._kernel import cuda_kernel as _plain_cuda_kernel
from ._kernel import metal_kernel as _plain_metal_kernel
from ._kernelkit import _jax_kernel, _jax_targets

import jax
import jax.numpy as jnp

__all__ = ["JaxKernel", "TARGET", "custom_vjp", "cuda_kernel", "metal_kernel"]

#: The FFI target name the handler is registered under, on every platform.
TARGET = "kernelkit"

# JAX's tracer class (a traced call returns tracers; an eager one arrays).
_Tracer = getattr(jax.core, "Tracer", ())

_registered = False
_register_lock = threading.Lock()


def _ffi_version() -> tuple[int, int]:
    """The XLA FFI API version of the installed jaxlib (from its header,
    ``jax.ffi.include_dir()``): XLA accepts handlers of its own version only."""
    header = os.path.join(jax.ffi.include_dir(), "xla", "ffi", "api", "c_api.h")
    with open(header, encoding="utf-8") as f:
        text = f.read()
    major = re.search(r"#define\s+XLA_FFI_API_MAJOR\s+(\d+)", text)
    minor = re.search(r"#define\s+XLA_FFI_API_MINOR\s+(\d+)", text)
    if not (major and minor):
        raise _errors.DeviceError(f"kernelkit.jax: no XLA FFI version in {header}")
    return int(major.group(1)), int(minor.group(1))


def _register() -> None:
    """Registers the handler's state type and target with XLA, once per process."""
    global _registered
    if _registered:
        return
    with _register_lock:
        if _registered:
            return
        major, minor = _ffi_version()
        if not hasattr(jax.ffi, "register_ffi_type"):
            raise _errors.DeviceError(
                f"kernelkit.jax: JAX {jax.__version__} cannot register FFI state types "
                "(jax.ffi.register_ffi_type); kernelkit.jax needs JAX 0.10 or later"
            )
        for platform, caps in _jax_targets(major, minor).items():
            # XLA's own platform names: JAX maps "cpu" to "Host" itself, but
            # passes any other name through, and its CUDA plugin takes
            # registrations only under "CUDA" (a "cuda" one would wait
            # forever in JAX's pending list).
            xla_platform = "CUDA" if platform == "cuda" else platform
            jax.ffi.register_ffi_type(
                f"kernelkit.jax.Binding.{platform}",
                {"type_id": caps["type_id"], "type_info": caps["type_info"]},
                platform=xla_platform,
            )
            jax.ffi.register_ffi_target(
                TARGET,
                {"instantiate": caps["instantiate"], "initialize": caps["initialize"],
                 "execute": caps["execute"]},
                platform=xla_platform,
            )
        _registered = True


def _template_text(kernel: str, template: Any) -> str:
    """Template arguments (``[(name, value)]`` or a dict) as the handler's
    JSON attribute: ``[[name, "int"|"bool"|"dtype", value]]``."""
    if template is None:
        return "[]"
    items = template.items() if isinstance(template, Mapping) else template
    out = []
    for item in items:
        try:
            name, value = item
        except (TypeError, ValueError):
            raise _errors.ArgumentTypeError(
                f"kernel `{kernel}`: template must be (name, value) pairs, got {item!r}"
            ) from None
        if isinstance(value, (bool, np.bool_)):
            out.append([str(name), "bool", bool(value)])
        elif isinstance(value, (int, np.integer)):
            out.append([str(name), "int", int(value)])
        else:
            try:
                out.append([str(name), "dtype", np.dtype(value).name])
            except TypeError:
                raise _errors.ArgumentTypeError(
                    f"kernel `{kernel}`: template argument `{name}` must be an int, a bool "
                    f"or a dtype, got {value!r}"
                ) from None
    return json.dumps(out)


def _index(kernel: str, names: Sequence[str], key: Any, role: str) -> int:
    if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
        if 0 <= key < len(names):
            return int(key)
    elif key in names:
        return list(names).index(key)
    raise _errors.CallError(
        f"kernel `{kernel}`: input_output_aliases names no {role} {key!r} (the {role}s are {list(names)})"
    )


def _platform(args: Sequence[Any] = ()) -> str:
    """The kernelkit platform a call runs on: its concrete inputs' device's,
    else (traced inputs) that of JAX's default backend."""
    for a in args:
        if _Tracer and isinstance(a, _Tracer):
            continue
        try:
            platform = next(iter(a.devices())).platform
        except (AttributeError, StopIteration, TypeError):
            continue
        return "cpu" if platform == "cpu" else "cuda"
    return "cpu" if jax.default_backend() == "cpu" else "cuda"


def _raise_typed(err: Exception) -> None:
    """Re-raises an XLA error whose message starts with a kernelkit type's
    name as that type."""
    text = str(err)
    m = re.search(r"kernelkit\.(\w+Error): ", text)
    if m and hasattr(_errors, m.group(1)):
        raise getattr(_errors, m.group(1))(text[m.end():]) from err
    raise err


class JaxKernel:
    """A kernelkit kernel for JAX: call it as MLX's kernels are called, with
    ``jax.Array``\\ s (or anything ``jnp.asarray`` takes) as inputs."""

    def __init__(self, native: Any, batched: bool):
        self._native = native
        self.batched = batched
        self._compiled: set = set()
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self._native.name

    @property
    def identity(self) -> str:
        """The content-addressed identity the lowered calls carry."""
        return self._native.identity

    def __repr__(self) -> str:
        return repr(self._native)

    def __call__(
        self,
        *,
        inputs: Sequence[Any],
        output_shapes: Sequence[Sequence[int]],
        output_dtypes: Sequence[Any],
        grid: Sequence[int],
        threadgroup: Sequence[int] = (256, 1, 1),
        template: Any = None,
        init_value: float | None = None,
        input_output_aliases: Mapping[Any, Any] | None = None,
        stream: Any = None,
        device: Any = None,
    ) -> list:
        name = self.name
        if stream is not None or device is not None:
            raise _errors.CallError(
                f"kernel `{name}`: under JAX the call runs on XLA's device and stream; "
                "stream= and device= are not taken (place the arrays with jax.device_put)"
            )
        _register()
        args = [x if isinstance(x, jax.Array) else jnp.asarray(x) for x in inputs]
        if len(output_shapes) != len(output_dtypes):
            raise _errors.CallError(
                f"kernel `{name}`: {len(output_shapes)} output_shapes but {len(output_dtypes)} output_dtypes"
            )
        shapes = [tuple(int(d) for d in s) for s in output_shapes]
        dtypes = [np.dtype(d) for d in output_dtypes]
        grid3 = tuple(int(g) for g in grid) + (1,) * (3 - len(grid))
        tg3 = tuple(int(t) for t in threadgroup) + (1,) * (3 - len(threadgroup))
        if len(grid3) != 3 or len(tg3) != 3:
            raise _errors.CallError(f"kernel `{name}`: grid and threadgroup take at most three extents")
        template_text = _template_text(name, template)
        aliases = {}
        for i, o in (input_output_aliases or {}).items():
            ii = _index(name, self._native.input_names, i, "input")
            oo = _index(name, self._native.output_names, o, "output")
            aliases[ii] = oo
        # Compiled when traced: the variant of these dtypes, pass modes and
        # template arguments, on the platform JAX runs on.
        key = (
            template_text,
            tuple((str(a.dtype), tuple(a.shape)) for a in args),
            tuple(d.name for d in dtypes),
            _platform(args),
        )
        if key not in self._compiled:
            self._native.compile(
                template_text,
                [np.dtype(a.dtype).name for a in args],
                [list(a.shape) for a in args],
                [d.name for d in dtypes],
                key[-1],
            )
            with self._lock:
                if len(self._compiled) >= 4096:  # bounded: a variant compiled again is found in a tier
                    self._compiled.clear()
                self._compiled.add(key)
        call = jax.ffi.ffi_call(
            TARGET,
            [jax.ShapeDtypeStruct(s, d) for s, d in zip(shapes, dtypes)],
            vmap_method="broadcast_all" if self.batched else "sequential",
            input_output_aliases=aliases or None,
        )
        attrs = dict(
            kernel=self._native.identity,
            spec=self._native.spec,
            template=template_text,
            grid=np.array(grid3, dtype=np.int64),
            threadgroup=np.array(tg3, dtype=np.int64),
            init_value="" if init_value is None else repr(float(init_value)),
            aliased=np.int64(1 if aliases else 0),
            out_ranks=np.array([len(s) for s in shapes], dtype=np.int64),
        )
        if not _Tracer or any(isinstance(a, _Tracer) for a in args):
            return list(call(*args, **attrs))
        try:
            outs = list(call(*args, **attrs))
            jax.block_until_ready(outs)
        except Exception as err:  # XLA's runtime error: kernelkit's type again.
            _raise_typed(err)
        return outs


def _build(language: str, name: str, input_names: Sequence[str],
           output_names: Sequence[str], source: str, header: str | None,
           ensure_row_contiguous: bool | None, atomic_outputs: bool,
           math_mode: str, shared_memory: int, batched: bool) -> JaxKernel:
    native = _jax_kernel(
        language, str(name), [str(n) for n in input_names], [str(n) for n in output_names],
        str(source), str(header or ""),
        True if ensure_row_contiguous is None else bool(ensure_row_contiguous),
        bool(atomic_outputs), math_mode, int(shared_memory), bool(batched),
    )
    return JaxKernel(native, bool(batched))


def metal_kernel(name: str, input_names: Sequence[str], output_names: Sequence[str],
                 source: str, header: str = "", ensure_row_contiguous: bool = True,
                 atomic_outputs: bool = False, compile_options: Mapping[str, str] | None = None,
                 *, batched: bool = False) -> JaxKernel:
    """MLX's ``metal_kernel`` for JAX (the body in MLX's Metal dialect, run
    on the CPU or CUDA). ``batched=True``: the kernel handles a leading batch
    axis itself, so ``vmap`` calls it once (see the module's documentation)."""
    # The plain constructor checks every argument, with kernelkit's errors.
    _plain_metal_kernel(name=name, input_names=input_names, output_names=output_names,
                        source=source, header=header,
                        ensure_row_contiguous=ensure_row_contiguous,
                        atomic_outputs=atomic_outputs, compile_options=compile_options)
    math_mode = (compile_options or {}).get("math_mode", "safe")
    return _build("metal", name, input_names, output_names, source, header,
                  ensure_row_contiguous, atomic_outputs, math_mode, 0, batched)


def cuda_kernel(name: str, input_names: Sequence[str], output_names: Sequence[str],
                source: str, header: str = "", ensure_row_contiguous: bool = True,
                shared_memory: int = 0, *, batched: bool = False) -> JaxKernel:
    """MLX's ``cuda_kernel`` for JAX (a CUDA C++ body; CUDA devices only)."""
    _plain_cuda_kernel(name=name, input_names=input_names, output_names=output_names,
                       source=source, header=header,
                       ensure_row_contiguous=ensure_row_contiguous,
                       shared_memory=shared_memory)
    return _build("cuda", name, input_names, output_names, source, header,
                  ensure_row_contiguous, False, "safe", shared_memory or 0, batched)


def custom_vjp(forward: Callable[..., Any],
               backward: Callable[[tuple, Any, Any], Sequence[Any]]) -> Callable[..., Any]:
    """A function differentiable by ``jax.grad`` whose value is ``forward``
    and whose vector-Jacobian product is ``backward``: typically each calls
    kernelkit kernels (a forward kernel and its backward kernel).

    ``forward(*primals)`` returns the outputs (an array or a tuple);
    ``backward(primals, outputs, cotangents)`` returns one cotangent per
    primal (``None`` for one that is not differentiated), where
    ``cotangents`` has the structure of the outputs. The primals and the
    outputs are kept as residuals for the backward pass.
    """

    @jax.custom_vjp
    def f(*primals):
        return forward(*primals)

    def fwd(*primals):
        outputs = forward(*primals)
        return outputs, (primals, outputs)

    def bwd(residuals, cotangents):
        primals, outputs = residuals
        grads = tuple(backward(primals, outputs, cotangents))
        if len(grads) != len(primals):
            raise _errors.CallError(
                f"custom_vjp: backward returned {len(grads)} cotangents for {len(primals)} primals"
            )
        return tuple(jnp.zeros_like(p) if g is None else g for p, g in zip(primals, grads))

    f.defvjp(fwd, bwd)
    return functools.wraps(forward)(f)
