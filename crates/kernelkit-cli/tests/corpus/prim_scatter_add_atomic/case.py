"""mlx-primitives `selective_scatter_add`: weighted scatter-add of token
rows into an output by index (MoE combine), with float atomics reached
through a pointer cast `(device atomic_float*)&output[...]` (no
atomic_outputs), init_value = 0. Indices repeat, so several threads add to
one element in an order that is not fixed.
"""
from corpus_lib import *

CAP, DIM, NTOK = 12, 8, 5
WHAT = "weighted scatter-add with atomic_float through a pointer cast"
FEATURES = ["atomic", "init_value"]
ORIGIN = Origin(
    repo="zakkeown/mlx-primitives",
    path="mlx_primitives/primitives/gather_scatter.py",
    commit="3268ecc15cbd1f29535897838c196c4b4e1ab377",
    license="MIT",
    source=Text(expr=("assign", "source", 1), sha256="53e189b3e2349ca0c02578c196e90331213245e24a4ac9a9ef156916b694384b"),
)
KERNEL = Kernel(name="selective_scatter_add",
                inputs=["values", "indices", "weights", "capacity", "dim", "n_tokens"],
                outputs=["output"])
CALL = Call(outputs=[("output", "float32", (NTOK, DIM))], grid=(CAP, DIM, 1),
            threadgroup=(min(CAP, 32), min(DIM, 32), 1), init_value=0.0)
RULES = {"output": close(1e-6, 1e-6, "float atomic adds in any order")}


def make_inputs(rng):
    u32 = lambda v: np.array([v], dtype=np.uint32)
    return {
        "values": rng.normal(size=(CAP, DIM)).astype(np.float32),
        "indices": rng.integers(0, NTOK, size=(CAP,)).astype(np.uint32),
        "weights": rng.uniform(0, 1, size=(CAP,)).astype(np.float32),
        "capacity": u32(CAP), "dim": u32(DIM), "n_tokens": u32(NTOK),
    }


def reference(a):
    out = np.zeros((NTOK, DIM))
    # each product is rounded to float32 in the body before the atomic add
    prod = (a["values"] * a["weights"][:, None]).astype(np.float64)
    np.add.at(out, a["indices"].astype(np.int64), prod)
    return {"output": out}
