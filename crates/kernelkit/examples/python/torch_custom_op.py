"""A kernelkit kernel as a PyTorch operator: called like any torch op,
differentiated through a backward of your own, traced by ``torch.compile``
without a graph break.

Needs the Python package (``pip install .`` at the repository root) and
PyTorch. Runs on a GPU where torch sees one, else on the CPU (kernelkit's
CPU device: the system C++ compiler)::

    python3 crates/kernelkit/examples/python/torch_custom_op.py

More in ``docs/pytorch.md``: ``torch.export``, CUDA graphs, a backward
written as a second kernel.
"""

import torch

import kernelkit as kk
import kernelkit.torch as kkt

# The kernel: ``y = x * scale[column]``, in MLX's Metal dialect. ``x_shape``
# is generated for the input ``x``; ``T`` is a template type, set per call.
scale_columns_kernel = kk.metal_kernel(
    name="scale_columns",
    input_names=["x", "scale"],
    output_names=["y"],
    source="""
        uint i = thread_position_in_grid.x;
        y[i] = x[i] * scale[i % x_shape[1]];
    """,
)


def scale_columns_backward(inputs, outputs, grads):
    """d(x * s)/dx = s, d(x * s)/ds = sum over rows of x: any torch code
    (or another kernelkit operator) may compute a gradient."""
    x, scale = inputs
    (grad_y,) = grads
    return grad_y * scale, (grad_y * x).sum(dim=0)


# The operator: its call shape is fixed here, as values or as functions of
# the input tensors. The output rule doubles as the fake implementation that
# torch.compile traces with.
scale_columns = kkt.custom_op(
    "examples::scale_columns",
    scale_columns_kernel,
    grid=lambda x, scale: (x.numel(), 1, 1),
    threadgroup=(256, 1, 1),
    output_shapes=lambda x, scale: [x.shape],
    output_dtypes=lambda x, scale: [x.dtype],
    backward=scale_columns_backward,
)


def block(x, scale):
    """A piece of a model: torch ops around the kernelkit op."""
    return torch.relu(scale_columns(torch.tanh(x), scale)).sum()


def main():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    gen = torch.Generator(device=device).manual_seed(0)
    x = torch.randn(64, 32, device=device, generator=gen, requires_grad=True)
    scale = torch.randn(32, device=device, generator=gen, requires_grad=True)

    # Eager: the op's result and gradients are torch's own expression's.
    loss = block(x, scale)
    loss.backward()
    x_ref = x.detach().clone().requires_grad_(True)
    scale_ref = scale.detach().clone().requires_grad_(True)
    torch.relu(torch.tanh(x_ref) * scale_ref).sum().backward()
    torch.testing.assert_close(x.grad, x_ref.grad)
    torch.testing.assert_close(scale.grad, scale_ref.grad)

    # torch.compile sees one graph: the kernelkit op is an operator to it,
    # not Python code it has to break the graph for.
    explained = torch._dynamo.explain(block)(x.detach(), scale.detach())
    assert explained.graph_break_count == 0, explained
    assert explained.graph_count == 1, explained

    print(
        f"examples::scale_columns on {device}: forward and gradients match torch, "
        f"{explained.graph_break_count} graph breaks"
    )


if __name__ == "__main__":
    main()
