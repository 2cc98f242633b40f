"""mlx-atomistic `langevin_baoab_drift`: the B-A-O-A part of a BAOAB
Langevin integrator step (half kick, drift, Ornstein-Uhlenbeck thermostat,
drift), with periodic wrapping by `floor`; init_value = 0 as the library
calls it. Positions stay away from the box faces.
"""
from corpus_lib import *

N, L = 10, 5.0
HALF_DT, DECAY = 0.01, 0.9
WHAT = "Langevin BAOAB drift + thermostat step with periodic wrap"
FEATURES = ["init_value", "metal_math"]
ORIGIN = Origin(
    repo="appautomaton/mlx-atomistic",
    path="src/mlx_atomistic/metal_kernels.py",
    commit="acd05c6dcdd6b81c8997040ba80c9f5ec755db09",
    license="MIT",
    source=Text(expr=("assign", "_LANGEVIN_BAOAB_DRIFT_SOURCE", 0), sha256="01f57365ffd057cf1ebb95f78d1d902bdc5b15395e23167454525ca438f8bb09"),
)
KERNEL = Kernel(name="langevin_baoab_drift",
                inputs=["positions", "velocities", "forces", "force_scale_over_mass", "thermal_scale",
                        "noise", "box", "params", "counts"],
                outputs=["next_positions", "middle_velocities"])
CALL = Call(outputs=[("next_positions", "float32", (N, 3)), ("middle_velocities", "float32", (N, 3))],
            grid=(N, 1, 1), threadgroup=(min(256, N), 1, 1), init_value=0.0)
WHY = "a chain of float32 multiply-adds (fma contraction may differ)"
RULES = {"next_positions": close(1e-6, 1e-6, WHY), "middle_velocities": close(1e-6, 1e-6, WHY)}


def make_inputs(rng):
    f = np.float32
    return {
        "positions": rng.uniform(0.5, L - 0.5, size=(N, 3)).astype(f),
        "velocities": rng.normal(size=(N, 3)).astype(f),
        "forces": rng.normal(size=(N, 3)).astype(f),
        "force_scale_over_mass": rng.uniform(0.5, 2.0, size=(N,)).astype(f),
        "thermal_scale": rng.uniform(0.1, 0.3, size=(N,)).astype(f),
        "noise": rng.normal(size=(N, 3)).astype(f),
        "box": np.array([L, L, L], dtype=f),
        "params": np.array([HALF_DT, DECAY, 1.0], dtype=f),
        "counts": np.array([N], dtype=np.int32),
    }


def reference(a):
    g = {k: a[k].astype(np.float64) for k in a}
    h, decay = g["params"][0], g["params"][1]
    vh = g["velocities"] + h * g["force_scale_over_mass"][:, None] * g["forces"]
    p = g["positions"] + h * vh
    p -= L * np.floor(p / L)
    mid = decay * vh + g["thermal_scale"][:, None] * g["noise"]
    p = p + h * mid
    p -= L * np.floor(p / L)
    return {"next_positions": p, "middle_velocities": mid}
