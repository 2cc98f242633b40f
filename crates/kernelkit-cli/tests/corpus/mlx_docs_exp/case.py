"""MLX docs, "Custom Metal Kernels", the simple example: exp elementwise.

The docs call it on a float16 (4, 16) array with template T = float32 and
output dtype float16: the body reads half, computes in float, writes half.
"""
from corpus_lib import *

WHAT = "exp elementwise (the docs' first example): half in, T=float, half out"
FEATURES = ["template", "metal_math", "half"]
ORIGIN = Origin(
    repo="ml-explore/mlx",
    path="docs/src/dev/custom_metal_kernels.rst",
    commit="f99e1dc03302d5450e0c6d65d3e33561c6b8e7f0",
    license="MIT",
    source=Text(block=0, expr=("assign", "source", 0),
                sha256="f21bc0c692d9e5a84ccc63513e13694f05a25d61397ca31d6e2dbbd2a407542c"),
)
KERNEL = Kernel(name="myexp", inputs=["inp"], outputs=["out"])
CALL = Call(
    outputs=[("out", "float16", (4, 16))],
    template=[("T", "float32")],
    grid=(64, 1, 1),
    threadgroup=(256, 1, 1),
)
RULES = {"out": half()}


def make_inputs(rng):
    return {"inp": rng.normal(size=(4, 16)).astype(np.float16)}


def reference(x):
    return {"out": np.exp(x["inp"].astype(np.float64))}
