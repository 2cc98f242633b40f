"""A warm tuned call beside the same call untuned (issue 44): the kernel of
``kk.autotune(...)`` called with the kernel's arguments, against the
kernel itself called with the configuration the tuning chose given
directly (its threadgroup, grid and template values), in ONE process,
alternating pair by pair, medians of many rounds. Prints ``name = value``
lines (µs per call: host time of a batch of calls, no synchronize inside a
batch; the device is synchronized, untimed, between batches), the route
each call took (``kernelkit._testing.call_routes``: the tuned call must
take the untuned call's, ``parsed`` 0), ``<pair>.diff`` (the median over
rounds of tuned minus untuned, each round's two batches back to back),
``target ...`` lines (``met`` or ``MISSED``: a warm tuned call within
0.1 µs of the same call untuned) and a JSON summary (``--json PATH``).

Pairs, on NumPy arrays and the CPU device (``cpu.*``, ``--cpu-n``
floats), and on torch tensors and CUDA (``gpu.*``, ``--n`` floats; where
torch sees a GPU), a ``y = x * K`` kernel tuned over threadgroups and a
template value:

- ``out``: ``out=[y]``, the grid the call's (no configuration fixes one);
- ``alloc``: ``output_shapes=``/``output_dtypes=``, the call allocating;
- ``gridfn``: allocating, the grid a grid function's (``grid(config,
  inputs)``, called at each tuned call; the untuned call calls the same
  function for its grid, so both pay it).

Usage: python tune_call.py [--rounds 200] [--batch 2000] [--only cpu|gpu]
       [--json out.json]
"""

import argparse
import json
import statistics
import sys
import time

RESULTS = {}
ROUTES = {}
BODY = "uint i = thread_position_in_grid.x; if (i < x_shape[0]) y[i] = x[i] * K + TILE;"


def say(name, value, note=""):
    RESULTS[name] = value
    text = f"{value:.3f}" if isinstance(value, float) else str(value)
    print(f"{name} = {text}{('  # ' + note) if note else ''}", flush=True)


def routes_of(name, f, hooks):
    if hooks is None:
        return None
    before = hooks.call_routes()
    f()
    after = hooks.call_routes()
    taken = {r: after[r] - before[r] for r in after if after[r] != before[r]}
    ROUTES[name] = taken
    say(f"{name}.routes", ",".join(f"{r}:{n}" for r, n in sorted(taken.items())))
    return taken


def pairs_timed(prefix, pairs, rounds, batch, sync, hooks):
    """Each pair's tuned and untuned calls alternating, `rounds` times."""
    for name, (tuned, untuned) in pairs.items():
        tuned()
        untuned()
        a = routes_of(f"{prefix}.{name}.tuned", tuned, hooks)
        b = routes_of(f"{prefix}.{name}.untuned", untuned, hooks)
        if a is not None:
            say(f"{prefix}.{name}.same_route", "yes" if a == b else "NO")
    samples = {name: ([], []) for name in pairs}
    for r in range(rounds):
        for name, calls in pairs.items():
            # Alternate which of the two goes first.
            order = (0, 1) if r % 2 == 0 else (1, 0)
            for i in order:
                f = calls[i]
                sync()
                t0 = time.perf_counter()
                for _ in range(batch):
                    f()
                t1 = time.perf_counter()
                samples[name][i].append((t1 - t0) / batch * 1e6)
    sync()
    for name, (t, u) in samples.items():
        say(f"{prefix}.{name}.tuned", statistics.median(t), f"min {min(t):.3f}")
        say(f"{prefix}.{name}.untuned", statistics.median(u), f"min {min(u):.3f}")
        diffs = [a - b for a, b in zip(t, u)]
        diff = statistics.median(diffs)
        say(f"{prefix}.{name}.diff", diff, "median over rounds of tuned - untuned")
        met = diff <= 0.1
        print(f"target {prefix}.{name}: tuned - untuned = {diff:.3f} us -> {'met' if met else 'MISSED'}"
              "  # a warm tuned call within 0.1 us of the same call untuned", flush=True)
        RESULTS[f"target.{prefix}.{name}"] = "met" if met else "MISSED"


def make_pairs(kk, kernel, x, y, n, dtype, configs_for, grid_fn):
    """The tuned and untuned calls of each pair, tuned first (so that the
    untuned ones are given the chosen configuration)."""
    g = (n, 1, 1)
    sh, dt = [x.shape], [dtype]
    own = {"K": 3}
    pairs = {}
    for name, fn in (("out", None), ("alloc", None), ("gridfn", grid_fn)):
        tuned = kk.autotune(kernel, configs=configs_for(name), grid=fn)
        if name == "out":
            t = (lambda tuned=tuned: tuned(inputs=[x], grid=g, template=own, out=[y]))
            best = tuned.best(inputs=[x], grid=g, template=own, out=[y])
        else:
            t = (lambda tuned=tuned: tuned(inputs=[x], grid=g, template=own, output_shapes=sh, output_dtypes=dt))
            best = tuned.best(inputs=[x], grid=g, template=own, output_shapes=sh, output_dtypes=dt)
        t()
        tg = tuple(best["threadgroup"])
        template = {**own, **best.get("template", {})}
        if name == "out":
            u = (lambda tg=tg, template=template: kernel(inputs=[x], grid=g, threadgroup=tg, template=template,
                                                           out=[y]))
        elif name == "alloc":
            u = (lambda tg=tg, template=template: kernel(inputs=[x], grid=g, threadgroup=tg, template=template,
                                                           output_shapes=sh, output_dtypes=dt))
        else:
            u = (lambda tg=tg, template=template, best=best: kernel(
                inputs=[x], grid=grid_fn(best, [x]), threadgroup=tg, template=template,
                output_shapes=sh, output_dtypes=dt))
        say(f"chosen.{name}", repr(best))
        pairs[name] = (t, u)
    return pairs


def configs(tgs, name):
    # A different TILE per pair: a fresh tuning key (and variants) each.
    tile = {"out": 0, "alloc": 1, "gridfn": 2}[name]
    return [{"threadgroup": (tg, 1, 1), "template": {"TILE": tile}} for tg in tgs]


def grid_fn(config, inputs):
    return (inputs[0].shape[0], 1, 1)


def cpu(rounds, batch, n, hooks):
    import numpy as np

    import kernelkit as kk

    k = kk.metal_kernel(name="tc_cpu_scale", input_names=["x"], output_names=["y"], source=BODY)
    x = np.arange(n, dtype=np.float32)
    y = np.empty_like(x)
    pairs = make_pairs(kk, k, x, y, n, x.dtype, lambda name: configs((64, 256), name), grid_fn)
    for name, (t, u) in pairs.items():
        a = t()[0].copy()
        b = u()[0]
        assert np.array_equal(a, b), f"{name}: the tuned result is not the untuned one"
    pairs_timed("cpu", pairs, rounds, batch, lambda: None, hooks)


def gpu(rounds, batch, n, hooks):
    import torch

    import kernelkit as kk

    if not torch.cuda.is_available():
        say("gpu.absent", "torch sees no CUDA device")
        return
    # The same Metal body, run where the tensors are (the CUDA device).
    k = kk.metal_kernel(name="tc_gpu_scale", input_names=["x"], output_names=["y"], source=BODY)
    x = torch.arange(n, dtype=torch.float32, device="cuda")
    y = torch.empty_like(x)
    pairs = make_pairs(kk, k, x, y, n, torch.float32, lambda name: configs((128, 256, 512), name), grid_fn)
    for name, (t, u) in pairs.items():
        a = t()[0].clone()
        b = u()[0]
        torch.cuda.synchronize()
        assert torch.equal(a, b), f"{name}: the tuned result is not the untuned one"
    pairs_timed("gpu", pairs, rounds, batch, torch.cuda.synchronize, hooks)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=200)
    p.add_argument("--batch", type=int, default=2000)
    p.add_argument("--n", type=int, default=65536, help="floats per GPU array")
    p.add_argument("--cpu-n", type=int, default=1024, help="floats per CPU array")
    p.add_argument("--only", choices=("cpu", "gpu"))
    p.add_argument("--json")
    a = p.parse_args()
    try:
        from kernelkit import _testing as hooks
    except ImportError:
        hooks = None
    say("python", sys.version.split()[0])
    if a.only != "cpu":
        try:
            gpu(a.rounds, a.batch, a.n, hooks)
        except ImportError as e:
            say("gpu.absent", repr(e)[:200])
    if a.only != "gpu":
        cpu(a.rounds, a.batch, a.cpu_n, hooks)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"results": RESULTS, "routes": ROUTES}, f, indent=1)


if __name__ == "__main__":
    main()
