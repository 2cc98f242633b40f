"""mlx-vlm DeepSeek-V4 `hc_sinkhorn_collapse`: hyper-connection weights by
Sinkhorn normalisation of a 4 x 4 matrix on simdgroup 0 (float4 rows,
column sums with simd_sum, inactive lanes masked by multiplication), then
a collapse of the 4 residual streams with `vec<T, 4>` loads, float4 `fma`,
`U4(result)` conversion, pointer casts to float4 / T4, a threadgroup array
and a barrier; a `#if (D % 4) != 0` tail (compiled out: D is not a macro).

bfloat16 x (as the model calls it, T = U = x.dtype), HC = 4, D = 64,
ITERS = 3, EPS_INT = round(1e-6 / 1e-9) = 1000.
"""
from corpus_lib import *

B, L, HC, D, ITERS, EPS_INT = 1, 2, 4, 64, 3, 1000
EPS = np.float32(EPS_INT * 1e-9)
MIX = (2 + HC) * HC
WHAT = "Sinkhorn-normalised hyper-connection mixing + 4-stream collapse (bfloat4/float4)"
FEATURES = ["template", "simd", "barrier", "threadgroup", "vector", "bfloat", "metal_math"]
ORIGIN = Origin(
    repo="Blaizzy/mlx-vlm",
    path="mlx_vlm/models/deepseek_v4/hyper_connection.py",
    commit="72b97db4e844f4090136c822374381769dde2513",
    license="MIT",
    source=Text(expr=("assign", "source", 0), sha256="8120654ab4f6428d8ebc4749bfbc4d4400976a6c86edc46346116d414064da7a"),
)
KERNEL = Kernel(name="hc_sinkhorn_collapse", inputs=["x_in", "mixes", "scale", "base"],
                outputs=["collapsed", "post", "comb"])
CALL = Call(
    outputs=[("collapsed", "bfloat16", (B, L, D)), ("post", "float32", (B, L, HC)),
             ("comb", "float32", (B, L, HC, HC))],
    template=[("T", "bfloat16"), ("U", "bfloat16"), ("HC", HC), ("ITERS", ITERS), ("D", D),
              ("EPS_INT", EPS_INT)],
    grid=(B * L * 256, 1, 1),
    threadgroup=(256, 1, 1),
)
WHY = "fast::exp and sums of four (simd_sum) terms"
RULES = {"collapsed": half(atol=1e-2), "post": close(1e-5, 1e-6, WHY), "comb": close(1e-5, 1e-6, WHY)}


def make_inputs(rng):
    return {
        "x_in": bf16(rng.normal(size=(B, L, HC, D))),
        "mixes": rng.normal(size=(B, L, MIX)).astype(np.float32),
        "scale": np.array([0.5, 0.8, 1.2], dtype=np.float32),
        "base": (rng.normal(size=(MIX,)) * 0.2).astype(np.float32),
    }


def reference(a):
    eps = float(EPS)
    mix = a["mixes"].astype(np.float64)
    s = a["scale"].astype(np.float64)
    base = a["base"].astype(np.float64)
    sig = lambda z: 1 / (1 + np.exp(-z))
    pre = sig(mix[..., :HC] * s[0] + base[:HC]) + eps
    post = 2 * sig(mix[..., HC:2 * HC] * s[1] + base[HC:2 * HC])
    v = mix[..., 2 * HC:].reshape(B, L, HC, HC) * s[2] + base[2 * HC:].reshape(HC, HC)
    e = np.exp(v - v.max(-1, keepdims=True))
    r = e / (e.sum(-1, keepdims=True) + eps) + eps
    r = r / (r.sum(-2, keepdims=True) + eps)
    for _ in range(ITERS - 1):
        r = r / (r.sum(-1, keepdims=True) + eps)
        r = r / (r.sum(-2, keepdims=True) + eps)
    x = a["x_in"].astype(np.float64)
    collapsed = (pre[..., None] * x).sum(axis=2)
    return {"collapsed": collapsed, "post": post, "comb": r}
