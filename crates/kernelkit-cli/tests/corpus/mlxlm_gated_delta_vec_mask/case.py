"""mlx-lm `gated_delta_step_vec_mask`: the gated delta rule with a gate per
key dimension and a per-step mask (padding).

The variant `_gated_delta_kernel_vec_masked` (has_mask=True,
vectorized=True): env holds the strings `_make_gated_delta_kernel` builds
for those arguments. float32 throughout; a bool mask input. Where the mask
is false the step writes y = 0 and leaves the state alone.
"""
from corpus_lib import *

B, T, HK, HV, DK, DV = 2, 3, 1, 2, 32, 4
WHAT = "gated delta rule, scalar gate and a bool step mask"
FEATURES = ["template", "simd", "scalar_input"]
ORIGIN = Origin(
    repo="ml-explore/mlx-lm",
    path="mlx_lm/models/gated_delta.py",
    commit="655476e87793729a68867fee6995affda1229889",
    license="MIT",
    source=Text(expr=("assign", "source", 0), sha256="0b9f8062e51fb7e691c489f4fb5cfabc2235351db58507f548c9e4f83e16a828", env={
        "mask_source": "mask[b_idx * T + t]",
    }),
)
KERNEL = Kernel(name="gated_delta_step_vec_mask",
                inputs=["q", "k", "v", "g", "beta", "state_in", "T", "mask"],
                outputs=["y", "state_out"])
CALL = Call(
    outputs=[("y", "float32", (B, T, HV, DV)), ("state_out", "float32", (B, HV, DV, DK))],
    template=[("InT", "float32"), ("StT", "float32"), ("Dk", DK), ("Dv", DV), ("Hk", HK), ("Hv", HV)],
    grid=(32, DV, B * HV),
    threadgroup=(32, 4, 1),
    init_value=0.0,
)
WHY = "float32 dot products over Dk reduced with simd_sum (order not fixed)"
RULES = {"y": close(1e-4, 1e-5, WHY), "state_out": close(1e-4, 1e-5, WHY)}


def make_inputs(rng):
    f = np.float32
    return {
        "q": (rng.normal(size=(B, T, HK, DK)) / 6).astype(f),
        "k": (rng.normal(size=(B, T, HK, DK)) / 6).astype(f),
        "v": rng.normal(size=(B, T, HV, DV)).astype(f),
        "g": rng.uniform(0.5, 1.0, size=(B, T, HV)).astype(f),
        "beta": rng.uniform(0.0, 1.0, size=(B, T, HV)).astype(f),
        "state_in": rng.normal(size=(B, HV, DV, DK)).astype(f),
        "T": np.array(T, dtype=np.int32),
        "mask": np.array([[True, False, True], [True, True, False]]),
    }


def reference(a):
    f = {n: a[n].astype(np.float64) for n in ("q", "k", "v", "g", "beta", "state_in")}
    y = np.zeros((B, T, HV, DV))
    out = np.zeros((B, HV, DV, DK))
    for b in range(B):
        for hv in range(HV):
            hk = hv // (HV // HK)
            s = f["state_in"][b, hv].copy()
            for t in range(T):
                if not a["mask"][b, t]:
                    continue  # y stays 0, the state is kept
                kk, qq = f["k"][b, t, hk], f["q"][b, t, hk]
                s = s * f["g"][b, t, hv]
                delta = (f["v"][b, t, hv] - s @ kk) * f["beta"][b, t, hv]
                s = s + np.outer(delta, kk)
                y[b, t, hv] = s @ qq
            out[b, hv] = s
    return {"y": y, "state_out": out}
