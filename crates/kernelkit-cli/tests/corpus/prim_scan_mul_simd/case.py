"""mlx-primitives `associative_scan_mul_batched_simd`: a batched inclusive
cumprod by simd_shuffle_up doubling, a threadgroup array of warp totals, and
a second shuffle scan run by the first simdgroup's lanes below num_warps
only (2 of 32 here): simd_shuffle_up with most lanes inactive.

The call `metal_associative_scan(x, "mul")` makes for seq_len = 40: block
64, grid (64, batch, 1). Inputs are +-1, +-2, +-0.5 so products are exact.
"""
from corpus_lib import *

BATCH, SEQ, BLOCK = 2, 40, 64
WHAT = "batched cumprod: simd_shuffle_up scan, second scan on 2 active lanes"
FEATURES = ["simd", "barrier", "threadgroup"]
ORIGIN = Origin(
    repo="zakkeown/mlx-primitives",
    path="mlx_primitives/primitives/_metal/scan_kernels.py",
    commit="bf2b118f0adb651bca31647733b99a72ab2b7042",
    license="MIT",
    source=Text(expr=("assign", "source", 1), sha256="377a70b95cc32536264dcf832af445a4991c1cdbe5556abbf81b30e3c3204f43"),
)
KERNEL = Kernel(name="associative_scan_mul_batched_simd", inputs=["input", "seq_len", "batch_size"],
                outputs=["output"])
CALL = Call(outputs=[("output", "float32", (BATCH, SEQ))], grid=(BLOCK, BATCH, 1), threadgroup=(BLOCK, 1, 1))
RULES = {"output": ulp(0)}


def make_inputs(rng):
    vals = np.array([1.0, -1.0, 2.0, -2.0, 0.5, -0.5], dtype=np.float32)
    return {
        "input": rng.choice(vals, size=(BATCH, SEQ)),
        "seq_len": np.array([SEQ], dtype=np.uint32),
        "batch_size": np.array([BATCH], dtype=np.uint32),
    }


def reference(a):
    return {"output": np.cumprod(a["input"].astype(np.float64), axis=1)}
