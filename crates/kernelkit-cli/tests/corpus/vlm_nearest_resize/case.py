"""mlx-vlm `nearest_interpolation`: PyTorch-compatible nearest resize of an
NCHW image (flattened), dimensions passed in an int32 array.

The threadgroup is what `get_optimal_threadgroup(out_w, out_h)` returns for
the 11 x 6 output here: (8, 8, 1), so the grid is not a multiple of it and
the edge threads return early.
"""
from corpus_lib import *

B, C, IH, IW, OH, OW = 2, 3, 4, 5, 6, 11
WHAT = "nearest-neighbour image resize (PyTorch coordinates), NCHW"
FEATURES = []
ORIGIN = Origin(
    repo="Blaizzy/mlx-vlm",
    path="mlx_vlm/models/kernels.py",
    commit="18e9b979f9e6b9edfad20832698db1171320247c",
    license="MIT",
    source=Text(expr=("assign", "source", 0), sha256="ca4d7b81b9711a1ed7d9baf5a9aab699e76940f6b555d42dac87389be6b5a96b"),
)
KERNEL = Kernel(name="nearest_interpolation", inputs=["input", "dims"], outputs=["output"])
CALL = Call(
    outputs=[("output", "float32", (B * C * OH * OW,))],
    grid=(OW, OH, B * C),
    threadgroup=(8, 8, 1),
)
RULES = {"output": exact()}


def make_inputs(rng):
    return {
        "input": rng.normal(size=(B * C * IH * IW,)).astype(np.float32),
        "dims": np.array([B, C, IH, IW, OH, OW], dtype=np.int32),
    }


def reference(a):
    x = a["input"].reshape(B, C, IH, IW)
    # floor(out * (in / out)) computed in float32, as the body does
    ys = np.floor(np.arange(OH, dtype=np.float32) * (np.float32(IH) / np.float32(OH))).astype(int)
    xs = np.floor(np.arange(OW, dtype=np.float32) * (np.float32(IW) / np.float32(OW))).astype(int)
    ys, xs = np.clip(ys, 0, IH - 1), np.clip(xs, 0, IW - 1)
    return {"output": x[:, :, ys][:, :, :, xs].reshape(-1)}
