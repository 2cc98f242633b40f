"""mlx-primitives `int4_matmul_vectorized`: the int4 linear layer on uint32
words (eight nibbles) with `float4 x0 = X4[...]`.

X4 is the float32 input, so `X4[i]` is a float and `float4 x0 = X4[i]`
is Metal's scalar-to-vector conversion: all four lanes hold X4[i]. The
reference follows Metal's semantics (x0.x..w are the same element), not
the author's intent; x4_offset / d8 * 2 index the float array as written.
This is the path `_metal_int4_linear` takes when in_features % 8 == 0
(in_features = 32, group_size = 8).
"""
from corpus_lib import *

B, S, IN, OUT, GS = 1, 2, 32, 6, 8
NG = IN // GS
WHAT = "int4 linear on uint32 words with float4 built from a scalar (Metal splat)"
FEATURES = ["vector", "int_bits"]
ORIGIN = Origin(
    repo="zakkeown/mlx-primitives",
    path="mlx_primitives/kernels/quantized_linear.py",
    commit="bf2b118f0adb651bca31647733b99a72ab2b7042",
    license="MIT",
    source=Text(expr=("assign", "source", 3), sha256="fb598174d27d98b02b9fa9b09403c0b0ff511db2e11cc20e9c8350bcd3e9ade9"),
)
KERNEL = Kernel(name="int4_matmul_vectorized",
                inputs=["X4", "W_packed", "scales", "zero_points", "bias", "batch_size", "seq_len",
                        "in_features", "out_features", "group_size", "has_bias"],
                outputs=["Y"])
CALL = Call(outputs=[("Y", "float32", (B, S, OUT))], grid=(OUT, S, B), threadgroup=(min(OUT, 64), 1, 1))
RULES = {"Y": close(1e-5, 1e-5, "a 32-term float32 sum (order of fma contraction)")}


def make_inputs(rng):
    u32 = lambda v: np.array([v], dtype=np.uint32)
    q = rng.integers(0, 16, size=(OUT, IN)).astype(np.uint64)
    words = np.zeros((OUT, IN // 8), dtype=np.uint64)
    for t in range(8):
        words |= q[:, t::8] << np.uint64(4 * t)
    return {
        "X4": rng.normal(size=(B, S, IN)).astype(np.float32),
        "W_packed": words.astype(np.uint32),
        "scales": rng.uniform(0.01, 0.1, size=(OUT, NG)).astype(np.float32),
        "zero_points": rng.uniform(6, 9, size=(OUT, NG)).astype(np.float32),
        "bias": rng.normal(size=(OUT,)).astype(np.float32),
        "batch_size": u32(B), "seq_len": u32(S), "in_features": u32(IN), "out_features": u32(OUT),
        "group_size": u32(GS), "has_bias": u32(1),
    }


def reference(a):
    x = a["X4"].astype(np.float64).reshape(-1)
    words = a["W_packed"].astype(np.uint64)
    sc, zp = a["scales"].astype(np.float64), a["zero_points"].astype(np.float64)
    in4, in8 = IN // 4, IN // 8
    y = np.zeros((B, S, OUT))
    for b in range(B):
        for s in range(S):
            base = b * S * in4 + s * in4
            for o in range(OUT):
                acc = 0.0
                for d8 in range(in8):
                    g = d8 * 8 // GS
                    w = [sc[o, g] * (float((int(words[o, d8]) >> (4 * t)) & 15) - zp[o, g]) for t in range(8)]
                    acc += x[base + d8 * 2] * sum(w[:4]) + x[base + d8 * 2 + 1] * sum(w[4:])
                y[b, s, o] = acc + a["bias"][o]
    return {"Y": y}
