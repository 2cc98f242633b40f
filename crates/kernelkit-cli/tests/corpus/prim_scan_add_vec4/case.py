"""mlx-primitives `associative_scan_add_vectorized`: a batched inclusive
cumsum, four elements per thread in a float4, simd_prefix_inclusive_sum
across the chunk totals, and simd_prefix_exclusive_sum over the warp totals
by the first simdgroup's lanes below num_warps only (2 of 32 lanes here).

The call `metal_associative_scan(x)` makes for seq_len = 200 (>= 64:
vectorized; 50 chunks -> block 64): grid (64, batch, 1), threadgroup 64.
Inputs are small integers, so every partial sum is exact.
"""
from corpus_lib import *

BATCH, SEQ, BLOCK = 3, 200, 64
WHAT = "batched cumsum: float4 chunks + simd_prefix_inclusive/exclusive_sum (partial lanes)"
FEATURES = ["vector", "simd", "barrier", "threadgroup"]
ORIGIN = Origin(
    repo="zakkeown/mlx-primitives",
    path="mlx_primitives/primitives/_metal/scan_kernels.py",
    commit="bf2b118f0adb651bca31647733b99a72ab2b7042",
    license="MIT",
    source=Text(expr=("assign", "source", 4), sha256="5647795b920ecc1fffc562eae609550bbedbc393a6b30a50bcee036249ee92d8"),
)
KERNEL = Kernel(name="associative_scan_add_vectorized", inputs=["input", "seq_len", "batch_size"],
                outputs=["output"])
CALL = Call(outputs=[("output", "float32", (BATCH, SEQ))], grid=(BLOCK, BATCH, 1), threadgroup=(BLOCK, 1, 1))
RULES = {"output": ulp(0)}


def make_inputs(rng):
    return {
        "input": rng.integers(-8, 9, size=(BATCH, SEQ)).astype(np.float32),
        "seq_len": np.array([SEQ], dtype=np.uint32),
        "batch_size": np.array([BATCH], dtype=np.uint32),
    }


def reference(a):
    return {"output": np.cumsum(a["input"].astype(np.float64), axis=1)}
