"""mlx-examples EnCodec `lstm`: one time step of an LSTM cell (the gate
pre-activations come in already multiplied), with a templated `sigmoid`
in the header and `metal::precise::tanh`. Scalars (hidden_size, time_step,
num_time_steps) are Python ints, i.e. 0-d int32 inputs.

The body indexes as if the batch were 1 (`elem = b * 4H + y` over a grid of
(B, B*H)); the model runs it with B = 1, so does this entry: H = 32,
three time steps, time_step = 1.
"""
from corpus_lib import *

B, T, H, STEP = 1, 3, 32, 1
WHAT = "LSTM cell step: header template sigmoid + metal::precise::tanh"
FEATURES = ["header", "metal_math", "scalar_input"]
ORIGIN = Origin(
    repo="ml-explore/mlx-examples",
    path="encodec/encodec.py",
    commit="d72fdeb4eeb0cf65f146ad3c3fbc48a2cd23974b",
    license="MIT",
    source=Text(expr=("kwarg", "source", 0), sha256="bb9ff2c92d64857671192f488e661b1e4e1d0bef8735ec83abb09f8f8d26573c"),
    header=Text(expr=("kwarg", "header", 0), sha256="673550d75e16feaabfd232838afd27de21be7912dbdc3866acbeaaccc564408f"),
)
KERNEL = Kernel(name="lstm", inputs=["x", "h_in", "cell", "hidden_size", "time_step", "num_time_steps"],
                outputs=["hidden_state", "cell_state"])
CALL = Call(
    outputs=[("hidden_state", "float32", (B, H)), ("cell_state", "float32", (B, H))],
    grid=(B, B * H, 1),
    threadgroup=(256, 1, 1),
)
WHY = "exp and tanh: a few ulp apart between libraries"
RULES = {"hidden_state": close(1e-6, 1e-7, WHY), "cell_state": close(1e-6, 1e-7, WHY)}


def make_inputs(rng):
    return {
        "x": rng.normal(size=(B, T, 4 * H)).astype(np.float32),
        "h_in": rng.normal(size=(B, 4 * H)).astype(np.float32),
        "cell": rng.normal(size=(B, H)).astype(np.float32),
        "hidden_size": np.array(H, dtype=np.int32),
        "time_step": np.array(STEP, dtype=np.int32),
        "num_time_steps": np.array(T, dtype=np.int32),
    }


def reference(a):
    z = a["h_in"].astype(np.float64) + a["x"].astype(np.float64)[:, STEP]
    sig = lambda v: 1 / (1 + np.exp(-v))
    i, f, g, o = sig(z[:, :H]), sig(z[:, H:2 * H]), np.tanh(z[:, 2 * H:3 * H]), sig(z[:, 3 * H:])
    c = f * a["cell"].astype(np.float64) + i * g
    return {"hidden_state": o * np.tanh(c), "cell_state": c}
