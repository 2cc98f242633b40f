"""mlx-lm `kl_backward` (tuner/losses.py): the gradient of KL(p || q) with
respect to the logits of q, c * (softmax(q) - softmax(p)), with the same
threadgroup reductions as the forward kernel. V = 1500, three rows.
"""
from corpus_lib import *

ROWS, V = 3, 1500
WHAT = "KL divergence gradient over a vocabulary row (threadgroup reduction)"
FEATURES = ["template", "simd", "barrier", "threadgroup", "metal_math"]
ORIGIN = Origin(
    repo="ml-explore/mlx-lm",
    path="mlx_lm/tuner/losses.py",
    commit="e7f241094c6f95b6b058f270db7fe6d413411a2c",
    license="MIT",
    source=Text(expr=("assign", "source", 1), sha256="dcdd87bf3548b0b3d3a39c02288bd9d55e10eccb543593dfcad6e7d452c064a1"),
)
KERNEL = Kernel(name="kl_backward", inputs=["logits_q", "logits_p", "cotan"], outputs=["out"])
CALL = Call(
    outputs=[("out", "float32", (ROWS, V))],
    template=[("T", "float32"), ("V", V)],
    grid=(1024, ROWS, 1),
    threadgroup=(1024, 1, 1),
)
RULES = {"out": close(1e-4, 1e-8, "fast::exp/log and a threadgroup-wide sum in a different order")}


def make_inputs(rng):
    return {
        "logits_q": (rng.normal(size=(ROWS, V)) * 2).astype(np.float32),
        "logits_p": (rng.normal(size=(ROWS, V)) * 2).astype(np.float32),
        "cotan": rng.uniform(0.5, 2.0, size=(ROWS,)).astype(np.float32),
    }


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def reference(a):
    q = softmax(a["logits_q"].astype(np.float64))
    p = softmax(a["logits_p"].astype(np.float64))
    return {"out": a["cotan"].astype(np.float64)[:, None] * (q - p)}
