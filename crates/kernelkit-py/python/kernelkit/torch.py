"""kernelkit kernels as PyTorch operators: inside ``torch.compile``, CUDA
graphs and autograd.

A plain Python call of a kernelkit kernel breaks the three things PyTorch
does to a model: ``torch.compile`` graph-breaks on it, ``torch.export`` cannot
keep it, and autograd stops at it. :func:`custom_op` registers a kernel, with
its fixed call shape (template values, grid, threadgroup, output shapes and
dtypes, each a value or a function of the input tensors), as a
``torch.library.custom_op``:

- a *fake* implementation built from the output rule, so ``torch.compile
  (fullgraph=True)`` traces through the op without running it and
  ``torch.export`` keeps it as one node;
- an optional backward, registered with ``torch.library.register_autograd``:
  any Python function of ``(inputs, outputs, grads)``, typically calling
  another kernelkit op (:func:`custom_op` of the vector-Jacobian kernel);
- on CUDA, the call runs on torch's current stream and its outputs come from
  ``torch.empty`` (torch's caching allocator), so it can be captured by
  ``torch.cuda.graph`` like any torch op: nothing is synchronized or
  allocated outside torch while capturing. A variant that is not compiled
  yet cannot be compiled during a capture: the call raises
  :class:`kernelkit.CallError` ("compile it before capture"), the capture
  stays valid. Run the op once before capturing (the usual warm-up does).

>>> import torch, kernelkit as kk, kernelkit.torch as kkt
>>> square = kk.metal_kernel(name="square", input_names=["x"], output_names=["y"],
...     source="uint i = thread_position_in_grid.x; y[i] = x[i] * x[i];")
>>> op = kkt.custom_op("kkdoc::square", square,
...     template=lambda x: {"T": x.dtype},
...     grid=lambda x: (x.numel(), 1, 1),
...     output_shapes=lambda x: [x.shape],
...     output_dtypes=lambda x: [x.dtype],
...     backward=lambda inputs, outputs, grads: (2 * inputs[0] * grads[0],))
>>> op(torch.tensor([1.0, 2.0, 3.0]))
tensor([1., 4., 9.])

Not supported: double backward through a kernelkit backward (unless the ops
the backward calls have backwards of their own), non-tensor arguments of the
op (template values, grids and shapes are fixed at registration, as
functions of the input tensors), outputs that alias or mutate the inputs,
and capture of a call whose variant is not compiled yet.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Optional, Sequence, Tuple, Union

import torch as _torch

__all__ = ["custom_op", "KernelOp"]

Rule = Union[Any, Callable[..., Any]]


def _rule(value: Rule, tensors: Sequence[Any]) -> Any:
    """A registration value: a function of the input tensors, or fixed."""
    return value(*tensors) if callable(value) else value


def _dims(value: Any) -> Tuple[int, int, int]:
    dims = tuple(int(d) for d in value)
    if len(dims) != 3:
        raise ValueError(f"expected 3 dimensions, got {value!r}")
    return dims  # type: ignore[return-value]


def _shapes(value: Any, count: int, what: str) -> list:
    shapes = [tuple(int(d) for d in s) for s in value]
    if len(shapes) != count:
        raise ValueError(f"{what}: expected {count} output shape(s), got {len(shapes)}")
    return shapes


class KernelOp:
    """A kernelkit kernel registered as a PyTorch operator (see
    :func:`custom_op`). Calling it calls the operator: ``op(*tensors)``
    returns a tensor (one output) or a tuple of tensors."""

    def __init__(
        self,
        name: str,
        kernel: Any,
        *,
        template: Rule,
        grid: Rule,
        threadgroup: Rule,
        output_shapes: Rule,
        output_dtypes: Rule,
        init_value: Optional[float],
        backward: Optional[Callable[..., Sequence[Optional[Any]]]],
    ) -> None:
        self.name = name
        self.kernel = kernel
        self.input_names = list(kernel.input_names)
        self.output_names = list(kernel.output_names)
        self._template = template
        self._grid = grid
        self._threadgroup = threadgroup
        self._output_shapes = output_shapes
        self._output_dtypes = output_dtypes
        self._init_value = init_value
        self._backward = backward
        self._op = self._register()

    # The fixed call shape, for given input tensors.
    def _outputs(self, tensors: Sequence[Any]) -> Tuple[list, list]:
        shapes = _shapes(_rule(self._output_shapes, tensors), len(self.output_names), self.name)
        dtypes = list(_rule(self._output_dtypes, tensors))
        if len(dtypes) != len(self.output_names):
            raise ValueError(
                f"{self.name}: expected {len(self.output_names)} output dtype(s), got {len(dtypes)}"
            )
        return shapes, dtypes

    def _run(self, *tensors: Any) -> Any:
        shapes, dtypes = self._outputs(tensors)
        template = _rule(self._template, tensors)
        if isinstance(template, Mapping):
            template = list(template.items())
        device = tensors[0].device
        outs = [_torch.empty(s, dtype=d, device=device) for s, d in zip(shapes, dtypes)]
        self.kernel(
            inputs=list(tensors),
            template=template or None,
            grid=_dims(_rule(self._grid, tensors)),
            threadgroup=_dims(_rule(self._threadgroup, tensors)),
            output_shapes=shapes,
            output_dtypes=dtypes,
            init_value=self._init_value,
            out=outs,
        )
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _fake(self, *tensors: Any) -> Any:
        shapes, dtypes = self._outputs(tensors)
        device = tensors[0].device
        outs = [tensors[0].new_empty(s, dtype=d, device=device) for s, d in zip(shapes, dtypes)]
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _schema(self) -> str:
        args = ", ".join(f"Tensor {n}" for n in self.input_names)
        if len(self.output_names) == 1:
            return f"({args}) -> Tensor"
        return f"({args}) -> ({', '.join('Tensor' for _ in self.output_names)})"

    def _register(self) -> Any:
        op = _torch.library.custom_op(self.name, self._run, mutates_args=(), schema=self._schema())
        op.register_fake(self._fake)
        if self._backward is not None:
            n_in = len(self.input_names)
            user_backward = self._backward

            def setup_context(ctx: Any, inputs: Tuple[Any, ...], output: Any) -> None:
                outputs = output if isinstance(output, tuple) else (output,)
                ctx.save_for_backward(*inputs, *outputs)

            def backward(ctx: Any, *grads: Any) -> Tuple[Any, ...]:
                saved = ctx.saved_tensors
                inputs, outputs = saved[:n_in], saved[n_in:]
                result = tuple(user_backward(inputs, outputs, grads))
                if len(result) != n_in:
                    raise ValueError(
                        f"{self.name}: the backward returned {len(result)} gradient(s) for "
                        f"{n_in} input(s)"
                    )
                return result

            _torch.library.register_autograd(self.name, backward, setup_context=setup_context)
        return op

    @property
    def op(self) -> Any:
        """The registered operator (``torch.ops.<namespace>.<name>``)."""
        return self._op

    def __call__(self, *tensors: Any) -> Any:
        if len(tensors) != len(self.input_names):
            raise TypeError(
                f"{self.name}: expected {len(self.input_names)} tensor(s) "
                f"({', '.join(self.input_names)}), got {len(tensors)}"
            )
        return self._op(*tensors)

    def __repr__(self) -> str:
        return f"<kernelkit.torch.KernelOp {self.name!r} of {self.kernel!r}>"


def custom_op(
    name: str,
    kernel: Any,
    *,
    grid: Rule,
    output_shapes: Rule,
    output_dtypes: Rule,
    template: Rule = None,
    threadgroup: Rule = (256, 1, 1),
    init_value: Optional[float] = None,
    backward: Optional[Callable[..., Sequence[Optional[Any]]]] = None,
) -> KernelOp:
    """Registers ``kernel`` (from :func:`kernelkit.metal_kernel` or
    :func:`kernelkit.cuda_kernel`) as the PyTorch operator ``name``
    (``"namespace::op"``), taking one tensor per input name and returning
    one tensor per output name (a tuple when there are several).

    ``grid``, ``threadgroup``, ``output_shapes``, ``output_dtypes`` and
    ``template`` (a list of ``(name, value)`` pairs or a dict) are either
    values or functions of the input tensors, called with them in order;
    the output rule is also the fake implementation (called with fake
    tensors while tracing: use only shapes, dtypes and devices).

    ``backward(inputs, outputs, grads)`` returns one gradient (or ``None``)
    per input; it runs under autograd's rules like any backward formula, and
    may call other kernelkit ops (their own :func:`custom_op`) or torch.
    """
    if "::" not in name:
        raise ValueError(f"custom_op: the name {name!r} needs a namespace: 'namespace::op'")
    return KernelOp(
        name,
        kernel,
        template=template,
        grid=grid,
        threadgroup=threadgroup,
        output_shapes=output_shapes,
        output_dtypes=output_dtypes,
        init_value=init_value,
        backward=backward,
    )
