"""mlx-lm `bitlinear_matmul`: BitNet b1.58 matrix-vector product on ternary
weights packed four to a byte (2 bits each, code - 1 in {-1, 0, 1}).

x holds multiples of 1/8, so every partial sum is exact in float32 and the
result is exact whatever the order of the simd_sum; the weight scale 0.5 is
inverted (invert_weight_scales = true gives 1 / 0.5 = 2, exact).
"""
from corpus_lib import *

BATCH, IN, OUT = 3, 256, 16
WHAT = "BitNet ternary matmul on 2-bit packed uint8 weights (simd_sum)"
FEATURES = ["template", "simd", "int_bits"]
ORIGIN = Origin(
    repo="ml-explore/mlx-lm",
    path="mlx_lm/models/bitlinear_layers.py",
    commit="bfa03f0ea78bacce6a4805a4ab8a44f6d73ebd76",
    license="MIT",
    source=Text(expr=("assign", "source", 0), sha256="b6a26040b565360e608c9e07d88fd32751dd63a63cfe3dbb2e56a6a42d0816fd"),
)
KERNEL = Kernel(name="bitlinear_matmul", inputs=["x", "packed_weights", "weight_scale"],
                outputs=["out"])
CALL = Call(
    outputs=[("out", "float32", (BATCH, OUT))],
    template=[("T", "float32"), ("invert_weight_scales", True), ("in_features", IN), ("out_features", OUT)],
    grid=(32, BATCH * OUT // 4, 1),
    threadgroup=(32, 1, 1),
)
RULES = {"out": ulp(2)}


def make_inputs(rng):
    codes = rng.integers(0, 3, size=(OUT // 4, IN, 4))  # ternary codes 0, 1, 2
    packed = codes[..., 0] | (codes[..., 1] << 2) | (codes[..., 2] << 4) | (codes[..., 3] << 6)
    return {
        "x": (rng.integers(-8, 9, size=(BATCH, IN)) / 8).astype(np.float32),
        "packed_weights": packed.astype(np.uint8),
        "weight_scale": np.array([0.5], dtype=np.float32),
    }


def reference(a):
    w = a["packed_weights"].astype(np.int64)
    # Output row r + i * OUT/4 uses bits 2i..2i+1 of packed row r.
    weights = np.concatenate([((w >> (2 * i)) & 3) - 1 for i in range(4)], axis=0)  # [OUT, IN]
    out = a["x"].astype(np.float64) @ weights.T.astype(np.float64)
    return {"out": out * (1 / 0.5)}
