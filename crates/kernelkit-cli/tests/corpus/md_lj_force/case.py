"""mlx-atomistic `fused_lj_force`: truncated-and-shifted Lennard-Jones pair
forces with the orthorhombic minimum image (`rint`), accumulated with
float atomics into `forces` (atomic_outputs) and one `atomic_store_explicit`
per pair energy; init_value = 0.

As `fused_lj_forces` calls it: 8 atoms near the sites of a 2 x 2 x 2
lattice (spacing 1.5) in a periodic box of 3, all 28 pairs, sigma = 1,
epsilon = 1, cutoff 2.5 with the energy shift; threadgroup = pair count.
"""
from corpus_lib import *

N, L, SIG, EPS, CUT = 8, 3.0, 1.0, 1.0, 2.5
PAIRS = [(i, j) for i in range(N) for j in range(i + 1, N)]
WHAT = "Lennard-Jones pair forces, minimum image, float atomics (molecular dynamics)"
FEATURES = ["atomic", "init_value", "metal_math"]
ORIGIN = Origin(
    repo="appautomaton/mlx-atomistic",
    path="src/mlx_atomistic/metal_kernels.py",
    commit="acd05c6dcdd6b81c8997040ba80c9f5ec755db09",
    license="MIT",
    source=Text(expr=("assign", "_LJ_FORCE_SOURCE", 0), sha256="5c227ecfb28a94946582b1c2a790d3784284121cd3d2e08c6a40f3650c696abb"),
)
KERNEL = Kernel(name="fused_lj_force", inputs=["positions", "pairs_i", "pairs_j", "box", "params", "npair"],
                outputs=["forces", "pair_energy"], atomic_outputs=True)
CALL = Call(outputs=[("forces", "float32", (N, 3)), ("pair_energy", "float32", (len(PAIRS),))],
            grid=(len(PAIRS), 1, 1), threadgroup=(len(PAIRS), 1, 1), init_value=0.0)
WHY = "float32 LJ terms (12th powers) against a float64 reference; forces summed by atomics in any order"
RULES = {"forces": close(1e-4, 1e-4, WHY), "pair_energy": close(1e-4, 1e-5, WHY)}


def shift():
    s = SIG * SIG / (CUT * CUT)
    return 4 * EPS * (s**6 - s**3)


def make_inputs(rng):
    sites = np.array([[x, y, z] for x in (0, 1) for y in (0, 1) for z in (0, 1)]) * 1.5 + 0.75
    pos = sites + rng.uniform(-0.2, 0.2, size=(N, 3))
    p = np.array(PAIRS, dtype=np.int32)
    return {
        "positions": pos.astype(np.float32),
        "pairs_i": p[:, 0].copy(),
        "pairs_j": p[:, 1].copy(),
        "box": np.array([L, L, L], dtype=np.float32),
        "params": np.array([EPS, SIG * SIG, CUT * CUT, shift()], dtype=np.float32),
        "npair": np.array([len(PAIRS)], dtype=np.int32),
    }


def reference(a):
    pos = a["positions"].astype(np.float64)
    forces = np.zeros((N, 3))
    energy = np.zeros(len(PAIRS))
    for t, (i, j) in enumerate(PAIRS):
        d = pos[i] - pos[j]
        d -= L * np.round(d / L)  # numpy rounds half to even, as rint
        r2 = d @ d
        if 0 < r2 < CUT * CUT:
            s6 = (SIG * SIG / r2) ** 3
            f = 24 * EPS * (2 * s6 * s6 - s6) / r2 * d
            forces[i] += f
            forces[j] -= f
            energy[t] = 4 * EPS * (s6 * s6 - s6) - float(np.float32(shift()))
    return {"forces": forces, "pair_energy": energy}
