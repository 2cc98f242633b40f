"""mlx-atomistic `neighbor_pair_cutoff_mask`: which candidate pairs lie
within the search radius under the minimum image: a bool output.

As `neighbor_pair_cutoff_mask` (metal_kernels.py) calls it: params =
[radius^2], counts = [pair count], threadgroup min(256, pairs). Positions
are drawn so that no pair is within 1e-3 of the radius (the answer does not
depend on rounding).
"""
from corpus_lib import *

N, L, R = 12, 4.0, 1.6
PAIRS = [(i, j) for i in range(N) for j in range(i + 1, N)]
WHAT = "neighbour-list cutoff test with the minimum image, bool output"
FEATURES = ["metal_math"]
ORIGIN = Origin(
    repo="appautomaton/mlx-atomistic",
    path="src/mlx_atomistic/metal_kernels.py",
    commit="acd05c6dcdd6b81c8997040ba80c9f5ec755db09",
    license="MIT",
    source=Text(expr=("assign", "_NEIGHBOR_PAIR_CUTOFF_MASK_SOURCE", 0), sha256="3b65e3bd1b2c875d33bb217dff874a3aa2564117f84c221225053c880a06d70e"),
)
KERNEL = Kernel(name="neighbor_pair_cutoff_mask", inputs=["positions", "pairs_i", "pairs_j", "box", "params", "counts"],
                outputs=["close"])
CALL = Call(outputs=[("close", "bool", (len(PAIRS),))], grid=(len(PAIRS), 1, 1),
            threadgroup=(min(256, len(PAIRS)), 1, 1))
RULES = {"close": exact()}


def dist2(pos):
    out = []
    for i, j in PAIRS:
        d = pos[i] - pos[j]
        d -= L * np.round(d / L)
        out.append(d @ d)
    return np.array(out)


def make_inputs(rng):
    while True:
        pos = rng.uniform(0, L, size=(N, 3)).astype(np.float32)
        if np.all(np.abs(dist2(pos.astype(np.float64)) - R * R) > 1e-3):
            break
    p = np.array(PAIRS, dtype=np.int32)
    return {
        "positions": pos,
        "pairs_i": p[:, 0].copy(),
        "pairs_j": p[:, 1].copy(),
        "box": np.array([L, L, L], dtype=np.float32),
        "params": np.array([R * R], dtype=np.float32),
        "counts": np.array([len(PAIRS)], dtype=np.int32),
    }


def reference(a):
    return {"close": dist2(a["positions"].astype(np.float64)) < float(a["params"][0])}
