"""``kernelkit.autotune``: a kernel whose launch configuration (threadgroup,
template values, grid) is chosen by timing, once per tuning key, and kept
in every cache tier (memory, the disk store, the fleet's Redis, bundles).

The choice is the library's (``kernelkit::Tuning``, through the extension's
``_Tuner``): the first call of a key times every configuration on the
call's device and stream, into scratch outputs (the caller's arrays are
written once, by the real call), unless a cache tier has the key's record;
later calls of the key find the choice in this object's memo and call the
kernel with it. See docs/autotune.md.
"""

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


def _signature(value: Any) -> Any:
    """What of an input makes a call another default tuning key: its shape
    and dtype (an array), or its type (a scalar)."""
    shape = getattr(value, "shape", None)
    if shape is None:
        return type(value)
    return (tuple(shape), str(getattr(value, "dtype", "")))


class Autotuned:
    """A kernel with a set of launch configurations to choose from. Call it
    as the kernel (the same keywords; ``threadgroup`` is the chosen
    configuration's, ``grid`` the configuration's or the grid function's
    when given, template values outside the configurations pass through).
    """

    def __init__(
        self,
        kernel: Any,
        configs: Sequence[Mapping[str, Any]],
        grid: Optional[Callable[[Mapping[str, Any], Sequence[Any]], Any]] = None,
        key: Optional[Callable[[Sequence[Any]], Any]] = None,
    ) -> None:
        if not configs:
            raise ValueError(f"autotune: kernel `{kernel.name}` needs at least one configuration")
        self.kernel = kernel
        self.native = getattr(kernel, "native", kernel)
        self.configs = [dict(c) for c in configs]
        for i, c in enumerate(self.configs):
            unknown = set(c) - {"threadgroup", "template", "grid"}
            if unknown or "threadgroup" not in c:
                raise ValueError(
                    f"autotune: configs[{i}] of kernel `{kernel.name}` needs a threadgroup and may "
                    f"have template and grid (got {sorted(c)})"
                )
        self._grid_fn = grid
        self._key_fn = key
        self._tuner = _kernelkit._Tuner(
            [
                (_dims(c["threadgroup"]), _template_items(c.get("template")), c.get("grid"))
                for c in self.configs
            ],
            key is not None,
        )
        self._chosen: dict = {}

    @property
    def name(self) -> str:
        return self.kernel.name

    @property
    def input_names(self) -> list:
        return self.kernel.input_names

    @property
    def output_names(self) -> list:
        return self.kernel.output_names

    def _choose(
        self,
        inputs: Sequence[Any],
        grid: Any,
        output_shapes: Any,
        output_dtypes: Any,
        template: Any,
        init_value: Any,
        stream: Any,
        device: Any,
        out: Any,
    ) -> int:
        if out is not None and output_shapes is None:
            output_shapes = [tuple(o.shape) for o in out]
            output_dtypes = [o.dtype for o in out]
        user_key = None if self._key_fn is None else repr(self._key_fn(inputs))
        memo = (
            tuple(_signature(x) for x in inputs) if user_key is None else user_key,
            None if output_shapes is None or user_key is not None else tuple(tuple(s) for s in output_shapes),
            None if output_dtypes is None else tuple(str(d) for d in output_dtypes),
            tuple(_template_items(template)),
            None if grid is None else tuple(grid),
            id(stream) if stream is not None else None,
            str(device) if device is not None else None,
        )
        index = self._chosen.get(memo)
        if index is not None:
            return index
        grids = [
            c.get("grid") if c.get("grid") is not None
            else (self._grid_fn(c, inputs) if self._grid_fn is not None else None)
            for c in self.configs
        ]
        index = self._tuner.choose(
            self.native,
            inputs=list(inputs),
            grids=[None if g is None else _dims(g) for g in grids],
            grid=None if grid is None else _dims(grid),
            output_shapes=output_shapes,
            output_dtypes=output_dtypes,
            template=_template_items(template) or None,
            init_value=init_value,
            stream=stream,
            device=device,
            key=user_key,
        )
        self._chosen[memo] = index
        return index

    def best(
        self,
        *,
        inputs: Sequence[Any],
        grid: Any = None,
        threadgroup: Any = None,
        output_shapes: Any = None,
        output_dtypes: Any = None,
        template: Any = None,
        init_value: Optional[float] = None,
        verbose: bool = False,
        stream: Any = None,
        device: Any = None,
        out: Any = None,
        **_: Any,
    ) -> dict:
        """The configuration chosen for a call with these arguments, without
        running it (tuning its key first if no cache tier has a record)."""
        i = self._choose(inputs, grid, output_shapes, output_dtypes, template, init_value, stream, device, out)
        return dict(self.configs[i])

    def __call__(
        self,
        *,
        inputs: Sequence[Any],
        grid: Any = None,
        threadgroup: Any = None,
        output_shapes: Any = None,
        output_dtypes: Any = None,
        template: Any = None,
        init_value: Optional[float] = None,
        verbose: bool = False,
        stream: Any = None,
        device: Any = None,
        out: Any = None,
        **rest: Any,
    ) -> Any:
        i = self._choose(inputs, grid, output_shapes, output_dtypes, template, init_value, stream, device, out)
        config = self.configs[i]
        if config.get("grid") is not None:
            grid = config["grid"]
        elif self._grid_fn is not None:
            grid = self._grid_fn(config, inputs)
        tuned = _template_items(config.get("template"))
        return self.kernel(
            inputs=inputs,
            grid=_dims(grid) if grid is not None else None,
            threadgroup=_dims(config["threadgroup"]),
            output_shapes=output_shapes,
            output_dtypes=output_dtypes,
            template=(_template_items(template) + tuned) or None,
            init_value=init_value,
            verbose=verbose,
            stream=stream,
            device=device,
            out=out,
            **rest,
        )

    def __repr__(self) -> str:
        return f"autotune({self.kernel!r}, {len(self.configs)} configs)"


def autotune(
    kernel: Any,
    configs: Sequence[Mapping[str, Any]],
    grid: Optional[Callable[[Mapping[str, Any], Sequence[Any]], Any]] = None,
    key: Optional[Callable[[Sequence[Any]], Any]] = None,
) -> Autotuned:
    """``kernel`` with launch configurations to choose from: each a dict of
    ``threadgroup`` (required), ``template`` (a dict or list of pairs) and
    ``grid`` (fixed for that configuration). ``grid(config, inputs)`` gives
    the grid of a configuration for a call's inputs; ``key(inputs)``
    replaces the inputs' shapes and dtypes in the tuning key. Returns a
    callable with the kernel's call signature; ``.best(inputs=..., ...)``
    returns the chosen configuration without running the kernel."""
    return Autotuned(kernel, configs, grid=grid, key=key)
