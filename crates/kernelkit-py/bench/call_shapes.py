"""The same warm call spelled every way MLX users write it (issue 42), each
beside CuPy's equivalent and the raw launch, in ONE process, interleaved,
medians. Prints ``name = value`` lines (µs per call: host time of a batch of
calls, no synchronize inside a batch; the device is synchronized, untimed,
between batches), the route each spelling took
(``kernelkit._testing.call_routes``: ``repeat`` is the one-pass torch
route, ``parsed`` must stay 0 for a warm call), ``target ...`` lines with
``met`` or ``MISSED``, and a JSON summary (``--json PATH``).

GPU (torch tensors, ``--n`` floats, a trivial ``y = x + 1`` kernel):

- ``gpu.out.*``: ``out=`` calls: ``benchmark`` (``k(inputs=[x], grid=g,
  threadgroup=tg, out=[y])``, compare.py's), ``template`` (the same with
  ``template=[("K", 1)]``), ``template_dict`` (``template={"K": 1}``),
  ``shapes_dtypes`` (prebuilt ``output_shapes=sh, output_dtypes=dt``, as
  MLX requires both), ``literals`` (``grid=(N, 1, 1), threadgroup=(256, 1,
  1), output_shapes=[x.shape], output_dtypes=[torch.float32]`` written in
  the call), ``names`` (``output_dtypes=["float32"]``), ``stream``
  (``stream=`` torch's current stream object);
- ``gpu.donate``: ``x += 1`` as a kernel, ``donate={"y": "x"}``;
- ``gpu.alloc.*``: allocating calls, ``prebuilt`` (``output_shapes=sh,
  output_dtypes=dt``) and ``literals``;
- ``gpu.cupy.*``: kernelkit on CuPy arrays (``out=`` and allocating);
- baselines: ``gpu.raw_launch`` (``cuLaunchKernel`` of the same CUDA
  function, loaded by CuPy, arguments marshalled once: the floor),
  ``gpu.cupy_rawkernel`` (CuPy ``RawKernel`` into a preallocated array) and
  ``gpu.cupy_alloc`` (``cupy.empty_like`` + ``RawKernel``).

CPU (NumPy arrays, kernelkit's CPU device, ``--cpu-n`` floats): the same
rows as ``cpu.*`` beside NumPy's own ``np.add(x, 1, out=y)``
(``cpu.numpy_out``) and ``x + 1`` (``cpu.numpy_alloc``). Runs anywhere
(``--only cpu``).

Targets (the GPU's; issue 42): every ``out=`` spelling within 0.5 µs of
``benchmark`` and at or below ``cupy_rawkernel``, and <= raw + 1.0 µs;
every allocating spelling within 0.5 µs of ``prebuilt`` and below
``cupy_alloc``; ``donate`` <= ``out.benchmark`` (+0.2 µs of noise).

Usage: python call_shapes.py [--rounds 5] [--batch 10000] [--n 65536]
       [--only cpu|gpu] [--json out.json]
"""

import argparse
import json
import statistics
import sys
import time

RESULTS = {}
ROUTES = {}


def say(name, value, note=""):
    RESULTS[name] = value
    text = f"{value:.3f}" if isinstance(value, float) else str(value)
    print(f"{name} = {text}{('  # ' + note) if note else ''}", flush=True)


def routes_of(candidates, hooks):
    """The routes one warm call of each candidate takes."""
    if hooks is None:
        return
    for name, f in candidates.items():
        before = hooks.call_routes()
        f()
        after = hooks.call_routes()
        taken = {r: after[r] - before[r] for r in after if after[r] != before[r]}
        if taken:
            ROUTES[name] = taken
            say(f"{name}.routes", ",".join(f"{r}:{n}" for r, n in sorted(taken.items())))


def timed(candidates, rounds, batch, sync):
    """Medians of `rounds` interleaved batches of each candidate (µs)."""
    samples = {name: [] for name in candidates}
    for _ in range(rounds):
        for name, f in candidates.items():
            sync()
            t0 = time.perf_counter()
            for _ in range(batch):
                f()
            t1 = time.perf_counter()
            samples[name].append((t1 - t0) / batch * 1e6)
    sync()
    for name, s in samples.items():
        say(name, statistics.median(s), f"min {min(s):.3f}")


CUDA_SOURCE = r"""
extern "C" __global__ void add_one(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] + 1.0f;
}
"""


def raw_launcher(cupy, fn, x_ptr, y_ptr, n, stream_ptr):
    """cuLaunchKernel of a resolved function, arguments marshalled once
    (CuPy's Cython ``launchKernel`` where it has one, else ctypes)."""
    import ctypes

    a, b, c = ctypes.c_uint64(x_ptr), ctypes.c_uint64(y_ptr), ctypes.c_int(n)
    params = (ctypes.c_void_p * 3)(ctypes.addressof(a), ctypes.addressof(b), ctypes.addressof(c))
    params_ptr = ctypes.addressof(params)
    blocks = (n + 255) // 256
    launch = getattr(cupy.cuda.driver, "launchKernel", None)
    if launch is not None:
        def go():
            launch(fn, blocks, 1, 1, 256, 1, 1, 0, stream_ptr, params_ptr, 0)
    else:
        libcuda = ctypes.CDLL("libcuda.so.1")
        cu = libcuda.cuLaunchKernel
        cu.restype = ctypes.c_int
        cu.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
        func, stream = ctypes.c_void_p(fn), ctypes.c_void_p(stream_ptr)

        def go():
            if cu(func, blocks, 1, 1, 256, 1, 1, 0, stream, params_ptr, None):
                raise RuntimeError("cuLaunchKernel failed")
    go.keep = (a, b, c, params)
    return go


def gpu(rounds, batch, n, hooks):
    import torch

    import kernelkit as kk

    if not torch.cuda.is_available():
        say("gpu.absent", "torch sees no CUDA device")
        return
    N = n
    body = "int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < {n}) y[i] = x[i] + {k};"
    k = kk.cuda_kernel(name="cs_add_one", input_names=["x"], output_names=["y"], source=body.format(n=N, k="1.0f"))
    kt = kk.cuda_kernel(name="cs_add_k", input_names=["x"], output_names=["y"], source=body.format(n=N, k="K"))
    x = torch.arange(N, dtype=torch.float32, device="cuda")
    y = torch.empty_like(x)
    d = torch.zeros_like(x)  # the donated one: += 1 at every call
    g, tg = (N, 1, 1), (256, 1, 1)
    sh, dt = [x.shape], [x.dtype]
    stream = torch.cuda.current_stream()
    c = {
        "gpu.out.benchmark": lambda: k(inputs=[x], grid=g, threadgroup=tg, out=[y]),
        "gpu.out.template": lambda: kt(inputs=[x], grid=g, threadgroup=tg, template=[("K", 1)], out=[y]),
        "gpu.out.template_dict": lambda: kt(inputs=[x], grid=g, threadgroup=tg, template={"K": 1}, out=[y]),
        "gpu.out.shapes_dtypes": lambda: k(inputs=[x], grid=g, threadgroup=tg, output_shapes=sh,
                                           output_dtypes=dt, out=[y]),
        "gpu.out.literals": lambda: k(inputs=[x], grid=(N, 1, 1), threadgroup=(256, 1, 1),
                                      output_shapes=[x.shape], output_dtypes=[torch.float32], out=[y]),
        "gpu.out.names": lambda: k(inputs=[x], grid=(N, 1, 1), threadgroup=(256, 1, 1),
                                   output_shapes=[x.shape], output_dtypes=["float32"], out=[y]),
        "gpu.out.stream": lambda: k(inputs=[x], grid=g, threadgroup=tg, out=[y], stream=stream),
        "gpu.donate": lambda: k(inputs=[d], grid=g, threadgroup=tg, donate={"y": "x"}),
        "gpu.alloc.prebuilt": lambda: k(inputs=[x], grid=g, threadgroup=tg, output_shapes=sh, output_dtypes=dt),
        "gpu.alloc.literals": lambda: k(inputs=[x], grid=(N, 1, 1), threadgroup=(256, 1, 1),
                                        output_shapes=[x.shape], output_dtypes=[torch.float32]),
    }
    # The caller's own cost of each spelling: the same arguments built and
    # passed to a Python function that does nothing (what any library
    # called this way pays before it runs a line), same run, to read
    # kernelkit's own share of each row apart.
    def noop(**_):
        return None

    c.update({
        "gpu.caller_out.benchmark": lambda: noop(inputs=[x], grid=g, threadgroup=tg, out=[y]),
        "gpu.caller_out.literals": lambda: noop(inputs=[x], grid=(N, 1, 1), threadgroup=(256, 1, 1),
                                                output_shapes=[x.shape], output_dtypes=[torch.float32], out=[y]),
        "gpu.caller_out.names": lambda: noop(inputs=[x], grid=(N, 1, 1), threadgroup=(256, 1, 1),
                                             output_shapes=[x.shape], output_dtypes=["float32"], out=[y]),
        "gpu.caller_alloc.prebuilt": lambda: noop(inputs=[x], grid=g, threadgroup=tg, output_shapes=sh,
                                                  output_dtypes=dt),
        "gpu.caller_alloc.literals": lambda: noop(inputs=[x], grid=(N, 1, 1), threadgroup=(256, 1, 1),
                                                  output_shapes=[x.shape], output_dtypes=[torch.float32]),
    })
    try:
        import cupy

        cx = cupy.asarray(x)
        cy = cupy.empty_like(cx)
        raw = cupy.RawKernel(CUDA_SOURCE, "add_one")
        n32, blocks, threads = cupy.int32(N), ((N + 255) // 256,), (256,)

        def cupy_alloc():
            out = cupy.empty_like(cx)
            raw(blocks, threads, (cx, out, n32))
            return out

        c["gpu.cupy_rawkernel"] = lambda: raw(blocks, threads, (cx, cy, n32))
        c["gpu.cupy_alloc"] = cupy_alloc
        c["gpu.cupy.out"] = lambda: k(inputs=[cx], grid=g, threadgroup=tg, out=[cy])
        c["gpu.cupy.alloc"] = lambda: k(inputs=[cx], grid=(N, 1, 1), threadgroup=(256, 1, 1),
                                        output_shapes=[cx.shape], output_dtypes=[cx.dtype])
        fn = cupy.RawModule(code=CUDA_SOURCE).get_function("add_one")
        c["gpu.raw_launch"] = raw_launcher(cupy, getattr(fn, "kernel", fn).ptr, x.data_ptr(), y.data_ptr(), N,
                                           stream.cuda_stream)
    except Exception as e:  # noqa: BLE001
        say("gpu.cupy_absent", repr(e)[:200])
    for f in c.values():  # compile, load and keep every layout
        f()
    torch.cuda.synchronize()
    assert torch.equal(y, x + 1), "kernelkit's out= result is wrong"
    (fresh,) = c["gpu.alloc.literals"]()
    torch.cuda.synchronize()
    assert torch.equal(fresh, x + 1)
    routes_of({name: f for name, f in c.items()
               if ".cupy_" not in name and "raw_launch" not in name and ".caller_" not in name}, hooks)
    timed(c, rounds, batch, torch.cuda.synchronize)


def cpu(rounds, batch, n, hooks):
    import numpy as np

    import kernelkit as kk

    N = n
    body = "uint i = thread_position_in_grid.x; y[i] = x[i] + {k};"
    k = kk.metal_kernel(name="cs_cpu_add_one", input_names=["x"], output_names=["y"], source=body.format(k="1.0f"))
    kt = kk.metal_kernel(name="cs_cpu_add_k", input_names=["x"], output_names=["y"], source=body.format(k="K"))
    x = np.arange(N, dtype=np.float32)
    y = np.empty_like(x)
    d = np.zeros_like(x)
    g, tg = (N, 1, 1), (256, 1, 1)
    sh, dt = [x.shape], [x.dtype]
    c = {
        "cpu.out.benchmark": lambda: k(inputs=[x], grid=g, threadgroup=tg, out=[y]),
        "cpu.out.template": lambda: kt(inputs=[x], grid=g, threadgroup=tg, template=[("K", 1)], out=[y]),
        "cpu.out.template_dict": lambda: kt(inputs=[x], grid=g, threadgroup=tg, template={"K": 1}, out=[y]),
        "cpu.out.shapes_dtypes": lambda: k(inputs=[x], grid=g, threadgroup=tg, output_shapes=sh,
                                           output_dtypes=dt, out=[y]),
        "cpu.out.literals": lambda: k(inputs=[x], grid=(N, 1, 1), threadgroup=(256, 1, 1),
                                      output_shapes=[x.shape], output_dtypes=[np.float32], out=[y]),
        "cpu.out.names": lambda: k(inputs=[x], grid=(N, 1, 1), threadgroup=(256, 1, 1),
                                   output_shapes=[x.shape], output_dtypes=["float32"], out=[y]),
        "cpu.out.stream": lambda: k(inputs=[x], grid=g, threadgroup=tg, out=[y], stream=kk.cpu),
        "cpu.donate": lambda: k(inputs=[d], grid=g, threadgroup=tg, donate={"y": "x"}),
        "cpu.alloc.prebuilt": lambda: k(inputs=[x], grid=g, threadgroup=tg, output_shapes=sh, output_dtypes=dt),
        "cpu.alloc.literals": lambda: k(inputs=[x], grid=(N, 1, 1), threadgroup=(256, 1, 1),
                                        output_shapes=[x.shape], output_dtypes=[np.float32]),
        "cpu.numpy_out": lambda: np.add(x, 1, out=y),
        "cpu.numpy_alloc": lambda: x + 1,
    }
    for f in c.values():
        f()
    assert np.array_equal(y, x + 1), "kernelkit's out= result is wrong"
    where = d.__array_interface__["data"][0]
    (same,) = c["cpu.donate"]()
    assert same is d and d.__array_interface__["data"][0] == where, "the donated array was not written in place"
    routes_of({name: f for name, f in c.items() if "numpy_" not in name}, hooks)
    timed(c, rounds, batch, lambda: None)


def verdicts():
    r = RESULTS

    def line(name, value, baseline, met, note):
        print(f"target {name}: {value:.3f} vs {baseline:.3f} -> {'met' if met else 'MISSED'}  # {note}",
              flush=True)
        RESULTS[f"target.{name}"] = "met" if met else "MISSED"

    best = r.get("gpu.out.benchmark")
    if best is None:
        return
    raw, cupy_out, cupy_alloc = r.get("gpu.raw_launch"), r.get("gpu.cupy_rawkernel"), r.get("gpu.cupy_alloc")
    for name in sorted(k for k in r if k.startswith("gpu.out.") and isinstance(r[k], float)):
        v = r[name]
        line(f"{name}_vs_benchmark", v, best, v <= best + 0.5, "within 0.5 us of the benchmark's spelling")
        if cupy_out is not None:
            line(f"{name}_vs_cupy", v, cupy_out, v <= cupy_out, "at or below CuPy RawKernel (preallocated)")
        if raw is not None:
            line(f"{name}_vs_raw", v, raw, v <= raw + 1.0, "<= raw cuLaunchKernel + 1.0 us")
    prebuilt = r.get("gpu.alloc.prebuilt")
    for name in sorted(k for k in r if k.startswith("gpu.alloc.") and isinstance(r[k], float)):
        v = r[name]
        line(f"{name}_vs_prebuilt", v, prebuilt, v <= prebuilt + 0.5, "within 0.5 us of prebuilt arguments")
        if cupy_alloc is not None:
            line(f"{name}_vs_cupy", v, cupy_alloc, v < cupy_alloc, "below CuPy empty_like + RawKernel")
    # kernelkit's own share of a spelling's extra cost: the row minus what
    # building the same arguments costs the caller (a no-op call, same run).
    for kind, base in (("out", "benchmark"), ("alloc", "prebuilt")):
        own_base = r.get(f"gpu.{kind}.{base}", 0.0) - r.get(f"gpu.caller_{kind}.{base}", 0.0)
        for name in sorted(k for k in r if k.startswith(f"gpu.caller_{kind}.") and isinstance(r[k], float)):
            row = name.replace(f"caller_{kind}", kind)
            if row not in r or row.endswith(base):
                continue
            own = r[row] - r[name]
            line(f"{row}_own_vs_{base}_own", own, own_base, own <= own_base + 0.5,
                 "kernelkit's own cost (the row minus the caller's no-op call with the same arguments) "
                 f"within 0.5 us of the {base} spelling's")
    if "gpu.donate" in r:
        line("gpu.donate_vs_out", r["gpu.donate"], best, r["gpu.donate"] <= best + 0.2,
             "a donated in-place call costs no more than the out= call (0.2 us of noise)")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--batch", type=int, default=10000)
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
    verdicts()
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"results": RESULTS, "routes": ROUTES}, f, indent=1)


if __name__ == "__main__":
    main()
