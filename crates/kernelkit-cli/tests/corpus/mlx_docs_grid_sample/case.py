"""MLX docs, "Complex Example": bilinear grid_sample forward.

x is (B, H, W, C) channel-last, grid (B, gN, gM, 2) in [-1, 1]. The body
reads all four neighbours before masking them, so the grid is drawn such
that every neighbour is inside the image (ix, iy in [0, W-2] x [0, H-2]).
"""
from corpus_lib import *

B, H, W, C, GN, GM = 2, 6, 5, 8, 3, 4
WHAT = "bilinear grid_sample forward, channel-last (the docs' complex example)"
FEATURES = ["template", "strides"]
ORIGIN = Origin(
    repo="ml-explore/mlx",
    path="docs/src/dev/custom_metal_kernels.rst",
    commit="f99e1dc03302d5450e0c6d65d3e33561c6b8e7f0",
    license="MIT",
    source=Text(block=4, expr=("assign", "source", 0),
                sha256="95fe9123b388ab47ae8e9aa226db55b01c12f6369da49a1110a816287369753e"),
)
KERNEL = Kernel(name="grid_sample", inputs=["x", "grid"], outputs=["out"])
CALL = Call(
    outputs=[("out", "float32", (B, GN, GM, C))],
    template=[("T", "float32")],
    grid=(B * GN * GM * C, 1, 1),
    threadgroup=(256, 1, 1),
)
RULES = {"out": ulp(4, "a sum of four positive products: contraction into fma may differ by an ulp per term")}


def make_inputs(rng):
    x = rng.uniform(0.5, 1.5, size=(B, H, W, C)).astype(np.float32)
    # ix = ((g + 1) * W - 1) / 2 must lie in [0, W - 2]: g in [1/W - 1, (2W - 3)/W - 1]
    gx = rng.uniform(1 / W - 1 + 1e-3, (2 * W - 3) / W - 1 - 1e-3, size=(B, GN, GM))
    gy = rng.uniform(1 / H - 1 + 1e-3, (2 * H - 3) / H - 1 - 1e-3, size=(B, GN, GM))
    return {"x": x, "grid": np.stack([gx, gy], -1).astype(np.float32)}


def reference(a):
    x, g = a["x"], a["grid"]
    one, two = np.float32(1), np.float32(2)
    ix = ((g[..., 0] + one) * np.float32(W) - one) / two
    iy = ((g[..., 1] + one) * np.float32(H) - one) / two
    x0 = np.floor(ix).astype(np.int64)
    y0 = np.floor(iy).astype(np.int64)
    x1, y1 = x0 + 1, y0 + 1
    f = np.float32
    nw = (x1.astype(f) - ix) * (y1.astype(f) - iy)
    ne = (ix - x0.astype(f)) * (y1.astype(f) - iy)
    sw = (x1.astype(f) - ix) * (iy - y0.astype(f))
    se = (ix - x0.astype(f)) * (iy - y0.astype(f))
    b = np.arange(B)[:, None, None]
    out = (nw[..., None] * x[b, y0, x0] + ne[..., None] * x[b, y0, x1]
           + sw[..., None] * x[b, y1, x0] + se[..., None] * x[b, y1, x1])
    return {"out": out}
