"""mlx-vlm Kimi-K3 `attnres_mix`: attention-residual mixing: per token, K
stored residual blocks and the running partial sum are weighted by a
softmax of their (RMS-normalised) projections on w_eff. Per-thread partial
dot products, simd_sum into a threadgroup array, one thread finishing the
softmax into a second threadgroup array, barriers between.

float32, K = 3 blocks, D = 256, N = 2 tokens, THREADS = 512 (more threads
than D: half of them only take part in the reductions).
"""
from corpus_lib import *

K, N, D, THREADS = 3, 2, 256, 512
EPS = 1e-6
WHAT = "softmax-weighted mix of residual blocks (simd_sum + threadgroup reductions)"
FEATURES = ["template", "simd", "barrier", "threadgroup", "metal_math", "scalar_input"]
ORIGIN = Origin(
    repo="Blaizzy/mlx-vlm",
    path="mlx_vlm/models/kimi_k3/language.py",
    commit="1551c71f35e1f75a1d4e0737b4d71faccec8e455",
    license="MIT",
    source=Text(expr=("assign", "_ATTN_RES_SOURCE", 0), sha256="99afa53b5d5000a9d1bd025de5ef3367451076ed4717c84d1c0296c50fc4680e"),
)
KERNEL = Kernel(name="attnres_mix", inputs=["raw", "inv_rms", "partial", "w_eff", "eps", "N"],
                outputs=["out"])
CALL = Call(
    outputs=[("out", "float32", (1, N, D))],
    template=[("InT", "float32"), ("K", K), ("D", D), ("THREADS", THREADS)],
    grid=(THREADS, N, 1),
    threadgroup=(THREADS, 1, 1),
)
RULES = {"out": close(1e-5, 1e-6, "256-term dot products reduced by simd_sum, exp and rsqrt")}


def make_inputs(rng):
    raw = rng.normal(size=(K, 1, N, D)).astype(np.float32)
    inv_rms = (1 / np.sqrt((raw.astype(np.float64) ** 2).mean(-1) + EPS)).astype(np.float32)
    return {
        "raw": raw,
        "inv_rms": inv_rms,  # [K, 1, N], as ResidualBlocks.append builds it
        "partial": rng.normal(size=(1, N, D)).astype(np.float32),
        "w_eff": (rng.normal(size=(D,)) / 16).astype(np.float32),
        "eps": np.array([EPS], dtype=np.float32),
        "N": np.array(N, dtype=np.int32),
    }


def reference(a):
    raw = a["raw"].astype(np.float64).reshape(K, N, D)
    inv = a["inv_rms"].astype(np.float64).reshape(K, N)
    p = a["partial"].astype(np.float64).reshape(N, D)
    w = a["w_eff"].astype(np.float64)
    eps = float(a["eps"][0])
    logits = np.concatenate([(raw @ w) * inv, ((p @ w) / np.sqrt((p * p).mean(-1) + eps))[None]])
    e = np.exp(logits - logits.max(0))
    sm = e / e.sum(0)
    out = (sm[:K, :, None] * raw).sum(0) + sm[K][:, None] * p
    return {"out": out[None]}
