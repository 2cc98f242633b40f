"""Autotune quality on a GPU (issue 44): 8 kernels whose best launch
configuration depends on the shape, each at 3 shapes. For every case,
`kk.autotune(...).best(...)` chooses (compiles excluded: every
configuration's variant is compiled first, and that time is reported
apart), then every configuration is timed exhaustively (CUDA events around
a CUDA graph of many launches: the kernels' own time; ``--reference loop``
times a Python launch loop instead) and the choice is compared with the exhaustive best: within 3%
counts as a hit. The target is hits for at least 90% of the cases. The
suite's total tuning time is printed beside Triton's ``@autotune`` on the
Triton versions of the kernels that have one (its first call tunes, and
includes its compiles: the two figures are not the same measure, each is
labelled).

Where the output lies in memory changes some kernels' speed, and their
ranking: a row scan at (2048, 512) writes with a 2 KiB stride, and on an
H200 its threadgroup 32 beats 64 by 7% into one buffer and loses by 4%
into another (``tune_placement.py``). The tuner times into scratch arrays
of its own, placed wherever they land, and a later call writes wherever
its output lands, so a reference timed into one buffer ranks that buffer.
The graph reference therefore times every configuration into
``--placements`` output buffers (the first the one a single-placement
reference uses; the others allocated behind pads of a few MiB) and takes
the mean: ``hits`` counts the choice against that, ``hits_one_buffer``
against the first buffer alone (both printed).

Needs torch with CUDA (device tensors) and the kernelkit wheel; Triton
optional. Prints one line per case and a summary; ``--json FILE`` writes
the figures.
"""

import argparse
import json
import sys
import time

import kernelkit as kk

try:
    import torch
except ImportError:  # pragma: no cover
    print("autotune_quality: skipped: torch is not installed")
    sys.exit(0)
if not torch.cuda.is_available():
    print("autotune_quality: skipped: no CUDA device for torch")
    sys.exit(0)

DEV = "cuda"


def tg_tile(tgs, tiles):
    return [{"threadgroup": (tg, 1, 1), "template": {"TILE": t}} for tg in tgs for t in tiles]


def cdiv(a, b):
    return -(-a // b)


# name: (body, input maker(shape) -> list, output (shape, dtype) fn, configs, grid fn(config, inputs, shape))
KERNELS = {}


def kernel(name, inputs, outputs, body):
    return kk.metal_kernel(name=name, input_names=inputs, output_names=outputs, source=body)


def add(name, k, make, out, configs, grid, shapes):
    KERNELS[name] = dict(kernel=k, make=make, out=out, configs=configs, grid=grid, shapes=shapes)


# 1. elementwise scale, TILE elements per thread.
add(
    "scale",
    kernel("q_scale", ["x"], ["y"], """
        uint base = thread_position_in_grid.x * TILE;
        for (int t = 0; t < TILE; t++) { uint i = base + t; if (i < x_shape[0]) y[i] = x[i] * 2.0f; }"""),
    lambda s: [torch.randn(s, device=DEV)],
    lambda s: ([s], [torch.float32]),
    tg_tile((64, 128, 256, 512), (1, 2, 4, 8)),
    lambda c, ins, s: (cdiv(s, c["template"]["TILE"]), 1, 1),
    [1 << 16, 1 << 20, 1 << 24],
)
# 2. strided-tile scale: thread handles TILE elements spaced by the grid.
add(
    "scale_strided",
    kernel("q_scale_strided", ["x"], ["y"], """
        uint n = x_shape[0]; uint threads = (n + TILE - 1) / TILE;
        for (int t = 0; t < TILE; t++) { uint i = thread_position_in_grid.x + t * threads; if (i < n) y[i] = x[i] + 1.0f; }"""),
    lambda s: [torch.randn(s, device=DEV)],
    lambda s: ([s], [torch.float32]),
    tg_tile((64, 256, 1024), (1, 4, 16)),
    lambda c, ins, s: (cdiv(s, c["template"]["TILE"]), 1, 1),
    [1 << 16, 1 << 20, 1 << 24],
)
# 3. row sums: a thread per row.
add(
    "rowsum",
    kernel("q_rowsum", ["x"], ["y"], """
        uint r = thread_position_in_grid.x; uint cols = x_shape[1];
        if (r < x_shape[0]) { float acc = 0.0f; for (uint c = 0; c < cols; c++) acc += x[r * cols + c]; y[r] = acc; }"""),
    lambda s: [torch.randn(s, device=DEV)],
    lambda s: ([(s[0],)], [torch.float32]),
    [{"threadgroup": (tg, 1, 1)} for tg in (32, 64, 128, 256, 512, 1024)],
    lambda c, ins, s: (s[0], 1, 1),
    [(4096, 64), (65536, 32), (1024, 1024)],
)
# 4. softmax over rows: a thread per row.
add(
    "softmax_rows",
    kernel("q_softmax", ["x"], ["y"], """
        uint r = thread_position_in_grid.x; uint cols = x_shape[1];
        if (r < x_shape[0]) {
          float m = -3.0e38f; for (uint c = 0; c < cols; c++) m = metal::max(m, x[r * cols + c]);
          float s = 0.0f; for (uint c = 0; c < cols; c++) s += metal::exp(x[r * cols + c] - m);
          for (uint c = 0; c < cols; c++) y[r * cols + c] = metal::exp(x[r * cols + c] - m) / s; }"""),
    lambda s: [torch.randn(s, device=DEV)],
    lambda s: ([s], [torch.float32]),
    [{"threadgroup": (tg, 1, 1)} for tg in (32, 64, 128, 256, 512)],
    lambda c, ins, s: (s[0], 1, 1),
    [(8192, 128), (65536, 64), (2048, 512)],
)
# 5. transpose in 2-D threadgroups, TILE rows per thread.
add(
    "transpose",
    kernel("q_transpose", ["x"], ["y"], """
        uint rows = x_shape[0], cols = x_shape[1];
        uint c = thread_position_in_grid.x;
        for (int t = 0; t < TILE; t++) { uint r = thread_position_in_grid.y * TILE + t;
          if (r < rows && c < cols) y[c * rows + r] = x[r * cols + c]; }"""),
    lambda s: [torch.randn(s, device=DEV)],
    lambda s: ([(s[1], s[0])], [torch.float32]),
    [{"threadgroup": tg, "template": {"TILE": t}} for tg in ((32, 8, 1), (16, 16, 1), (64, 4, 1), (8, 32, 1)) for t in (1, 4)],
    lambda c, ins, s: (s[1], cdiv(s[0], c["template"]["TILE"]), 1),
    [(1024, 1024), (4096, 256), (256, 8192)],
)
# 6. matrix product, TILE outputs of a row per thread.
add(
    "matmul",
    kernel("q_matmul", ["a", "b"], ["c"], """
        uint n = a_shape[0], k = a_shape[1], m = b_shape[1];
        uint row = thread_position_in_grid.y; uint col0 = thread_position_in_grid.x * TILE;
        if (row < n) { for (int t = 0; t < TILE; t++) { uint col = col0 + t; if (col < m) {
          float acc = 0.0f; for (uint i = 0; i < k; i++) acc += a[row * k + i] * b[i * m + col];
          c[row * m + col] = acc; } } }"""),
    lambda s: [torch.randn((s, s), device=DEV), torch.randn((s, s), device=DEV)],
    lambda s: ([(s, s)], [torch.float32]),
    [{"threadgroup": tg, "template": {"TILE": t}} for tg in ((16, 16, 1), (32, 8, 1), (8, 32, 1)) for t in (1, 2, 4)],
    lambda c, ins, s: (cdiv(s, c["template"]["TILE"]), s, 1),
    [256, 512, 1024],
)
# 7. inclusive scan of each row: a thread per row.
add(
    "scan_rows",
    kernel("q_scan", ["x"], ["y"], """
        uint r = thread_position_in_grid.x; uint cols = x_shape[1];
        if (r < x_shape[0]) { float acc = 0.0f; for (uint c = 0; c < cols; c++) { acc += x[r * cols + c]; y[r * cols + c] = acc; } }"""),
    lambda s: [torch.randn(s, device=DEV)],
    lambda s: ([s], [torch.float32]),
    [{"threadgroup": (tg, 1, 1)} for tg in (32, 64, 128, 256, 512)],
    lambda c, ins, s: (s[0], 1, 1),
    [(16384, 64), (131072, 16), (2048, 512)],
)
# 8. gather, TILE indices per thread.
add(
    "gather",
    kernel("q_gather", ["table", "idx"], ["y"], """
        uint base = thread_position_in_grid.x * TILE;
        for (int t = 0; t < TILE; t++) { uint i = base + t; if (i < idx_shape[0]) y[i] = table[idx[i]]; }"""),
    lambda s: [torch.randn(s[0], device=DEV), torch.randint(0, s[0], (s[1],), device=DEV, dtype=torch.int32)],
    lambda s: ([(s[1],)], [torch.float32]),
    tg_tile((64, 256, 1024), (1, 2, 4)),
    lambda c, ins, s: (cdiv(s[1], c["template"]["TILE"]), 1, 1),
    [(1 << 10, 1 << 20), (1 << 24, 1 << 20), (1 << 20, 1 << 24)],
)


def launch(spec, config, ins, shape, outs):
    k = spec["kernel"]
    g = spec["grid"](config, ins, shape)
    k(
        inputs=ins,
        grid=g,
        threadgroup=config["threadgroup"],
        template=list(config.get("template", {}).items()) or None,
        out=outs,
    )


def placements(outs, count):
    """``count`` sets of output buffers: ``outs`` first, then copies of
    its shapes allocated behind pads of a few MiB (kept alive with them),
    each so at another place in memory."""
    sets = [(outs, None)]
    for p in range(1, count):
        pad = torch.empty((3 * p) * (1 << 20) // 4 + 1024 * p, device=DEV)
        sets.append(([torch.empty_like(o) for o in outs], pad))
    return [s for s, _ in sets], [pad for _, pad in sets]


def exhaustive(spec, ins, shape, outs, reps, reference):
    """Median-of-5 per-launch time of every configuration, in us.

    ``graph`` (the default): ``reps`` launches captured once in a CUDA
    graph, the graph replayed and timed with events: the kernels' own time,
    as the GPU runs them back to back. ``loop``: ``reps`` launches from this
    Python loop between two events, which for kernels shorter than a
    Python launch (about 5 us) times the launch rate of the host, not the
    configuration."""
    times = []
    for c in spec["configs"]:
        for _ in range(3):
            launch(spec, c, ins, shape, outs)
        torch.cuda.synchronize()
        graph = None
        if reference == "graph":
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                for _ in range(reps):
                    launch(spec, c, ins, shape, outs)
            graph.replay()
            torch.cuda.synchronize()
        samples = []
        for _ in range(5):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            if graph is not None:
                graph.replay()
            else:
                for _ in range(reps):
                    launch(spec, c, ins, shape, outs)
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end) * 1e3 / reps)
        samples.sort()
        times.append(samples[2])
    return times


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", default=None)
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--reference", choices=["graph", "loop"], default="graph",
                    help="how the exhaustive best is timed (see exhaustive())")
    ap.add_argument("--placements", type=int, default=3,
                    help="output buffers each configuration is timed into (graph reference; see the module doc)")
    args = ap.parse_args()
    cases = []
    tune_total = 0.0
    compile_total = 0.0
    for name, spec in KERNELS.items():
        for shape in spec["shapes"]:
            ins = spec["make"](shape)
            shapes, dtypes = spec["out"](shape)
            # Each output's shape as a tuple (a 1-D size given as an int).
            shapes = [(d,) if isinstance(d, int) else tuple(d) for d in shapes]
            outs = [torch.empty(s, dtype=d, device=DEV) for s, d in zip(shapes, dtypes)]
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for c in spec["configs"]:
                launch(spec, c, ins, shape, outs)  # compiles (excluded from tuning)
            torch.cuda.synchronize()
            compile_s = time.perf_counter() - t0
            tuned = kk.autotune(spec["kernel"], configs=spec["configs"], grid=lambda c, i, s=shape, sp=spec: sp["grid"](c, i, s))
            t0 = time.perf_counter()
            best = tuned.best(inputs=ins, output_shapes=shapes, output_dtypes=[str(d).replace("torch.", "") for d in dtypes])
            tune_s = time.perf_counter() - t0
            out_sets, _pads = placements(outs, args.placements if args.reference == "graph" else 1)
            per_place = [exhaustive(spec, ins, shape, o, args.reps, args.reference) for o in out_sets]
            times = [sum(ts) / len(ts) for ts in zip(*per_place)]
            index = spec["configs"].index(best)
            chosen = times[index]
            fastest = min(times)
            hit = chosen <= fastest * 1.03
            one = per_place[0]
            hit_one = one[index] <= min(one) * 1.03
            cases.append(dict(kernel=name, shape=str(shape), chosen=str(best), chosen_us=chosen, best_us=fastest,
                              ratio=chosen / fastest, hit=hit, hit_one_buffer=hit_one,
                              ratio_one_buffer=one[index] / min(one), per_placement_us=per_place,
                              tune_ms=tune_s * 1e3, compile_ms=compile_s * 1e3))
            tune_total += tune_s
            compile_total += compile_s
            print(f"{name:14s} {str(shape):18s} chosen {chosen:9.2f} us  best {fastest:9.2f} us  "
                  f"x{chosen / fastest:.3f} {'ok ' if hit else 'MISS'} (one buffer x{one[index] / min(one):.3f} "
                  f"{'ok' if hit_one else 'MISS'}) tune {tune_s * 1e3:7.1f} ms  ({best})", flush=True)
            if not (hit and hit_one):
                # Every configuration's reference time in each placement,
                # beside the tuner's own (KERNELKIT_LOG=kernelkit::kernel::tune=debug logs them).
                for k in sorted(range(len(times)), key=lambda k: times[k]):
                    each = " ".join(f"{p[k]:9.2f}" for p in per_place)
                    print(f"    reference {times[k]:9.2f} us (per placement {each})  {spec['configs'][k]}", flush=True)
    hits = sum(c["hit"] for c in cases)
    hits_one = sum(c["hit_one_buffer"] for c in cases)
    places = args.placements if args.reference == "graph" else 1
    print(f"autotune_quality.reference = {args.reference} ({args.reps} launches per sample, median of 5, "
          f"mean over {places} output placements)")
    print(f"autotune_quality.hits = {hits}/{len(cases)} ({100 * hits / len(cases):.0f}%, target >= 90%)")
    print(f"autotune_quality.hits_one_buffer = {hits_one}/{len(cases)} ({100 * hits_one / len(cases):.0f}%; "
          "against the first output buffer alone)")
    print(f"autotune_quality.tune_total_ms = {tune_total * 1e3:.1f} (compiles excluded; compiles {compile_total * 1e3:.1f} ms apart)")
    stats = kk.cache_stats("cuda")
    print(f"autotune_quality.counters = tunes {stats['tunes']} tune_launches {stats['tune_launches']}")
    triton_ms = triton_suite()
    out = dict(cases=cases, hits=hits, hits_one_buffer=hits_one, placements=places, total=len(cases),
               tune_total_ms=tune_total * 1e3,
               compile_total_ms=compile_total * 1e3, triton=triton_ms)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


def triton_suite():
    """Triton @autotune's first calls (they tune, compiles included) on the
    Triton versions of scale, softmax_rows and rowsum at the same shapes."""
    try:
        import triton
        import triton.language as tl
    except ImportError:
        print("autotune_quality.triton = skipped (no triton)")
        return None

    cfgs = [triton.Config({"BLOCK": b}, num_warps=w) for b in (256, 1024, 4096) for w in (2, 4, 8)]

    @triton.autotune(configs=cfgs, key=["n"])
    @triton.jit
    def scale(x, y, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(y + offs, tl.load(x + offs, mask=m) * 2.0, mask=m)

    rcfgs = [triton.Config({}, num_warps=w) for w in (1, 2, 4, 8)]

    @triton.autotune(configs=rcfgs, key=["cols"])
    @triton.jit
    def softmax(x, y, cols, BLOCK: tl.constexpr):
        r = tl.program_id(0)
        offs = tl.arange(0, BLOCK)
        m = offs < cols
        v = tl.load(x + r * cols + offs, mask=m, other=-float("inf"))
        e = tl.exp(v - tl.max(v, 0))
        tl.store(y + r * cols + offs, e / tl.sum(e, 0), mask=m)

    @triton.autotune(configs=rcfgs, key=["cols"])
    @triton.jit
    def rowsum(x, y, cols, BLOCK: tl.constexpr):
        r = tl.program_id(0)
        offs = tl.arange(0, BLOCK)
        v = tl.load(x + r * cols + offs, mask=offs < cols, other=0.0)
        tl.store(y + r, tl.sum(v, 0))

    total = {}
    t_all = 0.0
    for name, fn in (("scale", None), ("softmax_rows", None), ("rowsum", None)):
        spent = 0.0
        for shape in KERNELS[name]["shapes"]:
            if name == "scale":
                x = torch.randn(shape, device=DEV); y = torch.empty_like(x)
                t0 = time.perf_counter()
                scale[lambda meta: (triton.cdiv(shape, meta["BLOCK"]),)](x, y, shape)
            else:
                x = torch.randn(shape, device=DEV)
                y = torch.empty(shape if name == "softmax_rows" else (shape[0],), device=DEV)
                k = softmax if name == "softmax_rows" else rowsum
                t0 = time.perf_counter()
                k[(shape[0],)](x, y, shape[1], BLOCK=triton.next_power_of_2(shape[1]))
            torch.cuda.synchronize()
            spent += time.perf_counter() - t0
        total[name] = spent * 1e3
        t_all += spent
        print(f"autotune_quality.triton.{name}_ms = {spent * 1e3:.1f} (first calls, compiles included)")
    print(f"autotune_quality.triton.total_ms = {t_all * 1e3:.1f} (scale, softmax_rows, rowsum; compiles included)")
    return total


if __name__ == "__main__":
    main()
