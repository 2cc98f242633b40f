"""mlx-lm `ssm_kernel`: one decoding step of the Mamba-2 selective state
space update (`ssm_update_kernel`).

One simdgroup per (head, d) row; Ds = 64 state elements, two per lane; the
output is reduced with simd_sum. float16 activations, float32 state;
`fast::exp` (approximate) for the decay. 4 heads in 2 groups (G = 2).
"""
from corpus_lib import *

N, H, HB, DH, DS = 1, 4, 2, 8, 64
WHAT = "Mamba-2 SSM state update for one token (simd_sum over the state)"
FEATURES = ["template", "simd", "half", "metal_math"]
ORIGIN = Origin(
    repo="ml-explore/mlx-lm",
    path="mlx_lm/models/ssm.py",
    commit="73c8550478a39a7a163e9aec9bef6435b4592062",
    license="MIT",
    source=Text(expr=("assign", "source", 0), sha256="e842774bcbd1fb17d081d13caffc1495446ac5bc6ac2ea69433c8ffb6471a0c5"),
)
KERNEL = Kernel(name="ssm_kernel", inputs=["X", "A_log", "B", "C", "D", "dt", "state_in"],
                outputs=["out", "state_out"])
CALL = Call(
    outputs=[("out", "float16", (N, 1, H, DH)), ("state_out", "float32", (N, H, DH, DS))],
    template=[("T", "float16"), ("U", "float32"), ("Dh", DH), ("Ds", DS), ("H", H), ("G", H // HB)],
    grid=(32, DH, H * N),
    threadgroup=(32, 8, 1),
)
RULES = {
    "out": half(atol=1e-2),
    "state_out": close(2e-5, 1e-6, "fast::exp is approximate (a few ulp)"),
}


def make_inputs(rng):
    return {
        "X": rng.normal(size=(N, 1, H, DH)).astype(np.float16),
        "A_log": rng.uniform(-1, 1, size=(H,)).astype(np.float32),
        "B": rng.normal(size=(N, 1, HB, DS)).astype(np.float16),
        "C": rng.normal(size=(N, 1, HB, DS)).astype(np.float16),
        "D": rng.normal(size=(H,)).astype(np.float32),
        "dt": rng.uniform(0.01, 0.5, size=(N, 1, H)).astype(np.float32),
        "state_in": rng.normal(size=(N, H, DH, DS)).astype(np.float32),
    }


def reference(a):
    x = a["X"].astype(np.float64)[:, 0]  # [N, H, Dh]
    Bm = a["B"].astype(np.float64)[:, 0]  # [N, HB, Ds]
    Cm = a["C"].astype(np.float64)[:, 0]
    dt = a["dt"].astype(np.float64)[:, 0]  # [N, H]
    s_in = a["state_in"].astype(np.float64)
    out = np.zeros((N, 1, H, DH))
    s_out = np.zeros_like(s_in)
    G = H // HB
    for n in range(N):
        for h in range(H):
            g = h // G
            dA = np.exp(-np.exp(a["A_log"][h].astype(np.float64)) * dt[n, h])
            s = dA * s_in[n, h] + (x[n, h] * dt[n, h])[:, None] * Bm[n, g][None, :]
            s_out[n, h] = s
            out[n, 0, h] = s @ Cm[n, g] + x[n, h] * a["D"][h]
    return {"out": out, "state_out": s_out}
