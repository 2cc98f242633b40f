"""How a kernel's time depends on the timing method and on where its output
lies (issue 44): a row scan and a row softmax at (2048, 512), each
threadgroup timed into three output buffers (torch's, one allocated behind
a 3 MiB pad, one at a 4 KiB offset inside a larger tensor) by each method
the tuner or a reference might use: a CUDA graph of 50 launches, one
launch in a graph behind a delay, a Python loop of 50, and batches of 1,
2, 4 and 16 launches behind a delay and one untimed launch (the tuner's
way), then the tuner's own choice (its times in the debug log with
``KERNELKIT_LOG=kernelkit::kernel::tune=debug``).

The methods agree within about 2 us; the buffers do not: the scan's
threadgroup 32 beats 64 into one buffer and loses into another, which is
why ``autotune_quality.py`` averages its reference over placements.

Needs torch with CUDA and the kernelkit wheel. Usage: python tune_placement.py
"""
import sys
import kernelkit as kk

try:
    import torch
except ImportError:  # pragma: no cover
    print("tune_placement: skipped: torch is not installed")
    sys.exit(0)
if not torch.cuda.is_available():
    print("tune_placement: skipped: no CUDA device for torch")
    sys.exit(0)
DEV = "cuda"

# The quality harness's own scan and softmax kernels (the scan is its
# persistent miss at (2048, 512)).
from autotune_quality import KERNELS  # noqa: E402

SCAN = KERNELS["scan_rows"]["kernel"]
SOFT = KERNELS["softmax_rows"]["kernel"]

def run(k, x, y, tg):
    k(inputs=[x], grid=(x.shape[0], 1, 1), threadgroup=(tg, 1, 1), out=[y])

def med(f, n=11):
    s = sorted(f() for _ in range(n))
    return s[n // 2]

def ev_time(before, body, per):
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    before()
    a.record(); body(); b.record(); b.synchronize()
    return a.elapsed_time(b) * 1e3 / per

def methods(k, x, y, tg):
    out = {}
    for _ in range(3): run(k, x, y, tg)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(50): run(k, x, y, tg)
    g.replay(); torch.cuda.synchronize()
    out["graph50"] = med(lambda: ev_time(lambda: None, g.replay, 50))
    g1 = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g1):
        run(k, x, y, tg)
    g1.replay(); torch.cuda.synchronize()
    out["graph1+delay"] = med(lambda: ev_time(lambda: (torch.cuda._sleep(400000), g1.replay()), g1.replay, 1))
    out["loop50"] = med(lambda: ev_time(lambda: None, lambda: [run(k, x, y, tg) for _ in range(50)], 50))
    for n in (1, 2, 4, 16):
        out[f"delay+warm+{n}"] = med(lambda: ev_time(lambda: (torch.cuda._sleep(400000 + 20000 * n), run(k, x, y, tg)),
                                                   lambda: [run(k, x, y, tg) for _ in range(n)], n))
    out[f"delay+1(nowarm)"] = med(lambda: ev_time(lambda: torch.cuda._sleep(400000), lambda: run(k, x, y, tg), 1))
    return out

x = torch.randn((2048, 512), device=DEV)
ys = {"y_torch": torch.empty((2048, 512), device=DEV)}
pad = torch.empty(3 * 1024 * 1024 // 4 + 1024, device=DEV)
ys["y_after3MB"] = torch.empty((2048, 512), device=DEV)
big = torch.empty(2048 * 512 + 8192, device=DEV)
ys["y_off4K"] = big[1024:1024 + 2048 * 512].view(2048, 512)
for kname, k, tgs in (("scan", SCAN, (32, 64, 128)), ("softmax", SOFT, (32, 64))):
    for yname, y in ys.items():
        for tg in tgs:
            m = methods(k, x, y, tg)
            print(f"{kname:8s} {yname:11s} tg{tg:<4d} " + "  ".join(f"{n} {v:7.2f}" for n, v in m.items()), flush=True)
# The tuner's own times (debug log) for the same kernels, outputs allocated.
for kname, k, tgs in (("scan", SCAN, (32, 64, 128)), ("softmax", SOFT, (32, 64))):
    t = kk.autotune(k, configs=[{"threadgroup": (tg, 1, 1)} for tg in tgs], grid=lambda c, i: (2048, 1, 1))
    print(kname, "tuner chose", t.best(inputs=[x], output_shapes=[(2048, 512)], output_dtypes=["float32"]), flush=True)
