"""mlx-vlm `bicubic_interpolation_antialias`: PyTorch-compatible bicubic
resize with antialiasing, cubic weights from helper functions in the header.

Downscale 9 x 10 -> 4 x 6 with antialias=True, align_corners=False, as
`bicubic_interpolate` computes the params array for that call:
[scale_h, scale_w, 0, 1, 1/scale_h, 1/scale_w, 2].
"""
from corpus_lib import *

B, C, IH, IW, OH, OW = 1, 2, 9, 10, 4, 6
WHAT = "antialiased bicubic image resize with header helpers (PyTorch/Pillow weights)"
FEATURES = ["header", "metal_math"]
ORIGIN = Origin(
    repo="Blaizzy/mlx-vlm",
    path="mlx_vlm/models/kernels.py",
    commit="18e9b979f9e6b9edfad20832698db1171320247c",
    license="MIT",
    source=Text(expr=("assign", "source", 1), sha256="49a96a0b556e8cd96288f799186b7d51dd7280416e2e827fad07fdbebe5c9f84"),
    header=Text(expr=("assign", "header", 0), sha256="4aef9129b0cd8da26feb5761ce6579a7c48e00798b80e5f48f824265e58a088c"),
)
KERNEL = Kernel(name="bicubic_interpolation_antialias", inputs=["input", "dims", "params"],
                outputs=["output"])
CALL = Call(
    outputs=[("output", "float32", (B * C * OH * OW,))],
    grid=(OW, OH, B * C),
    threadgroup=(8, 8, 1),
)
RULES = {"output": close(1e-5, 1e-6, "a normalised weighted sum of up to 8 x 10 terms (order, fma)")}

SCALE_H, SCALE_W = OH / IH, OW / IW


def make_inputs(rng):
    params = [SCALE_H, SCALE_W, 0.0, 1.0,
              1.0 / SCALE_H if SCALE_H < 1 else 1.0, 1.0 / SCALE_W if SCALE_W < 1 else 1.0, 2.0]
    return {
        "input": rng.uniform(0, 1, size=(B * C * IH * IW,)).astype(np.float32),
        "dims": np.array([B, C, IH, IW, OH, OW], dtype=np.int32),
        "params": np.array(params, dtype=np.float32),
    }


def cubic(x, a):
    x = abs(x)
    if x <= 1:
        return (a + 2) * x**3 - (a + 3) * x**2 + 1
    if x < 2:
        return a * x**3 - 5 * a * x**2 + 8 * a * x - 4 * a
    return 0.0


def weights(out_size, in_size, filter_scale):
    support = 2.0 * filter_scale
    rows = []
    for o in range(out_size):
        # the body computes the centre in float32
        c = float(np.float32((np.float32(o) + np.float32(0.5)) / np.float32(out_size)) * np.float32(in_size) - np.float32(0.5))
        lo = max(0, int(np.floor(c - support)) + 1)
        hi = min(in_size, int(np.floor(c + support)) + 1)
        rows.append([(p, cubic((p - c) / filter_scale, -0.5)) for p in range(lo, hi)])
    return rows


def reference(a):
    p = a["params"].astype(np.float64)
    x = a["input"].astype(np.float64).reshape(B, C, IH, IW)
    wy = weights(OH, IH, float(a["params"][4]))
    wx = weights(OW, IW, float(a["params"][5]))
    out = np.zeros((B, C, OH, OW))
    for oy in range(OH):
        for ox in range(OW):
            acc = np.zeros((B, C))
            total = 0.0
            for py, w1 in wy[oy]:
                for px, w2 in wx[ox]:
                    acc += x[:, :, py, px] * w1 * w2
                    total += w1 * w2
            out[:, :, oy, ox] = acc / total if total > 1e-8 else acc
    return {"output": out.reshape(-1)}
