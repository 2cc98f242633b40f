"""MLX docs, "Using Shape/Strides": exp on a strided view through elem_to_loc.

As in the docs: a float16 (4, 16) array sliced `a[::2]` (a (2, 16) view with
row stride 32), `ensure_row_contiguous=False`, T = float32, output float16.
"""
from corpus_lib import *

WHAT = "exp of a strided (a[::2]) view read through elem_to_loc"
FEATURES = ["template", "strides", "metal_math", "half"]
ORIGIN = Origin(
    repo="ml-explore/mlx",
    path="docs/src/dev/custom_metal_kernels.rst",
    commit="f99e1dc03302d5450e0c6d65d3e33561c6b8e7f0",
    license="MIT",
    source=Text(block=2, expr=("assign", "source", 0),
                sha256="b2d0cbf5570293b566bbde7a40b9a37c3836fff437fd5e145aa2f8dfac064b75"),
)
KERNEL = Kernel(name="myexp_strided", inputs=["inp"], outputs=["out"],
                ensure_row_contiguous=False)
CALL = Call(
    outputs=[("out", "float16", (2, 16))],
    template=[("T", "float32")],
    grid=(32, 1, 1),
    threadgroup=(256, 1, 1),
    views={"inp": {"slice": [[0, 4, 2]]}},
)
RULES = {"out": half()}


def make_inputs(rng):
    return {"inp": rng.normal(size=(4, 16)).astype(np.float16)}


def reference(x):
    return {"out": np.exp(x["inp"][::2].astype(np.float64))}
