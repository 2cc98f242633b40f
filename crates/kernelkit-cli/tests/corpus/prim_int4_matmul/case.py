"""mlx-primitives `int4_matmul_grouped`: a linear layer on 4-bit weights
packed two per uint8 (low nibble first), per-group scale and zero point,
optional bias; scalars passed as one-element uint32 arrays.

The scalar fallback `_metal_int4_linear` takes when in_features % 8 != 0:
in_features = 36, group_size = 12, bias present.
"""
from corpus_lib import *

B, S, IN, OUT, GS = 1, 3, 36, 10, 12
NG = (IN + GS - 1) // GS
WHAT = "int4 grouped-quantised linear layer (uint8 nibbles, scale + zero point)"
FEATURES = ["int_bits"]
ORIGIN = Origin(
    repo="zakkeown/mlx-primitives",
    path="mlx_primitives/kernels/quantized_linear.py",
    commit="bf2b118f0adb651bca31647733b99a72ab2b7042",
    license="MIT",
    source=Text(expr=("assign", "source", 2), sha256="2f020e369b492ac2ec7a03270c5972bcfc644678c20374f100630c9e56048eca"),
)
KERNEL = Kernel(name="int4_matmul_grouped",
                inputs=["X", "W_packed", "scales", "zero_points", "bias", "batch_size", "seq_len",
                        "in_features", "out_features", "group_size", "has_bias"],
                outputs=["Y"])
CALL = Call(outputs=[("Y", "float32", (B, S, OUT))], grid=(OUT, S, B), threadgroup=(min(OUT, 64), 1, 1))
RULES = {"Y": close(1e-5, 1e-5, "a 36-term float32 dot product (order of fma contraction)")}


def make_inputs(rng):
    u32 = lambda v: np.array([v], dtype=np.uint32)
    q = rng.integers(0, 16, size=(OUT, IN))
    packed = (q[:, 0::2] | (q[:, 1::2] << 4)).astype(np.uint8)
    return {
        "X": rng.normal(size=(B, S, IN)).astype(np.float32),
        "W_packed": packed,
        "scales": rng.uniform(0.01, 0.1, size=(OUT, NG)).astype(np.float32),
        "zero_points": rng.uniform(6, 9, size=(OUT, NG)).astype(np.float32),
        "bias": rng.normal(size=(OUT,)).astype(np.float32),
        "batch_size": u32(B), "seq_len": u32(S), "in_features": u32(IN), "out_features": u32(OUT),
        "group_size": u32(GS), "has_bias": u32(1),
    }


def reference(a):
    p = a["W_packed"].astype(np.int64)
    q = np.empty((OUT, IN))
    q[:, 0::2] = p & 15
    q[:, 1::2] = p >> 4
    g = np.arange(IN) // GS
    w = a["scales"].astype(np.float64)[:, g] * (q - a["zero_points"].astype(np.float64)[:, g])
    y = a["X"].astype(np.float64) @ w.T + a["bias"].astype(np.float64)
    return {"Y": y}
