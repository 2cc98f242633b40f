"""mlx-primitives `associative_scan_add`: a Blelloch (up-sweep/down-sweep)
inclusive scan in a padded threadgroup array, a barrier per level, and a
`#define` inside the body.

The library keeps this kernel as its bank-conflict-free fallback; its
current dispatcher no longer selects it, so the call is the one the body is
written for: one threadgroup of a power-of-two size >= seq_len (128 for
100 elements). Small integer inputs: every partial sum is exact.
"""
from corpus_lib import *

SEQ, BLOCK = 100, 128
WHAT = "Blelloch work-efficient scan in threadgroup memory (log-depth barriers)"
FEATURES = ["barrier", "threadgroup"]
ORIGIN = Origin(
    repo="zakkeown/mlx-primitives",
    path="mlx_primitives/primitives/_metal/scan_kernels.py",
    commit="bf2b118f0adb651bca31647733b99a72ab2b7042",
    license="MIT",
    source=Text(expr=("assign", "source", 6), sha256="532641d0fb63e135e99ea13ac9af78b73a184f7e5b302aac66f9df19bebd255a"),
)
KERNEL = Kernel(name="associative_scan_add", inputs=["input", "seq_len"], outputs=["output"])
CALL = Call(outputs=[("output", "float32", (SEQ,))], grid=(BLOCK, 1, 1), threadgroup=(BLOCK, 1, 1))
RULES = {"output": ulp(0)}


def make_inputs(rng):
    return {
        "input": rng.integers(-8, 9, size=(SEQ,)).astype(np.float32),
        "seq_len": np.array([SEQ], dtype=np.uint32),
    }


def reference(a):
    return {"output": np.cumsum(a["input"].astype(np.float64))}
