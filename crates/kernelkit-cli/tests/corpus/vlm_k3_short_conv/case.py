"""mlx-vlm Kimi-K3 `k3_short_conv_step`: one decoding step of a depthwise
causal 1-D convolution with SiLU, and the shifted convolution state.

bfloat16 throughout (the model's dtype): KS = 4, C = 64 channels, B = 2;
grid (C, B, 1), threadgroup (min(1024, C), 1, 1) as `ShortConv1d` calls it.
"""
from corpus_lib import *

B, C, KS = 2, 64, 4
WHAT = "depthwise causal conv1d decode step + SiLU, state shift (bfloat16)"
FEATURES = ["template", "bfloat", "metal_math"]
ORIGIN = Origin(
    repo="Blaizzy/mlx-vlm",
    path="mlx_vlm/models/kimi_k3/language.py",
    commit="1551c71f35e1f75a1d4e0737b4d71faccec8e455",
    license="MIT",
    source=Text(expr=("assign", "_SHORT_CONV_SOURCE", 0), sha256="acbe5b0b678fefa058b1f524b2908295f9446fdbe1d3db89c538a4460854671c"),
)
KERNEL = Kernel(name="k3_short_conv_step", inputs=["x", "state", "w"], outputs=["y", "new_state"])
CALL = Call(
    outputs=[("y", "bfloat16", (B, 1, C)), ("new_state", "bfloat16", (B, KS - 1, C))],
    template=[("T", "bfloat16"), ("C", C), ("KS", KS)],
    grid=(C, B, 1),
    threadgroup=(C, 1, 1),
)
RULES = {"y": half(atol=1e-2), "new_state": exact()}


def make_inputs(rng):
    return {
        "x": bf16(rng.normal(size=(B, 1, C))),
        "state": bf16(rng.normal(size=(B, KS - 1, C))),
        "w": bf16(rng.normal(size=(C, 1, KS)) * 0.5),  # read as w[c * KS + j]
    }


def reference(a):
    w = a["w"].astype(np.float64).reshape(C, KS)
    s = a["state"].astype(np.float64)
    x = a["x"].astype(np.float64)[:, 0]
    v = (w[None, :, : KS - 1] * s.transpose(0, 2, 1)).sum(-1) + w[None, :, KS - 1] * x
    y = v / (1 + np.exp(-v))
    new_state = np.concatenate([a["state"][:, 1:], a["x"]], axis=1)
    return {"y": y[:, None, :], "new_state": new_state}
