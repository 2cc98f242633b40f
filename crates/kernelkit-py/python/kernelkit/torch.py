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

In-place kernels: ``donate={"out": "inp"}`` makes output ``out`` input
``inp``'s own buffer. The operator is registered as mutating ``inp``
(``mutates_args``, ``Tensor(a!)`` in its schema), so ``torch.compile`` sees
the mutation and orders it; the operator returns only the outputs that are
not donated, and calling the :class:`KernelOp` returns every output, the
donated ones being the input tensors themselves (version counters bumped).
The output rules may be left out when every output is donated.

Not supported: double backward through a kernelkit backward (unless the ops
the backward calls have backwards of their own), non-tensor arguments of the
op (template values, grids and shapes are fixed at registration, as
functions of the input tensors), a backward for an op that donates (autograd
would need the overwritten input), outputs that alias the inputs other than
by ``donate``, and capture of a call whose variant is not compiled yet.
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
        donate: Optional[Mapping[str, str]] = None,
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
        self._donate = dict(donate or {})
        for out, inp in self._donate.items():
            if out not in self.output_names or inp not in self.input_names:
                raise ValueError(
                    f"{name}: donate maps output names ({', '.join(self.output_names)}) to input "
                    f"names ({', '.join(self.input_names)}), got {out!r}: {inp!r}"
                )
        if len(set(self._donate.values())) != len(self._donate):
            raise ValueError(f"{name}: an input can be donated to one output only")
        if self._donate and backward is not None:
            raise ValueError(f"{name}: an op that donates inputs has no backward (the inputs are overwritten)")
        # Output position -> input position, for each donated output.
        self._donated = {
            self.output_names.index(o): self.input_names.index(i) for o, i in self._donate.items()
        }
        self._op = self._register()

    # The fixed call shape, for given input tensors.
    def _outputs(self, tensors: Sequence[Any]) -> Tuple[list, list]:
        if self._output_shapes is None and len(self._donated) == len(self.output_names):
            inputs = [tensors[self._donated[o]] for o in range(len(self.output_names))]
            return [tuple(t.shape) for t in inputs], [t.dtype for t in inputs]
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
        outs = [
            tensors[self._donated[i]] if i in self._donated else _torch.empty(s, dtype=d, device=device)
            for i, (s, d) in enumerate(zip(shapes, dtypes))
        ]
        self.kernel(
            inputs=list(tensors),
            template=template or None,
            grid=_dims(_rule(self._grid, tensors)),
            threadgroup=_dims(_rule(self._threadgroup, tensors)),
            output_shapes=shapes,
            output_dtypes=dtypes,
            init_value=self._init_value,
            out=self._out(outs),
            donate=self._donate or None,
        )
        return self._returned(outs)

    def _out(self, outs: Sequence[Any]) -> Optional[list]:
        """The call's ``out=``: none when every output is donated (the
        one-pass route takes that call), else ``None`` in each donated
        output's place."""
        if len(self._donated) == len(outs):
            return None
        return [None if i in self._donated else o for i, o in enumerate(outs)]

    def _returned(self, outs: Sequence[Any]) -> Any:
        """What the operator returns: the outputs that are not donated
        (a custom op's results must not alias its inputs)."""
        kept = [o for i, o in enumerate(outs) if i not in self._donated]
        if not kept:
            return None
        return kept[0] if len(kept) == 1 else tuple(kept)

    def _fake(self, *tensors: Any) -> Any:
        shapes, dtypes = self._outputs(tensors)
        device = tensors[0].device
        outs = [
            None if i in self._donated else tensors[0].new_empty(s, dtype=d, device=device)
            for i, (s, d) in enumerate(zip(shapes, dtypes))
        ]
        return self._returned(outs)

    def _schema(self) -> str:
        mutated = {self.input_names[i]: n for n, i in enumerate(sorted(self._donated.values()))}
        args = ", ".join(
            f"Tensor({_alias(mutated[n])}!) {n}" if n in mutated else f"Tensor {n}" for n in self.input_names
        )
        returned = len(self.output_names) - len(self._donated)
        if returned == 0:
            return f"({args}) -> ()"
        if returned == 1:
            return f"({args}) -> Tensor"
        return f"({args}) -> ({', '.join('Tensor' for _ in range(returned))})"

    def _register(self) -> Any:
        mutates = tuple(self._donate.values())
        op = _torch.library.custom_op(self.name, self._run, mutates_args=mutates, schema=self._schema())
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
        result = self._op(*tensors)
        if not self._donated:
            return result
        # Every output, in order: the donated ones are the inputs.
        rest = iter(() if result is None else (result if isinstance(result, tuple) else (result,)))
        outs = [tensors[self._donated[i]] if i in self._donated else next(rest) for i in range(len(self.output_names))]
        return outs[0] if len(outs) == 1 else tuple(outs)

    def __repr__(self) -> str:
        return f"<kernelkit.torch.KernelOp {self.name!r} of {self.kernel!r}>"


def _alias(n: int) -> str:
    """The alias set name of the ``n``-th mutated argument: ``a``, ``b``..."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    return letters[n % 26] + (str(n // 26) if n >= 26 else "")


def custom_op(
    name: str,
    kernel: Any,
    *,
    grid: Rule,
    output_shapes: Rule = None,
    output_dtypes: Rule = None,
    template: Rule = None,
    threadgroup: Rule = (256, 1, 1),
    init_value: Optional[float] = None,
    backward: Optional[Callable[..., Sequence[Optional[Any]]]] = None,
    donate: Optional[Mapping[str, str]] = None,
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

    ``donate={"out": "inp"}``: output ``out`` is input ``inp``'s buffer (an
    in-place op; registered in ``mutates_args``). ``output_shapes`` and
    ``output_dtypes`` may be left out when every output is donated.
    """
    if (output_shapes is None or output_dtypes is None) and len(donate or {}) != len(kernel.output_names):
        raise ValueError(f"custom_op {name!r}: output_shapes and output_dtypes are required (unless every output is donated)")
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
        donate=donate,
    )
