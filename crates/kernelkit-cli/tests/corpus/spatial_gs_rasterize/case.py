"""mlx-spatial `mlx_spatial_gs_rasterize`: Gaussian splatting, one thread
per pixel compositing projected 2-D Gaussians front to back (alpha from
the conic, early-out thresholds, alpha-weighted depth). The body is the
whole file `gs_rasterize.metal`, read with `read_text()`.

Scalars are Python ints and floats (0-d int32 / float32 inputs), as
`_rasterize_projected_metal` passes them. The Gaussians are drawn so that no
pixel lies within a small margin of any threshold (radius, Mahalanobis clip,
min alpha), so the branches taken do not depend on rounding.
"""
from corpus_lib import *

W, H, G = 8, 6, 4
MIN_ALPHA, CLIP = 1.0 / 255.0, 9.0
WHAT = "Gaussian splatting: per-pixel front-to-back alpha compositing of 2-D splats"
FEATURES = ["metal_math", "scalar_input"]
ORIGIN = Origin(
    repo="appautomaton/mlx-spatial",
    path="src/mlx_spatial/metal/gs_rasterize.metal",
    commit="b6af96def8451ca3d0f5e4c06657aee288124acc",
    license="MIT",
    source=Text(expr=("file", None, 0), sha256="60a3f5d40f6ecb75f4a00156531ea08405792ad5bf7fbab917e14ae754d3b237"),
)
KERNEL = Kernel(name="mlx_spatial_gs_rasterize",
                inputs=["centers_xy", "depths", "conics", "radii", "colors", "opacities",
                        "gaussian_count", "width", "height", "min_alpha", "mahalanobis_clip_sq"],
                outputs=["rgba", "depth"])
CALL = Call(outputs=[("rgba", "float32", (H, W, 4)), ("depth", "float32", (H, W))],
            grid=(H * W, 1, 1), threadgroup=(256, 1, 1))
WHY = "exp and a chain of float32 products and sums"
RULES = {"rgba": close(1e-5, 1e-6, WHY), "depth": close(1e-5, 1e-6, WHY)}


def splat(a):
    """Per (pixel, gaussian): (dist2, radius^2, mahalanobis, alpha) in float64."""
    yy, xx = np.mgrid[0:H, 0:W]
    px, py = xx.reshape(-1) + 0.5, yy.reshape(-1) + 0.5
    c = a["centers_xy"].astype(np.float64)
    con = a["conics"].astype(np.float64)
    dx = px[:, None] - c[None, :, 0]
    dy = py[:, None] - c[None, :, 1]
    d2 = dx * dx + dy * dy
    m = con[:, 0] * dx * dx + 2 * con[:, 1] * dx * dy + con[:, 2] * dy * dy
    alpha = a["opacities"].astype(np.float64) * np.exp(-0.5 * m)
    return d2, a["radii"].astype(np.float64) ** 2, m, alpha


def make_inputs(rng):
    while True:
        sx, sy = rng.uniform(0.8, 2.0, size=G), rng.uniform(0.8, 2.0, size=G)
        rho = rng.uniform(-0.5, 0.5, size=G)
        cov = np.stack([sx * sx, rho * sx * sy, sy * sy], 1)
        det = cov[:, 0] * cov[:, 2] - cov[:, 1] ** 2
        conics = np.stack([cov[:, 2] / det, -cov[:, 1] / det, cov[:, 0] / det], 1)
        a = {
            "centers_xy": rng.uniform([0, 0], [W, H], size=(G, 2)).astype(np.float32),
            "depths": np.sort(rng.uniform(1, 5, size=G)).astype(np.float32),
            "conics": conics.astype(np.float32),
            "radii": (3 * np.maximum(sx, sy)).astype(np.float32),
            "colors": rng.uniform(0, 1, size=(G, 3)).astype(np.float32),
            "opacities": rng.uniform(0.3, 0.95, size=G).astype(np.float32),
            "gaussian_count": np.array(G, dtype=np.int32),
            "width": np.array(W, dtype=np.int32),
            "height": np.array(H, dtype=np.int32),
            "min_alpha": np.array(MIN_ALPHA, dtype=np.float32),
            "mahalanobis_clip_sq": np.array(CLIP, dtype=np.float32),
        }
        d2, r2, m, alpha = splat(a)
        if (np.all(np.abs(d2 - r2) > 1e-3) and np.all(np.abs(m - CLIP) > 1e-3)
                and np.all(np.abs(alpha - MIN_ALPHA) > 1e-4) and np.all(np.abs(alpha - 0.999) > 1e-4)):
            return a


def reference(a):
    d2, r2, m, alpha = splat(a)
    col = a["colors"].astype(np.float64)
    dep = a["depths"].astype(np.float64)
    rgba = np.zeros((H * W, 4))
    depth = np.zeros(H * W)
    for p in range(H * W):
        t, acc, dw = 1.0, np.zeros(4), 0.0
        for i in range(G):
            if t <= 0.0039215689 or d2[p, i] > r2[i] or m[p, i] > CLIP or alpha[p, i] <= MIN_ALPHA:
                continue
            al = min(alpha[p, i], 0.999)
            w = t * al
            acc += w * np.append(col[i], 1.0)
            dw += w * dep[i]
            t *= 1 - al
        if acc[3] > 1e-6:
            rgba[p, :3] = acc[:3] / acc[3]
            depth[p] = dw / acc[3]
        rgba[p, 3] = acc[3]
    return {"rgba": rgba.reshape(H, W, 4), "depth": depth.reshape(H, W)}
