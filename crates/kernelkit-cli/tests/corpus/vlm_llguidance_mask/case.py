"""mlx-vlm `mlx_vlm_llguidance_mask`: constrained decoding, logits whose
token bit is clear in a packed int32 bitmask become -inf.

`as_type<uint>` on an int, `metal::numeric_limits<T>::infinity()`, shapes
from `mask_shape` / `logits_shape`. float16 logits, vocabulary 100 (not a
multiple of 32: the last word is partly used); grid (100, 2, 1) with a
256-thread threadgroup, as `_apply_llguidance_mask` calls it.
"""
from corpus_lib import *

BATCH, VOCAB = 2, 100
WORDS = (VOCAB + 31) // 32
WHAT = "grammar-constrained decoding: -inf where a packed bitmask bit is 0"
FEATURES = ["template", "strides", "int_bits", "half"]
ORIGIN = Origin(
    repo="Blaizzy/mlx-vlm",
    path="mlx_vlm/structured.py",
    commit="6d5603b36902e0742a8273f0b0e6fa4a60d2a201",
    license="MIT",
    source=Text(expr=("kwarg", "source", 0), sha256="5eb7a52292f003e39431e51f11d088a925248d5fb40c2bafca2c457704fb2526"),
)
KERNEL = Kernel(name="mlx_vlm_llguidance_mask", inputs=["logits", "mask"], outputs=["out"])
CALL = Call(
    outputs=[("out", "float16", (BATCH, VOCAB))],
    template=[("T", "float16")],
    grid=(VOCAB, BATCH, 1),
    threadgroup=(256, 1, 1),
)
RULES = {"out": exact()}


def make_inputs(rng):
    bits = rng.integers(0, 2**32, size=(BATCH, WORDS), dtype=np.uint64).astype(np.uint32)
    bits[0, 0] = 0xFFFFFFFF  # a word with every bit set (-1 as int32)
    return {
        "logits": rng.normal(size=(BATCH, VOCAB)).astype(np.float16),
        "mask": bits.view(np.int32),
    }


def reference(a):
    words = a["mask"].view(np.uint32).astype(np.uint64)
    tok = np.arange(VOCAB)
    allowed = (words[:, tok >> 5] >> (tok & 31).astype(np.uint64)) & 1
    return {"out": np.where(allowed == 1, a["logits"], np.float16(-np.inf))}
