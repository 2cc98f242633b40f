"""How the timing pattern changes a kernel's measured time (issue 44's
quality investigation): the row scan of autotune_quality.py at (2048, 512)
with threadgroups 32 and 64, per launch, timed (a) as the quality
reference does (a CUDA graph of 50 launches), (b) as the tuner does (an
idle wait, one untimed launch, then a timed batch of 2), (c) a batch of 2
right after 20 launches (no idle wait), (d) a batch of 8 after the idle
wait, (e) a batch of 2 after a wait that keeps every SM busy. Medians of
15. Needs torch with CUDA and the kernelkit wheel."""
import statistics
import torch
import kernelkit as kk

k = kk.metal_kernel(name="q_scan", input_names=["x"], output_names=["y"], source="""
    uint r = thread_position_in_grid.x; uint cols = x_shape[1];
    if (r < x_shape[0]) { float acc = 0.0f; for (uint c = 0; c < cols; c++) { acc += x[r * cols + c]; y[r * cols + c] = acc; } }""")
busy = kk.metal_kernel(name="busy_wait", input_names=["ns"], output_names=["o"], source="""
    unsigned long long t0, t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while (t - t0 < (unsigned long long)ns[0]);
    if (thread_position_in_grid.x == 0) o[0] = 1u;""")
shape = (2048, 512)
x = torch.randn(shape, device="cuda")
y = torch.empty(shape, device="cuda")
ns = torch.tensor([150000], dtype=torch.int64, device="cuda")
o = torch.empty(1, dtype=torch.uint32, device="cuda")


def launch(tg):
    k(inputs=[x], grid=(shape[0], 1, 1), threadgroup=(tg, 1, 1), out=[y])


def timed(before, n, tg):
    before()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(n):
        launch(tg)
    e.record()
    e.synchronize()
    return s.elapsed_time(e) * 1e3 / n


for tg in (32, 64):
    for _ in range(5):
        launch(tg)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(50):
            launch(tg)
    res = {}
    samples = []
    for _ in range(15):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); g.replay(); e.record(); e.synchronize()
        samples.append(s.elapsed_time(e) * 1e3 / 50)
    res["a_graph50"] = statistics.median(samples)
    idle = lambda: (torch.cuda._sleep(200000), launch(tg))
    res["b_idle_warm_2"] = statistics.median(timed(idle, 2, tg) for _ in range(15))
    hot = lambda: [launch(tg) for _ in range(20)]
    res["c_hot_2"] = statistics.median(timed(hot, 2, tg) for _ in range(15))
    res["d_idle_warm_8"] = statistics.median(timed(idle, 8, tg) for _ in range(15))
    allsm = lambda: (busy(inputs=[ns], grid=(132 * 1024, 1, 1), threadgroup=(1024, 1, 1), out=[o]), launch(tg))
    res["e_busywait_warm_2"] = statistics.median(timed(allsm, 2, tg) for _ in range(15))
    print(f"tg {tg}: " + "  ".join(f"{n} {v:.2f} us" for n, v in res.items()), flush=True)
