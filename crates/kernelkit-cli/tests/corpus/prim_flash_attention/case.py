"""mlx-primitives `flash_attention`: single-pass online-softmax attention,
one thread per (query, head, batch), causal. Scalar parameters arrive as
one-element arrays.

The source is `<triple-quoted literal>`.replace("SOFTMAX_EPS", str(METAL_SOFTMAX_EPSILON))
with METAL_SOFTMAX_EPSILON = 1e-6 (mlx_primitives/constants.py), so the
body has `1e-06f`. The call is `_metal_flash_attention` with
scale = 1/sqrt(head_dim).
"""
import math

from corpus_lib import *

B, S, H, D = 1, 6, 2, 16
SCALE = 1 / math.sqrt(D)
WHAT = "causal attention with an online softmax, one thread per query row"
FEATURES = ["metal_math"]
ORIGIN = Origin(
    repo="zakkeown/mlx-primitives",
    path="mlx_primitives/attention/flash.py",
    commit="4f5b4ec3d744eb64c5f4481621767437eb254539",
    license="MIT",
    source=Text(expr=("assign", "source", 0), sha256="737da6894e735c945c778e78f2729f3bbe193948ae6c3f27e7bf2d7fbffe9838",
                env={"METAL_SOFTMAX_EPSILON": 1e-6, "str": str}),
)
KERNEL = Kernel(name="flash_attention",
                inputs=["Q", "K", "V", "batch_size", "seq_len", "num_heads", "head_dim", "causal", "scale"],
                outputs=["O"])
CALL = Call(outputs=[("O", "float32", (B, S, H, D))], grid=(S, H, B), threadgroup=(1, 1, 1))
RULES = {"O": close(1e-5, 1e-6, "exp and 16-term dot products in float32")}


def make_inputs(rng):
    u32 = lambda v: np.array([v], dtype=np.uint32)
    return {
        "Q": rng.normal(size=(B, S, H, D)).astype(np.float32),
        "K": rng.normal(size=(B, S, H, D)).astype(np.float32),
        "V": rng.normal(size=(B, S, H, D)).astype(np.float32),
        "batch_size": u32(B), "seq_len": u32(S), "num_heads": u32(H), "head_dim": u32(D),
        "causal": u32(1),
        "scale": np.array([SCALE], dtype=np.float32),
    }


def reference(a):
    q, k, v = (a[n].astype(np.float64) for n in ("Q", "K", "V"))
    scores = np.einsum("bqhd,bkhd->bhqk", q, k) * float(a["scale"][0])
    scores = np.where(np.tril(np.ones((S, S), bool)), scores, -np.inf)
    w = np.exp(scores - scores.max(-1, keepdims=True))
    # the body divides by (sum + 1e-6), the sum taken relative to the row max
    o = np.einsum("bhqk,bkhd->bqhd", w, v) / (w.sum(-1) + 1e-6).transpose(0, 2, 1)[..., None]
    return {"O": o}
