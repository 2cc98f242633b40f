"""Bilinear grid_sample, forward and backward, written once and run under
NumPy, PyTorch and JAX (the example of docs/jax.md).

The two kernel bodies below are MLX's grid_sample example (NHWC, zero
padding, align_corners=False): one thread per output element; the
backward scatters into ``x_grad`` and ``grid_grad`` with atomic adds. Each
framework gets the same bodies through its own kernelkit constructor:
``kernelkit.metal_kernel`` (NumPy), ``kernelkit.torch.custom_op`` (an
operator with autograd) and ``kernelkit.jax.metal_kernel`` with
``kernelkit.jax.custom_vjp`` (``jax.grad``). The PyTorch and JAX parts are
skipped, saying so, where those are not installed.

Run: ``python crates/kernelkit/examples/python/grid_sample_three_ways.py``
"""

import numpy as np

import kernelkit as kk

SAMPLE = """
    uint elem = thread_position_in_grid.x;
    int H = x_shape[1]; int W = x_shape[2]; int C = x_shape[3];
    int gH = grid_shape[1]; int gW = grid_shape[2];
    uint cell = elem / C;
    int b = cell / (gH * gW);
    int c = elem % C;
    int row = W * C;
    int base = b * H * row + c;
    T ix = ((grid[2 * cell] + T(1)) * T(W) - T(1)) / T(2);
    T iy = ((grid[2 * cell + 1] + T(1)) * T(H) - T(1)) / T(2);
    T fx = metal::floor(ix); T fy = metal::floor(iy);
    int x0 = int(fx); int y0 = int(fy); int x1 = x0 + 1; int y1 = y0 + 1;
    T wx1 = ix - fx; T wx0 = T(1) - wx1; T wy1 = iy - fy; T wy0 = T(1) - wy1;
    bool in_x0 = x0 >= 0 && x0 < W; bool in_x1 = x1 >= 0 && x1 < W;
    bool in_y0 = y0 >= 0 && y0 < H; bool in_y1 = y1 >= 0 && y1 < H;
    int i00 = base + y0 * row + x0 * C; int i01 = base + y0 * row + x1 * C;
    int i10 = base + y1 * row + x0 * C; int i11 = base + y1 * row + x1 * C;
    T v00 = (in_y0 && in_x0) ? x[i00] : T(0);
    T v01 = (in_y0 && in_x1) ? x[i01] : T(0);
    T v10 = (in_y1 && in_x0) ? x[i10] : T(0);
    T v11 = (in_y1 && in_x1) ? x[i11] : T(0);
"""
FORWARD = SAMPLE + """
    out[elem] = wy0 * (wx0 * v00 + wx1 * v01) + wy1 * (wx0 * v10 + wx1 * v11);
"""
BACKWARD = SAMPLE + """
    T g = cotangent[elem];
    if (in_y0 && in_x0) atomic_fetch_add_explicit(&x_grad[i00], wy0 * wx0 * g, memory_order_relaxed);
    if (in_y0 && in_x1) atomic_fetch_add_explicit(&x_grad[i01], wy0 * wx1 * g, memory_order_relaxed);
    if (in_y1 && in_x0) atomic_fetch_add_explicit(&x_grad[i10], wy1 * wx0 * g, memory_order_relaxed);
    if (in_y1 && in_x1) atomic_fetch_add_explicit(&x_grad[i11], wy1 * wx1 * g, memory_order_relaxed);
    T d_ix = wy0 * (v01 - v00) + wy1 * (v11 - v10);
    T d_iy = wx0 * (v10 - v00) + wx1 * (v11 - v01);
    atomic_fetch_add_explicit(&grid_grad[2 * cell], g * d_ix * T(W) / T(2), memory_order_relaxed);
    atomic_fetch_add_explicit(&grid_grad[2 * cell + 1], g * d_iy * T(H) / T(2), memory_order_relaxed);
"""
FWD_ARGS = dict(name="grid_sample", input_names=["x", "grid"], output_names=["out"], source=FORWARD)
BWD_ARGS = dict(name="grid_sample_vjp", input_names=["x", "grid", "cotangent"],
                output_names=["x_grad", "grid_grad"], source=BACKWARD, atomic_outputs=True)


def call_args(x, g, dtype):
    """The call of either kernel on ``x`` (B, H, W, C) and ``g`` (B, gH, gW, 2)."""
    B, gH, gW = g.shape[:3]
    return dict(template=[("T", dtype)], grid=(B * gH * gW * x.shape[3], 1, 1),
                threadgroup=(256, 1, 1))


def data(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((2, 8, 8, 3)).astype(np.float32)
    g = rng.uniform(-0.9, 0.9, (2, 5, 5, 2)).astype(np.float32)
    cot = rng.standard_normal((2, 5, 5, 3)).astype(np.float32)
    return x, g, cot


def run_numpy(x, g, cot):
    fwd, bwd = kk.metal_kernel(**FWD_ARGS), kk.metal_kernel(**BWD_ARGS)
    out_shape = g.shape[:3] + x.shape[3:]
    (out,) = fwd(inputs=[x, g], output_shapes=[out_shape], output_dtypes=[x.dtype],
                 **call_args(x, g, x.dtype))
    xg, gg = bwd(inputs=[x, g, cot], output_shapes=[x.shape, g.shape],
                 output_dtypes=[x.dtype, g.dtype], init_value=0, **call_args(x, g, x.dtype))
    return np.asarray(out), np.asarray(xg), np.asarray(gg)


def run_torch(x, g, cot):
    try:
        import torch
    except ImportError:
        print("PyTorch: skipped (not installed)")
        return None
    from kernelkit.torch import custom_op

    fwd, bwd = kk.metal_kernel(**FWD_ARGS), kk.metal_kernel(**BWD_ARGS)
    grid = lambda x, g, *rest: (g.shape[0] * g.shape[1] * g.shape[2] * x.shape[3], 1, 1)  # noqa: E731
    vjp = custom_op("kk_example::grid_sample_vjp", bwd, template=lambda x, g, c: {"T": x.dtype},
                    grid=grid, output_shapes=lambda x, g, c: [x.shape, g.shape],
                    output_dtypes=lambda x, g, c: [x.dtype, g.dtype], init_value=0)
    sample = custom_op("kk_example::grid_sample", fwd, template=lambda x, g: {"T": x.dtype},
                       grid=grid, output_shapes=lambda x, g: [tuple(g.shape[:3]) + (x.shape[3],)],
                       output_dtypes=lambda x, g: [x.dtype],
                       backward=lambda i, o, c: vjp(i[0], i[1], c[0].contiguous()))
    tx = torch.tensor(x, requires_grad=True)
    tg = torch.tensor(g, requires_grad=True)
    out = sample(tx, tg)
    out.backward(torch.tensor(cot))
    return out.detach().numpy(), tx.grad.numpy(), tg.grad.numpy()


def run_jax(x, g, cot):
    try:
        import jax
        import jax.numpy as jnp
        import kernelkit.jax as kkj
    except ImportError:
        print("JAX: skipped (not installed)")
        return None
    fwd, bwd = kkj.metal_kernel(**FWD_ARGS), kkj.metal_kernel(**BWD_ARGS)

    def forward(x, g):
        (out,) = fwd(inputs=[x, g], output_shapes=[g.shape[:3] + x.shape[3:]],
                     output_dtypes=[x.dtype], **call_args(x, g, x.dtype))
        return out

    def backward(primals, out, cot):
        x, g = primals
        return bwd(inputs=[x, g, cot], output_shapes=[x.shape, g.shape],
                   output_dtypes=[x.dtype, g.dtype], init_value=0, **call_args(x, g, x.dtype))

    grid_sample = kkj.custom_vjp(forward, backward)
    out, pullback = jax.vjp(jax.jit(grid_sample), jnp.asarray(x), jnp.asarray(g))
    xg, gg = pullback(jnp.asarray(cot))
    return np.asarray(out), np.asarray(xg), np.asarray(gg)


def main():
    x, g, cot = data()
    ref = run_numpy(x, g, cot)
    print("NumPy: forward", ref[0].shape, "backward", ref[1].shape, ref[2].shape)
    for name, run in (("PyTorch", run_torch), ("JAX", run_jax)):
        got = run(x, g, cot)
        if got is None:
            continue
        for a, b in zip(got, ref):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
        print(f"{name}: forward and backward match NumPy's")


if __name__ == "__main__":
    main()
