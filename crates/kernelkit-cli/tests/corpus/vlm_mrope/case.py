"""mlx-vlm `mrope_apply_half_split_24_3d`: multimodal RoPE (Qwen-VL style):
each frequency takes its position from one of three position axes
(temporal, height, width) chosen by `position_selector`, rotates the
half-split pairs with metal::cos / metal::sin, and copies the dimensions
past the rotary part unchanged (partial rotary: q_dim 32, rotary_dim 24).

The source is an f-string that embeds another f-string; both are taken
from the file with the values `_mrope_apply_kernel(24, 3, "half_split")`
computes (env). bfloat16 activations.
"""
from corpus_lib import *

B, H, L, DQ, ROT = 1, 2, 3, 32, 24
HALF = ROT // 2
SLOTS = HALF + DQ - ROT
WHAT = "multimodal rotary embedding (3 position axes, partial rotary), bfloat16"
FEATURES = ["template", "strides", "bfloat", "metal_math"]
PAIR_SOURCE = Text(expr=("assign", "pair_source", 1), sha256="(part of the source below)", env={
    "selector_source": "int axis = int(position_selector[freq_idx]);",
    "position_expr": "position_ids[(axis * q_bsz + b) * q_len + t]",
})
ORIGIN = Origin(
    repo="Blaizzy/mlx-vlm",
    path="mlx_vlm/models/rope_utils.py",
    commit="dff9046143d2818951749731e5bc572ef9b47272",
    license="MIT",
    source=Text(expr=("assign", "source", 0), sha256="b66436f0fe20cea650e32e59865f01e2f086385f499afd16ab918646f141cb3d",
                env={"rotary_dim": ROT, "pair_source": PAIR_SOURCE}),
)
KERNEL = Kernel(name="mrope_apply_half_split_24_3d", inputs=["x", "position_ids", "inv_freq", "position_selector"],
                outputs=["x_out"])
CALL = Call(outputs=[("x_out", "bfloat16", (B, H, L, DQ))], template=[("T", "bfloat16")],
            grid=(B * H * L * SLOTS, 1, 1), threadgroup=(256, 1, 1))
RULES = {"x_out": half(atol=1e-2)}


def make_inputs(rng):
    return {
        "x": bf16(rng.normal(size=(B, H, L, DQ))),
        "position_ids": rng.integers(0, 12, size=(3, B, L)).astype(np.int32),
        "inv_freq": (1.0 / 10000 ** (np.arange(HALF) / HALF)).astype(np.float32),
        "position_selector": np.array([0] * 4 + [1] * 4 + [2] * 4, dtype=np.int32),
    }


def reference(a):
    x = a["x"].astype(np.float64)
    out = x.copy()
    for b in range(B):
        for t in range(L):
            for f in range(HALF):
                pos = float(a["position_ids"][a["position_selector"][f], b, t])
                ang = float(np.float32(pos) * a["inv_freq"][f])  # float32 product, as the body
                c, s = np.cos(ang), np.sin(ang)
                xv, xp = x[b, :, t, f], x[b, :, t, f + HALF]
                out[b, :, t, f] = xv * c - xp * s
                out[b, :, t, f + HALF] = xp * c + xv * s
    return {"x_out": out}
