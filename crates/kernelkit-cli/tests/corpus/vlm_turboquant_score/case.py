"""mlx-vlm TurboQuant `turboquant_mse_score`: attention scores against a
KV cache whose keys are stored as Bits-bit codebook indices packed into
uint32 words (codes straddle word boundaries for Bits = 3), one simdgroup
per (query repeat, token), simd_sum, times the stored key norm.

float16 queries and norms (a model's activations), Dim = 64, Bits = 3,
PackedWidth = 6 words; grid (32, R, B * H * T) as `_mse_score` calls it.
"""
from corpus_lib import *

B, H, R, T, DIM, BITS = 1, 2, 2, 3, 64, 3
PW = (DIM * BITS + 31) // 32
WHAT = "KV-cache attention scores from 3-bit packed codebook keys (simd_sum)"
FEATURES = ["template", "simd", "strides", "int_bits", "half"]
ORIGIN = Origin(
    repo="Blaizzy/mlx-vlm",
    path="mlx_vlm/turboquant.py",
    commit="0cdae9754771496a80ac7c4c457762593f5058dd",
    license="MIT",
    source=Text(expr=("assign", "source", 0), sha256="c647e99c427b5507892f443ffd3e9eba6189eb6c274031de9be8a0e0c23e1d30"),
)
KERNEL = Kernel(name="turboquant_mse_score", inputs=["q_rot", "norms", "packed", "codebook"], outputs=["out"])
CALL = Call(outputs=[("out", "float32", (B, H, R, T))],
            template=[("Dim", DIM), ("Bits", BITS), ("PackedWidth", PW)],
            grid=(32, R, B * H * T), threadgroup=(32, 1, 1))
RULES = {"out": close(1e-5, 1e-5, "64-term float32 dot products reduced by simd_sum (order not fixed)")}


def make_inputs(rng):
    codes = rng.integers(0, 2**BITS, size=(B, H, T, DIM))
    words = np.zeros((B, H, T, PW), dtype=np.uint64)
    for d in range(DIM):
        bit = d * BITS
        w, off = bit // 32, bit % 32
        v = codes[..., d].astype(np.uint64) << np.uint64(off)
        words[..., w] |= v & np.uint64(0xFFFFFFFF)
        if off + BITS > 32:
            words[..., w + 1] |= v >> np.uint64(32)
    return {
        "q_rot": rng.normal(size=(B, H, R, DIM)).astype(np.float16),
        "norms": rng.uniform(0.5, 2.0, size=(B, H, T)).astype(np.float16),
        "packed": words.astype(np.uint32),
        "codebook": np.sort(rng.normal(size=(2**BITS,))).astype(np.float32),
    }


def reference(a):
    words = a["packed"].astype(np.uint64)
    codes = np.zeros((B, H, T, DIM), dtype=np.int64)
    for d in range(DIM):
        bit = d * BITS
        w, off = bit // 32, bit % 32
        v = words[..., w] >> np.uint64(off)
        if off + BITS > 32:
            v |= words[..., w + 1] << np.uint64(32 - off)
        codes[..., d] = (v & np.uint64(2**BITS - 1)).astype(np.int64)
    keys = a["codebook"].astype(np.float64)[codes]  # [B, H, T, DIM]
    q = a["q_rot"].astype(np.float64)
    scores = np.einsum("bhrd,bhtd->bhrt", q, keys) * a["norms"].astype(np.float64)[:, :, None, :]
    return {"out": scores}
