"""mlx-lm `kl_forward` (tuner/losses.py): KL(p || q) of two rows of logits,
one 1024-thread threadgroup per row: online max / sum-exp per thread, then
simd_max / simd_sum and a 32-float threadgroup array across simdgroups.

V = 1500 (< 4096: only the tail block runs). `metal::fast::exp/log` are
approximate and the sums run in an order the reference cannot reproduce.
"""
from corpus_lib import *

ROWS, V = 3, 1500
WHAT = "KL divergence of softmaxes over a vocabulary row (threadgroup reduction)"
FEATURES = ["template", "simd", "barrier", "threadgroup", "metal_math"]
ORIGIN = Origin(
    repo="ml-explore/mlx-lm",
    path="mlx_lm/tuner/losses.py",
    commit="e7f241094c6f95b6b058f270db7fe6d413411a2c",
    license="MIT",
    source=Text(expr=("assign", "source", 0), sha256="5e9b73782109d4776cc96ad0348cf6407c190ec9de49f261aa4674b039d80428"),
)
KERNEL = Kernel(name="kl_forward", inputs=["logits_q", "logits_p"], outputs=["out"])
CALL = Call(
    outputs=[("out", "float32", (ROWS,))],
    template=[("T", "float32"), ("V", V)],
    grid=(1024, ROWS, 1),
    threadgroup=(1024, 1, 1),
)
RULES = {"out": close(1e-4, 1e-5, "fast::exp/log and a threadgroup-wide sum in a different order")}


def make_inputs(rng):
    return {
        "logits_q": (rng.normal(size=(ROWS, V)) * 2).astype(np.float32),
        "logits_p": (rng.normal(size=(ROWS, V)) * 2).astype(np.float32),
    }


def log_softmax(x):
    m = x.max(-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(-1, keepdims=True))


def reference(a):
    lq = log_softmax(a["logits_q"].astype(np.float64))
    lp = log_softmax(a["logits_p"].astype(np.float64))
    return {"out": (np.exp(lp) * (lp - lq)).sum(-1)}
