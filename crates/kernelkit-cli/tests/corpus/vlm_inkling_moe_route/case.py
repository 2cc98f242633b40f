"""mlx-vlm Inkling `inkling_moe_route`: MoE routing for one token per
simdgroup: sigmoid scores plus a correction bias, top-K by K rounds of
simd_max / simd_min / simd_shuffle (ties to the lowest lane), then a
softmax over the log-sigmoids of the K routed and SH shared logits.

R = 64 routed experts (two per lane), K = 4, SH = 1 shared expert,
I = 8 (gamma is the shared weight repeated I times). Scores are distinct,
so the selected indices and their order are determined.
"""
from corpus_lib import *

N, R, SH, K, I = 3, 64, 1, 4, 8
WS = 2.5
WHAT = "MoE top-k routing with simd_max/simd_min/simd_shuffle and a logsigmoid softmax"
FEATURES = ["template", "simd", "metal_math"]
ORIGIN = Origin(
    repo="Blaizzy/mlx-vlm",
    path="mlx_vlm/models/inkling/language.py",
    commit="4d48691128ea9d89d968c9b8f8669da5e8a02ad2",
    license="MIT",
    source=Text(expr=("assign", "_ROUTE_SRC", 0), sha256="4a9033b689406686f040e081a36970d19fd7084f7561e0b0e6d58c03342518a1"),
)
KERNEL = Kernel(name="inkling_moe_route", inputs=["logits", "corr", "wscale"],
                outputs=["idx", "wk", "gamma"])
CALL = Call(
    outputs=[("idx", "uint32", (N, K)), ("wk", "float32", (N, K)), ("gamma", "float32", (N, SH * I))],
    template=[("T", "float32"), ("N", N), ("R", R), ("SH", SH), ("K", K), ("I", I)],
    grid=(32, N, 1),
    threadgroup=(32, 1, 1),
)
WHY = "metal::exp/log: the reference is exact, the kernel's are within a few ulp"
RULES = {"idx": exact(), "wk": close(1e-5, 1e-7, WHY), "gamma": close(1e-5, 1e-7, WHY)}


def make_inputs(rng):
    return {
        "logits": rng.normal(size=(N, R + SH)).astype(np.float32),
        "corr": (rng.normal(size=(R,)) * 0.1).astype(np.float32),
        "wscale": np.array([WS], dtype=np.float32),
    }


def reference(a):
    lg = a["logits"].astype(np.float64)
    sc = 1 / (1 + np.exp(-lg[:, :R])) + a["corr"].astype(np.float64)
    idx = np.argsort(-sc, axis=1, kind="stable")[:, :K]
    tl = np.concatenate([np.take_along_axis(lg[:, :R], idx, 1), lg[:, R:]], axis=1)
    lp = -np.logaddexp(0, -tl)
    w = np.exp(lp - np.log(np.exp(lp).sum(1, keepdims=True))) * WS
    return {"idx": idx.astype(np.uint32), "wk": w[:, :K], "gamma": np.repeat(w[:, K:], I, axis=1)}
