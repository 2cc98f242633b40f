"""mlx-lm `wkv7_kernel`: the RWKV-7 "generalized delta rule" recurrence.

The source is an f-string without substitutions (only doubled braces), so
the string MLX gets is the literal with single braces. float32; D = 64 (two
state elements per lane), two heads, two sequences.
"""
from corpus_lib import *

B, T, H, D = 2, 3, 2, 64
WHAT = "RWKV-7 wkv state recurrence (two simd_sum per step)"
FEATURES = ["template", "simd", "scalar_input"]
ORIGIN = Origin(
    repo="ml-explore/mlx-lm",
    path="mlx_lm/models/rwkv7.py",
    commit="09579644ac2a3b8006828a940dbe57789f0ab8e2",
    license="MIT",
    source=Text(expr=("assign", "source", 0), sha256="39a80c80631bbbbc720775491364b5d5d2a36c1e292b80d910df7074054a1bfe"),
)
KERNEL = Kernel(name="wkv7_kernel", inputs=["r", "w", "k", "v", "a", "b", "state_in", "T"],
                outputs=["y", "state_out"])
CALL = Call(
    outputs=[("y", "float32", (B, T, H, D)), ("state_out", "float32", (B, H, D, D))],
    template=[("InT", "float32"), ("H", H), ("D", D)],
    grid=(32, D, B * H),
    threadgroup=(32, 4, 1),
)
WHY = "float32 dot products over D reduced with simd_sum (order not fixed)"
RULES = {"y": close(1e-4, 1e-5, WHY), "state_out": close(1e-4, 1e-5, WHY)}


def make_inputs(rng):
    f = np.float32
    shape = (B, T, H, D)
    kk = rng.normal(size=shape)
    kk /= np.linalg.norm(kk, axis=-1, keepdims=True)
    return {
        "r": (rng.normal(size=shape) / 8).astype(f),
        "w": rng.uniform(0.6, 1.0, size=shape).astype(f),
        "k": (rng.normal(size=shape) / 8).astype(f),
        "v": rng.normal(size=shape).astype(f),
        "a": (-kk).astype(f),
        "b": (kk * rng.uniform(0, 1, size=(B, T, H, 1))).astype(f),
        "state_in": (rng.normal(size=(B, H, D, D)) / 4).astype(f),
        "T": np.array(T, dtype=np.int32),
    }


def reference(x):
    f = {n: x[n].astype(np.float64) for n in ("r", "w", "k", "v", "a", "b", "state_in")}
    y = np.zeros((B, T, H, D))
    out = np.zeros((B, H, D, D))
    for b in range(B):
        for h in range(H):
            s = f["state_in"][b, h].copy()  # [Dv, Dk]
            for t in range(T):
                sa = s @ f["a"][b, t, h]  # [Dv], before the decay
                s = s * f["w"][b, t, h][None, :]
                s = s + np.outer(f["v"][b, t, h], f["k"][b, t, h]) + np.outer(sa, f["b"][b, t, h])
                y[b, t, h] = s @ f["r"][b, t, h]
            out[b, h] = s
    return {"y": y, "state_out": out}
