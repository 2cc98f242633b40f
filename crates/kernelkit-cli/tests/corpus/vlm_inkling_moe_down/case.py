"""mlx-vlm Inkling `inkling_moe_down_combine`: the routed experts' 4-bit
down projection for decode, dequantised in the kernel (q4, groups of 64,
per-group scale and bias), one simdgroup per selected expert, simd_sum per
row, and the top-k weighted combination through a threadgroup array.

IN must be 32 lanes x 64 = 2048 (one quantisation group per lane).
"""
from corpus_lib import *

N, K, E, OUT, IN = 1, 2, 3, 4, 2048
GROUPS = IN // 64
WHAT = "MoE expert combine with in-kernel 4-bit dequantisation (simd_sum + threadgroup)"
FEATURES = ["template", "simd", "barrier", "threadgroup", "int_bits"]
ORIGIN = Origin(
    repo="Blaizzy/mlx-vlm",
    path="mlx_vlm/models/inkling/language.py",
    commit="4d48691128ea9d89d968c9b8f8669da5e8a02ad2",
    license="MIT",
    source=Text(expr=("assign", "_DOWN_COMBINE_SRC", 0), sha256="ce48d8fe10c2073015b8c0a031e0c25986bcec68461a3e7a14c29dde5bdf0677"),
)
KERNEL = Kernel(name="inkling_moe_down_combine", inputs=["xin", "wq", "sc", "bi", "idx", "wk"],
                outputs=["out"])
CALL = Call(
    outputs=[("out", "float32", (N, OUT))],
    template=[("T", "float32"), ("OUT", OUT), ("IN", IN), ("GROUPS", GROUPS), ("K", K)],
    grid=(256, OUT, N),
    threadgroup=(256, 1, 1),
)
RULES = {"out": close(1e-4, 1e-4, "float32 sums of 2048 products, simd_sum order not fixed")}


def make_inputs(rng):
    q = rng.integers(0, 16, size=(E, OUT, IN))
    q8 = q.reshape(E, OUT, IN // 8, 8)
    wq = np.zeros((E, OUT, IN // 8), dtype=np.uint64)
    for t in range(8):
        wq |= q8[..., t].astype(np.uint64) << np.uint64(4 * t)
    return {
        "xin": (rng.normal(size=(N * K, IN)) / 16).astype(np.float32),
        "wq": wq.astype(np.uint32),
        "sc": (rng.uniform(0.01, 0.05, size=(E, OUT, GROUPS))).astype(np.float32),
        "bi": (rng.normal(size=(E, OUT, GROUPS)) * 0.1).astype(np.float32),
        "idx": np.array([[2, 0]], dtype=np.uint32),
        "wk": np.array([[0.7, 0.3]], dtype=np.float32),
    }


def reference(a):
    wq = a["wq"].astype(np.uint64)
    q = np.stack([(wq >> np.uint64(4 * t)) & np.uint64(15) for t in range(8)], -1).reshape(E, OUT, IN)
    sc = np.repeat(a["sc"].astype(np.float64), 64, axis=-1)
    bi = np.repeat(a["bi"].astype(np.float64), 64, axis=-1)
    w = q.astype(np.float64) * sc + bi  # [E, OUT, IN]
    x = a["xin"].astype(np.float64).reshape(N, K, IN)
    out = np.zeros((N, OUT))
    for n in range(N):
        for k in range(K):
            out[n] += (w[a["idx"][n, k]] @ x[n, k]) * a["wk"][n, k]
    return {"out": out}
