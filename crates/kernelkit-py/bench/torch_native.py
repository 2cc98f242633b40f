"""kernelkit inside PyTorch (issue 17's targets), in ONE process, on a GPU.
Prints ``torch_native.NAME = value`` lines and a JSON summary (``--json``).

- ``torch_native.explain.graph_breaks`` / ``.graph_count``: ``torch._dynamo.
  explain`` of a model block with two kernelkit ops (``kernelkit.torch.
  custom_op``) between torch ops; target 0 breaks, 1 graph.
  ``torch_native.explain.max_abs_diff``: ``torch.compile(fullgraph=True)``
  of the block against eager.
- ``torch_native.graph.kernelkit_us_per_launch`` against ``torch_native.
  graph.cupy_us_per_launch``: a decode-style loop of 100 small launches
  (``y = x + 1`` over 4096 floats, ping-pong between two buffers) captured
  into one CUDA graph, by kernelkit (``torch.cuda.graph``, outputs given)
  and by CuPy ``RawKernel`` (CuPy's stream capture); replay time per launch
  from CUDA events, interleaved rounds, medians. Target: kernelkit ≤ CuPy.
  ``torch_native.graph.kernelkit_host_us_per_replay``: host time of one
  ``graph.replay()`` (kernelkit's code does not run in a replay: this is
  torch's and the driver's cost).
- ``torch_native.grid_sample.kernelkit_backward_us`` against
  ``torch_native.grid_sample.torch_backward_us``: the backward of
  ``grid_sample`` (x ``(8, 64, 64, 32)`` NHWC, grid ``(8, 128, 128, 2)``,
  float32) through autograd, kernelkit's fused vector-Jacobian kernel (one
  launch, atomics) against torch's own ``grid_sample`` backward, GPU time
  from CUDA events, medians; forwards alike (``*_forward_us``).

Usage: python torch_native.py [--rounds 9] [--json out.json]
"""

import argparse
import json
import statistics
import sys
import time

RESULTS = {}


def say(name, value, note=""):
    RESULTS[name] = value
    text = f"{value:.3f}" if isinstance(value, float) else str(value)
    print(f"torch_native.{name} = {text}{('  # ' + note) if note else ''}", flush=True)


def gpu_ms(torch, fn, repeats):
    """GPU time of `repeats` calls of fn, from CUDA events on the current stream."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(repeats):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end)


def explain(torch, kk, kkt):
    add = kk.metal_kernel(
        name="tn_bias_gelu",
        input_names=["x", "b"],
        output_names=["y"],
        source="""
            uint i = thread_position_in_grid.x;
            T v = x[i] + b[i % b_shape[0]];
            y[i] = v * T(0.5) * (T(1) + metal::tanh(T(0.7978845608) * (v + T(0.044715) * v * v * v)));
        """,
    )
    rms = kk.metal_kernel(
        name="tn_scale_rows",
        input_names=["x", "s"],
        output_names=["y"],
        source="uint i = thread_position_in_grid.x; y[i] = x[i] * s[i / x_shape[1]];",
    )
    bias_gelu = kkt.custom_op(
        "kkbench::bias_gelu",
        add,
        template=lambda x, b: {"T": x.dtype},
        grid=lambda x, b: (x.numel(), 1, 1),
        output_shapes=lambda x, b: [x.shape],
        output_dtypes=lambda x, b: [x.dtype],
    )
    scale_rows = kkt.custom_op(
        "kkbench::scale_rows",
        rms,
        template=lambda x, s: {"T": x.dtype},
        grid=lambda x, s: (x.numel(), 1, 1),
        output_shapes=lambda x, s: [x.shape],
        output_dtypes=lambda x, s: [x.dtype],
    )
    lin = torch.nn.Linear(512, 512, device="cuda")
    bias = torch.randn(512, device="cuda")

    def block(x):
        h = bias_gelu(lin(x), bias)
        s = torch.rsqrt(h.pow(2).mean(dim=1) + 1e-6)
        return scale_rows(h, s) + x

    x = torch.randn(256, 512, device="cuda")
    with torch.no_grad():
        e = torch._dynamo.explain(block)(x)
        say("explain.graph_breaks", e.graph_break_count, "target 0")
        say("explain.graph_count", e.graph_count, "target 1")
        compiled = torch.compile(block, fullgraph=True)
        diff = (compiled(x) - block(x)).abs().max().item()
    say("explain.max_abs_diff", float(diff), "compiled vs eager")


N = 4096
LAUNCHES = 100
CUDA_SOURCE = r"""
extern "C" __global__ void add_one(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] + 1.0f;
}
"""


def graphs(torch, kk, rounds):
    kernel = kk.metal_kernel(
        name="tn_add_one",
        input_names=["x"],
        output_names=["y"],
        source="uint i = thread_position_in_grid.x; y[i] = x[i] + 1.0f;",
    )
    a = torch.zeros(N, device="cuda")
    b = torch.zeros(N, device="cuda")

    def loop():
        src, dst = a, b
        for _ in range(LAUNCHES):
            kernel(inputs=[src], grid=(N, 1, 1), threadgroup=(256, 1, 1), out=[dst])
            src, dst = dst, src

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        loop()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        loop()
    a.zero_()
    graph.replay()
    torch.cuda.synchronize()
    ok = bool((a == LAUNCHES).all().item())
    say("graph.kernelkit_result_ok", ok, f"a == {LAUNCHES} after one replay")

    cupy_replay = None
    try:
        import cupy

        raw = cupy.RawKernel(CUDA_SOURCE, "add_one")
        ca = cupy.zeros(N, dtype=cupy.float32)
        cb = cupy.zeros(N, dtype=cupy.float32)
        stream = cupy.cuda.Stream(non_blocking=True)
        n = cupy.int32(N)
        with stream:
            raw(((N + 255) // 256,), (256,), (ca, cb, n))  # load the module first
            stream.synchronize()
            stream.begin_capture()
            src, dst = ca, cb
            for _ in range(LAUNCHES):
                raw(((N + 255) // 256,), (256,), (src, dst, n))
                src, dst = dst, src
            cgraph = stream.end_capture()
        ca.fill(0)
        cupy.cuda.Device().synchronize()
        cgraph.launch(stream)
        stream.synchronize()
        say("graph.cupy_result_ok", bool((ca == LAUNCHES).all()))

        def cupy_replay(repeats):
            start, end = cupy.cuda.Event(), cupy.cuda.Event()
            cupy.cuda.Device().synchronize()
            start.record(stream)
            for _ in range(repeats):
                cgraph.launch(stream)
            end.record(stream)
            end.synchronize()
            return cupy.cuda.get_elapsed_time(start, end)

    except ImportError as e:
        say("graph.cupy_skipped", str(e))

    repeats = 50
    ours, theirs, host = [], [], []
    for _ in range(rounds):
        ours.append(gpu_ms(torch, graph.replay, repeats) * 1e3 / (repeats * LAUNCHES))
        if cupy_replay is not None:
            theirs.append(cupy_replay(repeats) * 1e3 / (repeats * LAUNCHES))
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(repeats):
            graph.replay()
        host.append((time.perf_counter() - t) * 1e6 / repeats)
        torch.cuda.synchronize()
    say("graph.kernelkit_us_per_launch", statistics.median(ours), f"{LAUNCHES} launches per graph")
    if theirs:
        say("graph.cupy_us_per_launch", statistics.median(theirs), "target: kernelkit <= this")
        say("graph.ratio", statistics.median(ours) / statistics.median(theirs))
    say("graph.kernelkit_host_us_per_replay", statistics.median(host), "torch + driver only")


def grid_sample(torch, rounds):
    from kernelkit import _grid_sample

    sample, _ = _grid_sample.torch_ops("kkbench_gs")
    gen = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(8, 64, 64, 32, device="cuda", generator=gen)
    g = torch.rand(8, 128, 128, 2, device="cuda", generator=gen) * 2 - 1
    cot = torch.randn(8, 128, 128, 32, device="cuda", generator=gen)

    def torch_forward(x, g):
        out = torch.nn.functional.grid_sample(x.permute(0, 3, 1, 2), g, align_corners=False)
        return out.permute(0, 2, 3, 1)

    xs = [x.clone().requires_grad_() for _ in range(2)]
    gs = [g.clone().requires_grad_() for _ in range(2)]
    ours_out = sample(xs[0], gs[0])
    theirs_out = torch_forward(xs[1], gs[1])
    diff = (ours_out - theirs_out).abs().max().item()
    say("grid_sample.forward_max_abs_diff", float(diff))
    ours_bwd = lambda: torch.autograd.grad(ours_out, (xs[0], gs[0]), cot, retain_graph=True)  # noqa: E731
    theirs_bwd = lambda: torch.autograd.grad(theirs_out, (xs[1], gs[1]), cot, retain_graph=True)  # noqa: E731
    gx0, gg0 = ours_bwd()
    gx1, gg1 = theirs_bwd()
    say("grid_sample.x_grad_max_abs_diff", float((gx0 - gx1).abs().max().item()))
    say("grid_sample.grid_grad_max_rel_diff", float(((gg0 - gg1).abs().max() / gg1.abs().max()).item()))
    with torch.no_grad():
        fwd = [lambda: sample(x, g), lambda: torch_forward(x, g)]
        times = {"kernelkit_forward_us": [], "torch_forward_us": []}
        for _ in range(rounds):
            times["kernelkit_forward_us"].append(gpu_ms(torch, fwd[0], 20) * 1e3 / 20)
            times["torch_forward_us"].append(gpu_ms(torch, fwd[1], 20) * 1e3 / 20)
    times["kernelkit_backward_us"] = []
    times["torch_backward_us"] = []
    for _ in range(rounds):
        times["kernelkit_backward_us"].append(gpu_ms(torch, ours_bwd, 20) * 1e3 / 20)
        times["torch_backward_us"].append(gpu_ms(torch, theirs_bwd, 20) * 1e3 / 20)
    for name, values in times.items():
        say(f"grid_sample.{name}", statistics.median(values))
    say(
        "grid_sample.backward_speedup",
        statistics.median(times["torch_backward_us"]) / statistics.median(times["kernelkit_backward_us"]),
        "torch / kernelkit",
    )


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--json")
    a = ap.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("torch_native: skipped (torch sees no CUDA device)")
        return 0
    import kernelkit as kk
    import kernelkit.torch as kkt

    print(f"torch {torch.__version__}, kernelkit {kk.__version__}, {torch.cuda.get_device_name()}")
    failed = []
    for name, run in (
        ("explain", lambda: explain(torch, kk, kkt)),
        ("graph", lambda: graphs(torch, kk, a.rounds)),
        ("grid_sample", lambda: grid_sample(torch, a.rounds)),
    ):
        try:
            run()
        except Exception as e:  # report every part, then fail
            failed.append(name)
            print(f"torch_native.{name}: FAILED: {type(e).__name__}: {e}", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(RESULTS, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
