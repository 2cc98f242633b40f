"""MLX docs, "Grid Sample VJP": the backward pass of bilinear grid_sample.

Atomic float adds into x_grad (several grid points share a pixel) and a
simd_sum per grid point (C is padded to the SIMD width, 32) followed by one
atomic add per grid coordinate. init_value=0 fills both outputs first.
As in the forward entry, all four neighbours of each point are in bounds.
`gix_mult = W / 2` is an integer division in the body (W = 5 gives 2).
"""
from corpus_lib import *

B, H, W, C, GN, GM = 2, 6, 5, 8, 3, 4
CP = 32  # C padded to the SIMD width
WHAT = "bilinear grid_sample backward: atomic float adds + simd_sum (the docs' VJP)"
FEATURES = ["template", "strides", "atomic", "simd", "init_value"]
ORIGIN = Origin(
    repo="ml-explore/mlx",
    path="docs/src/dev/custom_metal_kernels.rst",
    commit="f99e1dc03302d5450e0c6d65d3e33561c6b8e7f0",
    license="MIT",
    source=Text(block=6, expr=("assign", "source", 0),
                sha256="9f84ebf86d1cffa4c5cd969fdbe170f827f082ef0e29365b91bec24bc43e2550"),
)
KERNEL = Kernel(name="grid_sample_grad", inputs=["x", "grid", "cotangent"],
                outputs=["x_grad", "grid_grad"], atomic_outputs=True)
CALL = Call(
    outputs=[("x_grad", "float32", (B, H, W, C)), ("grid_grad", "float32", (B, GN, GM, 2))],
    template=[("T", "float32")],
    grid=(B * GN * GM * CP, 1, 1),
    threadgroup=(256, 1, 1),
    init_value=0,
)
WHY = "float atomic adds and simd_sum: the order of the additions is not fixed"
RULES = {"x_grad": close(1e-5, 1e-6, WHY), "grid_grad": close(1e-5, 1e-5, WHY)}


def make_inputs(rng):
    x = rng.uniform(0.5, 1.5, size=(B, H, W, C)).astype(np.float32)
    gx = rng.uniform(1 / W - 1 + 1e-3, (2 * W - 3) / W - 1 - 1e-3, size=(B, GN, GM))
    gy = rng.uniform(1 / H - 1 + 1e-3, (2 * H - 3) / H - 1 - 1e-3, size=(B, GN, GM))
    cot = rng.normal(size=(B, GN, GM, C)).astype(np.float32)
    return {"x": x, "grid": np.stack([gx, gy], -1).astype(np.float32), "cotangent": cot}


def reference(a):
    x = a["x"].astype(np.float64)
    g = a["grid"].astype(np.float64)
    cot = a["cotangent"].astype(np.float64)
    ix = ((g[..., 0] + 1) * W - 1) / 2
    iy = ((g[..., 1] + 1) * H - 1) / 2
    x0 = np.floor(ix).astype(np.int64)
    y0 = np.floor(iy).astype(np.int64)
    x1, y1 = x0 + 1, y0 + 1
    wx1, wx0 = x1 - ix, ix - x0  # weights toward x0 / x1
    wy1, wy0 = y1 - iy, iy - y0
    x_grad = np.zeros_like(x)
    grid_grad = np.zeros(g.shape)
    for b in range(B):
        for i in range(GN):
            for j in range(GM):
                c = cot[b, i, j]
                X0, X1, Y0, Y1 = x0[b, i, j], x1[b, i, j], y0[b, i, j], y1[b, i, j]
                x_grad[b, Y0, X0] += wx1[b, i, j] * wy1[b, i, j] * c
                x_grad[b, Y0, X1] += wx0[b, i, j] * wy1[b, i, j] * c
                x_grad[b, Y1, X0] += wx1[b, i, j] * wy0[b, i, j] * c
                x_grad[b, Y1, X1] += wx0[b, i, j] * wy0[b, i, j] * c
                inw, ine, isw, ise = x[b, Y0, X0], x[b, Y0, X1], x[b, Y1, X0], x[b, Y1, X1]
                gix = np.sum((-inw * wy1[b, i, j] + ine * wy1[b, i, j]
                              - isw * wy0[b, i, j] + ise * wy0[b, i, j]) * c)
                giy = np.sum((-inw * wx1[b, i, j] - ine * wx0[b, i, j]
                              + isw * wx1[b, i, j] + ise * wx0[b, i, j]) * c)
                grid_grad[b, i, j] = [gix * (W // 2), giy * (H // 2)]
    return {"x_grad": x_grad, "grid_grad": grid_grad}
