"""mlx-lm `gated_delta_step`: the gated delta rule recurrence (Qwen3-Next).

The source is an f-string; this entry is the variant `_gated_delta_kernel`
(has_mask=False, vectorized=False), so the names it interpolates take the
values `_make_gated_delta_kernel` gives them for those arguments (env).
bfloat16 inputs and output, float32 state; Dk = 64 (two state elements per
lane), Hv = 2 value heads sharing Hk = 1 key head.

The body writes the state through `static_cast<InT>(state[i])` (InT =
bfloat16) into the float32 `state_out`: the reference rounds the final
state to bfloat16 the same way (an earlier reference did not, and no
Metal-faithful backend could match it).
"""
from corpus_lib import *

B, T, HK, HV, DK, DV = 1, 3, 1, 2, 64, 8
WHAT = "gated delta rule recurrence, scalar gate (Qwen3-Next linear attention)"
FEATURES = ["template", "simd", "bfloat", "scalar_input"]
ORIGIN = Origin(
    repo="ml-explore/mlx-lm",
    path="mlx_lm/models/gated_delta.py",
    commit="655476e87793729a68867fee6995affda1229889",
    license="MIT",
    source=Text(expr=("assign", "source", 0), sha256="c0456debdba84bd8b1e43b0f72e970cf4d2bd3e4332332c37adf1f9478d19419", env={
        "mask_source": "true",
        "g_comment": "// g: [B, T, Hv]",
        "g_setup": "auto g_ = g + b_idx * T * Hv;",
        "g_access": "g_[hv_idx]",
        "g_advance": "g_ += Hv;",
    }),
)
KERNEL = Kernel(name="gated_delta_step", inputs=["q", "k", "v", "g", "beta", "state_in", "T"],
                outputs=["y", "state_out"])
CALL = Call(
    outputs=[("y", "bfloat16", (B, T, HV, DV)), ("state_out", "float32", (B, HV, DV, DK))],
    template=[("InT", "bfloat16"), ("StT", "float32"), ("Dk", DK), ("Dv", DV), ("Hk", HK), ("Hv", HV)],
    grid=(32, DV, B * HV),
    threadgroup=(32, 4, 1),
)
RULES = {
    "y": half(atol=2e-2),
    "state_out": close(1e-4, 1e-5, "float32 dot products over Dk reduced with simd_sum (order not fixed)"),
}


def make_inputs(rng):
    q = rng.normal(size=(B, T, HK, DK)) / 8
    k = rng.normal(size=(B, T, HK, DK)) / 8
    v = rng.normal(size=(B, T, HV, DV))
    g = rng.uniform(0.5, 1.0, size=(B, T, HV))
    beta = rng.uniform(0.0, 1.0, size=(B, T, HV))
    state = rng.normal(size=(B, HV, DV, DK)).astype(np.float32)
    return {"q": bf16(q), "k": bf16(k), "v": bf16(v), "g": bf16(g), "beta": bf16(beta),
            "state_in": state, "T": np.array(T, dtype=np.int32)}


def reference(a):
    f = {n: a[n].astype(np.float64) for n in ("q", "k", "v", "g", "beta", "state_in")}
    y = np.zeros((B, T, HV, DV))
    out = np.zeros((B, HV, DV, DK))
    for b in range(B):
        for hv in range(HV):
            hk = hv // (HV // HK)
            s = f["state_in"][b, hv].copy()  # [Dv, Dk]
            for t in range(T):
                kk, qq = f["k"][b, t, hk], f["q"][b, t, hk]
                s = s * f["g"][b, t, hv]
                delta = (f["v"][b, t, hv] - s @ kk) * f["beta"][b, t, hv]
                s = s + np.outer(delta, kk)
                y[b, t, hv] = s @ qq
            out[b, hv] = s
    # o_state[s_idx] = static_cast<InT>(state[i]): rounded to bfloat16.
    out = bf16(out).astype(np.float64)
    return {"y": y, "state_out": out}
