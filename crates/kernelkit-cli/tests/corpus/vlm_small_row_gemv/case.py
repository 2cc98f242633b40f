"""mlx-vlm Nemotron `nemotron_small_row_gemv`: a skinny matrix product for a
few rows, one simdgroup per (4 outputs, row): each lane accumulates 4 x 4
products, then a simd_shuffle_down tree (ushort offsets). The header
includes <metal_simdgroup> and says `using namespace metal;`.

float16 as the model calls it; K = 200 (one full block of 128 and a tail
of 72: the guarded leftover path), O = 8, R = 3 rows padded to 8 in the
grid, threadgroup (32, 1, 8): the z-threads past R return at once.
"""
from corpus_lib import *

R, K, O = 3, 200, 8
WHAT = "small-row GEMV with a simd_shuffle_down reduction tree (float16)"
FEATURES = ["template", "simd", "header", "half"]
ORIGIN = Origin(
    repo="Blaizzy/mlx-vlm",
    path="mlx_vlm/models/nemotron_labs_diffusion/language.py",
    commit="29b6c00b270a0acafc668bc7adc85cf6102b6ea7",
    license="MIT",
    source=Text(expr=("kwarg", "source", 1), sha256="9d283d2f93b6dc75ce41d4b82096e184b13a71d47ba4ddd3ef414f1d04945b6c"),
    header=Text(expr=("kwarg", "header", 1), sha256="610d60125485f2d94402da8336d6596d00781d61224a3ca53a1e6b7277fdb198"),
)
KERNEL = Kernel(name="nemotron_small_row_gemv", inputs=["x", "weight"], outputs=["out"])
CALL = Call(outputs=[("out", "float16", (R, O))], template=[("T", "float16"), ("K", K), ("O", O), ("R", R)],
            grid=(32, O // 4, 8), threadgroup=(32, 1, 8))
RULES = {"out": half(atol=1e-2)}


def make_inputs(rng):
    return {
        "x": rng.normal(size=(R, K)).astype(np.float16),
        "weight": (rng.normal(size=(O, K)) / 8).astype(np.float16),
    }


def reference(a):
    return {"out": a["x"].astype(np.float64) @ a["weight"].astype(np.float64).T}
