"""Bilinear ``grid_sample`` (zero padding, ``align_corners=False``, NHWC) as a
pair of kernelkit kernels, forward and vector-Jacobian product: the example
of MLX's custom Metal kernels documentation, written for kernelkit. A test
fixture (not in the installed package): used by the tests of
:mod:`kernelkit.torch` and by ``bench/torch_native.py``; importing this
module imports nothing but kernelkit.

Shapes: ``x`` is ``(B, H, W, C)``, ``grid`` is ``(B, gH, gW, 2)`` of (x, y)
in [-1, 1], the output is ``(B, gH, gW, C)``; one thread per output element.
The backward scatters into ``x_grad`` and ``grid_grad`` with atomic adds
(``atomic_outputs=True``, zero-initialized), so it is one fused kernel.
"""

from kernelkit import metal_kernel

# The sample position of output element `elem` and its four neighbours'
# weights and values (zero outside the image).
_SAMPLE = """
    uint elem = thread_position_in_grid.x;
    int H = x_shape[1];
    int W = x_shape[2];
    int C = x_shape[3];
    int gH = grid_shape[1];
    int gW = grid_shape[2];
    uint cell = elem / C;
    int b = cell / (gH * gW);
    int c = elem % C;
    int row = W * C;
    int base = b * H * row + c;
    T ix = ((grid[2 * cell] + T(1)) * T(W) - T(1)) / T(2);
    T iy = ((grid[2 * cell + 1] + T(1)) * T(H) - T(1)) / T(2);
    T fx = metal::floor(ix);
    T fy = metal::floor(iy);
    int x0 = int(fx);
    int y0 = int(fy);
    int x1 = x0 + 1;
    int y1 = y0 + 1;
    T wx1 = ix - fx;
    T wx0 = T(1) - wx1;
    T wy1 = iy - fy;
    T wy0 = T(1) - wy1;
    bool in_x0 = x0 >= 0 && x0 < W;
    bool in_x1 = x1 >= 0 && x1 < W;
    bool in_y0 = y0 >= 0 && y0 < H;
    bool in_y1 = y1 >= 0 && y1 < H;
    int i00 = base + y0 * row + x0 * C;
    int i01 = base + y0 * row + x1 * C;
    int i10 = base + y1 * row + x0 * C;
    int i11 = base + y1 * row + x1 * C;
    T v00 = (in_y0 && in_x0) ? x[i00] : T(0);
    T v01 = (in_y0 && in_x1) ? x[i01] : T(0);
    T v10 = (in_y1 && in_x0) ? x[i10] : T(0);
    T v11 = (in_y1 && in_x1) ? x[i11] : T(0);
"""

forward = metal_kernel(
    name="kk_grid_sample",
    input_names=["x", "grid"],
    output_names=["out"],
    source=_SAMPLE
    + """
    out[elem] = wy0 * (wx0 * v00 + wx1 * v01) + wy1 * (wx0 * v10 + wx1 * v11);
""",
)

backward = metal_kernel(
    name="kk_grid_sample_vjp",
    input_names=["x", "grid", "cotangent"],
    output_names=["x_grad", "grid_grad"],
    atomic_outputs=True,
    source=_SAMPLE
    + """
    T g = cotangent[elem];
    if (in_y0 && in_x0) atomic_fetch_add_explicit(&x_grad[i00], wy0 * wx0 * g, memory_order_relaxed);
    if (in_y0 && in_x1) atomic_fetch_add_explicit(&x_grad[i01], wy0 * wx1 * g, memory_order_relaxed);
    if (in_y1 && in_x0) atomic_fetch_add_explicit(&x_grad[i10], wy1 * wx0 * g, memory_order_relaxed);
    if (in_y1 && in_x1) atomic_fetch_add_explicit(&x_grad[i11], wy1 * wx1 * g, memory_order_relaxed);
    T d_ix = wy0 * (v01 - v00) + wy1 * (v11 - v10);
    T d_iy = wx0 * (v10 - v00) + wx1 * (v11 - v01);
    atomic_fetch_add_explicit(&grid_grad[2 * cell], g * d_ix * T(W) / T(2), memory_order_relaxed);
    atomic_fetch_add_explicit(&grid_grad[2 * cell + 1], g * d_iy * T(H) / T(2), memory_order_relaxed);
""",
)


def torch_ops(namespace: str = "kernelkit_examples"):
    """Registers the pair as PyTorch operators (``NAMESPACE::grid_sample``
    with its backward, and ``NAMESPACE::grid_sample_vjp``) and returns
    ``(grid_sample, grid_sample_vjp)``; importing torch is the caller's."""
    from kernelkit.torch import custom_op

    def grid(*tensors):
        x, g = tensors[0], tensors[1]
        return (g.shape[0] * g.shape[1] * g.shape[2] * x.shape[3], 1, 1)

    vjp = custom_op(
        f"{namespace}::grid_sample_vjp",
        backward,
        template=lambda x, g, cot: {"T": x.dtype},
        grid=grid,
        output_shapes=lambda x, g, cot: [x.shape, g.shape],
        output_dtypes=lambda x, g, cot: [x.dtype, g.dtype],
        init_value=0,
    )

    def grads(inputs, outputs, cotangents):
        x, g = inputs
        return vjp(x, g, cotangents[0].contiguous())

    sample = custom_op(
        f"{namespace}::grid_sample",
        forward,
        template=lambda x, g: {"T": x.dtype},
        grid=grid,
        output_shapes=lambda x, g: [(g.shape[0], g.shape[1], g.shape[2], x.shape[3])],
        output_dtypes=lambda x, g: [x.dtype],
        backward=grads,
    )
    return sample, vjp
