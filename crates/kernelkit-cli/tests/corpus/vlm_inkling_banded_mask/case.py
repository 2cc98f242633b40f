"""mlx-vlm Inkling `inkling_banded_mask`: an additive attention mask with a
causal part, a sliding window and a learned relative-position band
(rel @ proj gathered at the query-key distance), as `banded_additive_mask`
calls it (grid rounded up to multiples of 8, early return past the edges).
"""
from corpus_lib import *

B, H, LQ, S, QOFF, DREL, EXT, SLIDING = 1, 2, 4, 10, 6, 4, 5, 8
WHAT = "banded relative-position attention mask (causal + sliding window)"
FEATURES = ["template"]
ORIGIN = Origin(
    repo="Blaizzy/mlx-vlm",
    path="mlx_vlm/models/inkling/language.py",
    commit="4d48691128ea9d89d968c9b8f8669da5e8a02ad2",
    license="MIT",
    source=Text(expr=("assign", "_MASK_SRC", 0), sha256="c0e5d94b24b61bbebc722021032181b14daeee6e0301720ba7dcb328f28d820f"),
)
KERNEL = Kernel(name="inkling_banded_mask", inputs=["rel", "proj"], outputs=["out"])
CALL = Call(
    outputs=[("out", "float32", (B, H, LQ, S))],
    template=[("T", "float32"), ("B", B), ("H", H), ("LQ", LQ), ("S", S), ("Q_OFF", QOFF),
              ("D_REL", DREL), ("REL_EXTENT", EXT), ("SLIDING", SLIDING)],
    grid=(16, 8, B * H),
    threadgroup=(8, 8, 1),
)
RULES = {"out": close(1e-5, 1e-6, "a 4-term float32 dot product (fma contraction may differ)")}


def make_inputs(rng):
    return {
        "rel": rng.normal(size=(B, LQ, H, DREL)).astype(np.float32),
        "proj": rng.normal(size=(DREL, EXT)).astype(np.float32),
    }


def reference(a):
    rl = np.einsum("blhd,de->bhle", a["rel"].astype(np.float64), a["proj"].astype(np.float64))
    out = np.zeros((B, H, LQ, S))
    for i in range(LQ):
        for j in range(S):
            dist = i + QOFF - j
            if dist < 0 or dist >= SLIDING:
                out[:, :, i, j] = -1e30
            elif dist < EXT:
                out[:, :, i, j] = rl[:, :, i, dist]
    return {"out": out}
