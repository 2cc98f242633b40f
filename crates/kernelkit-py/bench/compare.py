"""kernelkit from Python against raw launches, CuPy and Triton, in ONE
process, interleaved, medians (issue 16's targets). Prints ``name = value``
lines and a JSON summary (``--json PATH``).

Figures (µs per call, host time of a batch of calls, no synchronize inside
a batch; the GPU is synchronized, untimed, between batches):

- ``warm_out.kernelkit_us``: a trivial kernel on torch tensors with
  ``out=`` (no allocation), against ``warm_out.raw_launch_us``, the floor:
  ``cuLaunchKernel`` of the same CUDA function (loaded by CuPy; its handle is
  ``RawKernel.kernel.ptr``: a ``RawKernel`` has no ``ptr`` of its own),
  arguments marshalled once, called through CuPy's Cython
  ``cupy.cuda.driver.launchKernel`` (else ctypes on ``libcuda``): the least
  a Python caller pays for a launch. Also ``warm_out.cupy_rawkernel_us``
  (a CuPy ``RawKernel`` launch into a preallocated output), and, where
  the kernel is the package's vectorcall ``Kernel`` (Python 3.12 on),
  ``warm_out.kernelkit_tpcall_us``: the same call of the extension's own
  object (``k.native``), whose keywords come as a dict (the difference is
  what the ``Kernel`` saves), and ``warm_out.kernelkit_method_us``: through
  PyO3's ``call`` method, which the package's call entry stands in for
  (``warm_out.entry_saves_us``). Target: kernelkit <= raw + 1.5 us.
- ``warm_alloc.kernelkit_us`` (torch in, ``torch.empty`` out) against
  ``warm_alloc.cupy_us`` (``cupy.empty_like`` + ``RawKernel``),
  ``warm_alloc.triton_us`` (a trivial ``@triton.jit`` kernel into
  ``torch.empty_like``) and ``warm_alloc.mlx_us`` (MLX's
  ``mx.fast.cuda_kernel`` with ``mx.async_eval``, where MLX's CUDA build
  imports). Target: kernelkit fastest.
- ``parallel.*``: 16 Python threads calling 16 distinct cold kernels,
  wall time, against one cold compile of the same kind, measured in turns
  in a fresh process per mode: ``workers`` (what the package does by
  itself: its own interpreter as compile worker), ``workers_cli``
  (``KERNELKIT_WORKER`` names the CLI, with ``--worker``) and
  ``in_process`` (``KERNELKIT_COMPILE_WORKERS=0``). Target: <= 1.5x.
- ``import.kernelkit_ms``: ``import kernelkit`` in a fresh interpreter,
  median of several. Target: <= 50 ms.

``breakdown.*``: the torch operations a call makes, each alone (µs).

The last lines, ``target ...``, give each target with its value, its
baseline, the ratio and ``met`` or ``MISSED``.

Usage: python compare.py [--rounds 15] [--batch 200] [--json out.json]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
import uuid

N = 1024
RESULTS = {}


PREFIX = ""  # --label: "LABEL." before every figure's name (a second build's run)


def say(name, value, note=""):
    name = PREFIX + name
    RESULTS[name] = value
    text = f"{value:.3f}" if isinstance(value, float) else str(value)
    print(f"{name} = {text}{('  # ' + note) if note else ''}", flush=True)


def import_time(repeats=7):
    times = []
    for _ in range(repeats):
        code = "import time; t = time.perf_counter(); import kernelkit; print(time.perf_counter() - t)"
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        times.append(float(done.stdout.strip()) * 1e3)
    say("import.kernelkit_ms", statistics.median(times), f"min {min(times):.1f} (target <= 50)")


CUDA_SOURCE = r"""
extern "C" __global__ void add_one(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] + 1.0f;
}
"""


def raw_launcher(cupy, fn, x_ptr, y_ptr, stream_ptr):
    """cuLaunchKernel of a resolved function (CuPy's), its arguments
    marshalled once: through ``cupy.cuda.driver.launchKernel`` (Cython)
    where CuPy has it, else ctypes. Returns the launcher and how."""
    import ctypes

    a, b, n = ctypes.c_uint64(x_ptr), ctypes.c_uint64(y_ptr), ctypes.c_int(N)
    params = (ctypes.c_void_p * 3)(ctypes.addressof(a), ctypes.addressof(b), ctypes.addressof(n))
    params_ptr = ctypes.addressof(params)
    keep = (a, b, n, params)
    launch = getattr(cupy.cuda.driver, "launchKernel", None)
    if launch is not None:
        def go():
            launch(fn, N // 256, 1, 1, 256, 1, 1, 0, stream_ptr, params_ptr, 0)

        how = "cupy.cuda.driver.launchKernel"
    else:
        libcuda = ctypes.CDLL("libcuda.so.1")
        cu_launch = libcuda.cuLaunchKernel
        cu_launch.restype = ctypes.c_int
        cu_launch.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [
            ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
        func, stream = ctypes.c_void_p(fn), ctypes.c_void_p(stream_ptr)

        def go():
            rc = cu_launch(func, N // 256, 1, 1, 256, 1, 1, 0, stream, params_ptr, None)
            if rc:
                raise RuntimeError(f"cuLaunchKernel: {rc}")

        how = "ctypes libcuda.cuLaunchKernel"
    go.keep = keep
    return go, how


AS_IS = (lambda: None, lambda: None)  # a candidate timed without a setting around it


def warm(rounds, batch):
    import torch

    import kernelkit as kk

    x = torch.arange(N, dtype=torch.float32, device="cuda")
    y = torch.empty_like(x)
    k = kk.cuda_kernel(name="add_one_kk", input_names=["x"], output_names=["y"],
                       source="int i = blockIdx.x * blockDim.x + threadIdx.x; y[i] = x[i] + 1.0f;")
    grid, tg = (N, 1, 1), (256, 1, 1)
    shapes, dtypes = [x.shape], [x.dtype]
    candidates = {}
    candidates["warm_out.kernelkit_us"] = lambda: k(inputs=[x], grid=grid, threadgroup=tg, out=[y])
    candidates["warm_alloc.kernelkit_us"] = lambda: k(inputs=[x], grid=grid, threadgroup=tg,
                                                      output_shapes=shapes, output_dtypes=dtypes)
    if hasattr(k, "native"):  # the same call through the extension object's tp_call
        candidates["warm_out.kernelkit_tpcall_us"] = lambda: k.native(inputs=[x], grid=grid, threadgroup=tg,
                                                                      out=[y])
        # ... and through PyO3's `call` method (vectorcall, PyO3's parsing),
        # which the package's call entry stands in for.
        method = k.native.call
        candidates["warm_out.kernelkit_method_us"] = lambda: method(inputs=[x], grid=grid, threadgroup=tg, out=[y])
    # The same calls reading tensors through their methods (the shim off:
    # what a torch without torch's C functions gets), for the difference.
    try:
        from kernelkit import _testing as hooks
    except ImportError:  # a build from before the hooks' submodule
        hooks = None
    around = {}  # name: (before its batches, after them)
    shim = hooks.torch_shim() if hooks else False
    say("warm.torch_shim", shim, "tensors read through torch's C functions")
    if shim:
        for name in ("warm_out", "warm_alloc"):
            candidates[f"{name}.kernelkit_methods_us"] = candidates[f"{name}.kernelkit_us"]
            around[f"{name}.kernelkit_methods_us"] = (lambda: hooks.torch_shim(False),
                                                      lambda: hooks.torch_shim(True))
    stream_ptr = torch.cuda.current_stream().cuda_stream
    try:
        import cupy

        raw = cupy.RawKernel(CUDA_SOURCE, "add_one")
        cx = cupy.asarray(x)  # the same memory (CUDA array interface)
        cy = cupy.empty_like(cx)
        n32 = cupy.int32(N)
        blocks, threads = (N // 256,), (256,)
        raw(blocks, threads, (cx, cy, n32))
        candidates["warm_out.cupy_rawkernel_us"] = lambda: raw(blocks, threads, (cx, cy, n32))

        def cupy_alloc():
            out = cupy.empty_like(cx)
            raw(blocks, threads, (cx, out, n32))
            return out

        candidates["warm_alloc.cupy_us"] = cupy_alloc
        fn = cupy.RawModule(code=CUDA_SOURCE).get_function("add_one")
        # CuPy's RawModule.get_function gives a RawKernel (newer CuPy) whose
        # driver function is `.kernel` (a cupy.cuda.function.Function with
        # `.ptr`, the CUfunction); older CuPy gives the Function itself.
        fn_ptr = getattr(fn, "kernel", fn).ptr
        go, how = raw_launcher(cupy, fn_ptr, x.data_ptr(), y.data_ptr(), stream_ptr)
        go()
        candidates["warm_out.raw_launch_us"] = go
        say("warm_out.raw_launch_how", how)
    except Exception as e:  # noqa: BLE001
        say("warm.cupy_absent", repr(e)[:200])
    try:
        import triton
        import triton.language as tl

        @triton.jit
        def add_one_triton(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
            i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            m = i < n
            tl.store(y_ptr + i, tl.load(x_ptr + i, mask=m) + 1.0, mask=m)

        tgrid = (N // 256,)

        def triton_alloc():
            out = torch.empty_like(x)
            add_one_triton[tgrid](x, out, N, BLOCK=256)
            return out

        triton_alloc()
        candidates["warm_alloc.triton_us"] = triton_alloc
    except Exception as e:  # noqa: BLE001
        say("warm.triton_absent", repr(e)[:200])
    try:
        import mlx.core as mx

        mk = mx.fast.cuda_kernel(name="add_one_mlx", input_names=["x"], output_names=["y"],
                                 source="int i = blockIdx.x * blockDim.x + threadIdx.x; y[i] = x[i] + 1.0f;")
        mxx = mx.arange(N, dtype=mx.float32)
        mx.eval(mxx)

        def mlx_alloc():
            (out,) = mk(inputs=[mxx], grid=(N, 1, 1), threadgroup=(256, 1, 1),
                        output_shapes=[(N,)], output_dtypes=[mx.float32])
            mx.async_eval(out)
            return out

        mx.eval(mlx_alloc())
        candidates["warm_alloc.mlx_us"] = mlx_alloc
    except Exception as e:  # noqa: BLE001
        say("warm.mlx_absent", repr(e)[:200])
    # Correctness once, then warm-up.
    for name, f in candidates.items():
        enter, leave = around.get(name, AS_IS)
        enter()
        f()
        leave()
    torch.cuda.synchronize()
    assert torch.equal(y, x + 1), "kernelkit's out= result is wrong"
    (fresh,) = candidates["warm_alloc.kernelkit_us"]()
    torch.cuda.synchronize()
    assert torch.equal(fresh, x + 1) and fresh.device == x.device
    samples = {name: [] for name in candidates}
    for _ in range(rounds):  # interleaved: every candidate once per round
        for name, f in candidates.items():
            enter, leave = around.get(name, AS_IS)
            enter()
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(batch):
                f()
            t1 = time.perf_counter()
            leave()
            samples[name].append((t1 - t0) / batch * 1e6)
    torch.cuda.synchronize()
    for name, s in samples.items():
        say(name, statistics.median(s), f"min {min(s):.3f}")
    breakdown(torch, x, batch)
    if PREFIX + "warm_out.raw_launch_us" in RESULTS:
        say("warm_out.over_raw_us", RESULTS[PREFIX + "warm_out.kernelkit_us"] - RESULTS[PREFIX + "warm_out.raw_launch_us"],
            "target <= 1.5")
        if PREFIX + "warm_out.kernelkit_tpcall_us" in RESULTS:
            say("warm_out.vectorcall_saves_us",
                RESULTS[PREFIX + "warm_out.kernelkit_tpcall_us"] - RESULTS[PREFIX + "warm_out.kernelkit_us"],
                "the package's Kernel against the extension object's tp_call")
        if PREFIX + "warm_out.kernelkit_method_us" in RESULTS:
            say("warm_out.entry_saves_us",
                RESULTS[PREFIX + "warm_out.kernelkit_method_us"] - RESULTS[PREFIX + "warm_out.kernelkit_us"],
                "the call entry against PyO3's call method")
        if PREFIX + "warm_out.kernelkit_methods_us" in RESULTS:
            say("warm_out.methods_over_raw_us",
                RESULTS[PREFIX + "warm_out.kernelkit_methods_us"] - RESULTS[PREFIX + "warm_out.raw_launch_us"],
                "the shim off")
    if PREFIX + "warm_alloc.mlx_us" not in RESULTS:
        say("warm_alloc.note", "MLX cuda_kernel not measured: MLX's CUDA build does not import here "
            "(scripts/mlx-cuda-parts.sh and gpu-remote.sh's mlx step carry it)")


def breakdown(torch, x, batch):
    """What the torch operations a warm call makes cost alone (µs each,
    medians): where the Python layer's time goes on this machine."""
    dev = x.get_device()
    shape = tuple(x.shape)
    raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    ops = {
        "data_ptr": lambda: x.data_ptr(),
        "stride": lambda: x.stride(),
        "shape": lambda: x.shape,
        "dtype": lambda: x.dtype,
        "get_device": lambda: x.get_device(),
        "torch_empty_kwargs": lambda: torch.empty(shape, dtype=x.dtype, device=dev),
        "new_empty": lambda: x.new_empty(shape),
        "empty_like": lambda: torch.empty_like(x),
        "current_stream_object": lambda: torch.cuda.current_stream(dev).cuda_stream,
    }
    if raw_stream is not None:
        ops["current_raw_stream"] = lambda: raw_stream(dev)
    to_dlpack = getattr(torch._C, "_to_dlpack", None)
    if to_dlpack is not None:
        # One C call that returns data, shape, strides and device at once
        # (a DLPack capsule): what reading a tensor could cost instead of
        # five attribute and method calls.
        ops["to_dlpack"] = lambda: to_dlpack(x)
    samples = {name: [] for name in ops}
    for _ in range(7):
        for name, f in ops.items():
            t0 = time.perf_counter()
            for _ in range(batch):
                f()
            samples[name].append((time.perf_counter() - t0) / batch * 1e6)
    torch.cuda.synchronize()
    for name, s in samples.items():
        say(f"breakdown.{name}_us", statistics.median(s))
    per_tensor = sum(RESULTS[f"{PREFIX}breakdown.{n}_us"] for n in ("data_ptr", "stride", "shape", "dtype", "get_device"))
    say("breakdown.read_one_tensor_us", per_tensor, "data_ptr + stride + shape + dtype + get_device")


# The cold kernels of the burst: `fresh(tag)` is a kernel no one compiled,
# `call(k)` runs it once on a torch tensor.
COLD_KERNELS = r"""
import json, sys, threading, time, uuid
import torch, kernelkit as kk
x = torch.ones(1024, device="cuda")
torch.cuda.synchronize()
def fresh(tag):
    src = "uint i = thread_position_in_grid.x; out[i] = inp[i] * 2.0f + %d.0f; /* %s */" % (len(tag), tag)
    return kk.metal_kernel(name="cold_" + tag[:8], input_names=["inp"], output_names=["out"], source=src)
def call(k):
    (y,) = k(inputs=[x], grid=(1024, 1, 1), threadgroup=(256, 1, 1), output_shapes=[x.shape], output_dtypes=[x.dtype])
    return y
def burst(ks):
    # One thread per kernel, released at once; seconds until all ran.
    barrier = threading.Barrier(len(ks) + 1)
    def work(k):
        barrier.wait(); call(k)
    threads = [threading.Thread(target=work, args=(k,)) for k in ks]
    for th in threads: th.start()
    barrier.wait(); t = time.perf_counter()
    for th in threads: th.join()
    torch.cuda.synchronize()
    return time.perf_counter() - t
"""

PARALLEL_CHILD = COLD_KERNELS + r"""
call(fresh(uuid.uuid4().hex))  # the device, NVRTC and the workers started
torch.cuda.synchronize()
# The first compile starts the compile workers in the background
# (KERNELKIT_START_WORKERS=first, the default): let them finish starting, so
# that the single compile below is measured on a quiet machine, not beside
# 16 starting processes.
time.sleep(float(sys.argv[2]) if len(sys.argv) > 2 else 3.0)
single, parallel = [], []
for _ in range(int(sys.argv[1])):
    k = fresh(uuid.uuid4().hex)
    t = time.perf_counter(); call(k); torch.cuda.synchronize(); single.append(time.perf_counter() - t)
    parallel.append(burst([fresh(uuid.uuid4().hex) for _ in range(16)]))
print(json.dumps({"single": single, "parallel": parallel}))
"""


def parallel(turns, worker, only=None):
    # `workers`: the package as installed, nothing set (its own interpreter
    # serves as the compile worker); `workers_cli`: the CLI named.
    modes = {"workers": {}}
    if worker:
        modes["workers_cli"] = {"KERNELKIT_WORKER": worker}
    modes["in_process"] = {"KERNELKIT_COMPILE_WORKERS": "0"}
    if only:
        modes = {m: e for m, e in modes.items() if m in only}
    for mode, extra in modes.items():
        env = dict(os.environ, KERNELKIT_CACHE="memory", **extra)
        if mode == "workers":
            env.pop("KERNELKIT_WORKER", None)
            env.pop("KERNELKIT_COMPILE_WORKERS", None)
        done = subprocess.run([sys.executable, "-c", PARALLEL_CHILD, str(turns)], env=env,
                              capture_output=True, text=True, timeout=400)
        if done.returncode != 0:
            say(f"parallel.{mode}.error", done.stderr.strip()[-400:])
            continue
        d = json.loads(done.stdout.strip().splitlines()[-1])
        single = statistics.median(d["single"]) * 1e3
        wall = statistics.median(d["parallel"]) * 1e3
        say(f"parallel.{mode}.one_cold_ms", single)
        say(f"parallel.{mode}.sixteen_threads_ms", wall)
        say(f"parallel.{mode}.ratio", wall / single, "target <= 1.5 (MLX CUDA: 0.91x of serial = 14.6x)")


def verdicts():
    """One line per target: value, baseline, ratio, met or MISSED."""
    r = {k[len(PREFIX):]: v for k, v in RESULTS.items() if k.startswith(PREFIX)}

    def line(name, value, baseline, ratio, met, note=""):
        if value is None or baseline is None:
            print(f"target {PREFIX}{name}: not measured{('  # ' + note) if note else ''}", flush=True)
            return
        verdict = "met" if met else "MISSED"
        RESULTS[f"{PREFIX}target.{name}"] = verdict
        print(f"target {PREFIX}{name}: {value:.3f} vs {baseline:.3f} (ratio {ratio:.3f}) -> {verdict}"
              f"{('  # ' + note) if note else ''}", flush=True)

    k, raw = r.get("warm_out.kernelkit_us"), r.get("warm_out.raw_launch_us")
    line("warm_out_us", k, raw, (k / raw) if k and raw else 0, k is not None and raw is not None
         and k <= raw + 1.5, f"kernelkit vs raw cuLaunchKernel ({r.get('warm_out.raw_launch_how', '?')}); "
         "target <= raw + 1.5 us")
    ka = r.get("warm_alloc.kernelkit_us")
    others = {n: r[f"warm_alloc.{n}_us"] for n in ("cupy", "triton", "mlx") if f"warm_alloc.{n}_us" in r}
    for n, v in others.items():
        line(f"warm_alloc_us_vs_{n}", ka, v, (ka / v) if ka else 0, ka is not None and ka < v,
             "target: faster")
    for n in ("cupy", "triton", "mlx"):
        if n not in others:
            line(f"warm_alloc_us_vs_{n}", None, None, 0, False, f"{n} not measured")
    for mode in ("workers", "workers_cli", "in_process"):
        ratio = r.get(f"parallel.{mode}.ratio")
        if ratio is not None:
            line(f"parallel_{mode}", r[f"parallel.{mode}.sixteen_threads_ms"], r[f"parallel.{mode}.one_cold_ms"],
                 ratio, ratio <= 1.5, "16 threads x 16 cold kernels vs one cold compile (ms); target <= 1.5x"
                 + ("" if mode == "workers" else " (the target is the workers mode's)"))
    imp = r.get("import.kernelkit_ms")
    if imp is not None:
        line("import_ms", imp, 50.0, imp / 50.0, imp <= 50.0, "target <= 50 ms")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--batch", type=int, default=200)
    ap.add_argument("--turns", type=int, default=3)
    ap.add_argument("--worker", default=os.environ.get("KERNELKIT_WORKER"))
    ap.add_argument("--json")
    ap.add_argument("--skip", default="", help="comma-separated: import,warm,parallel")
    ap.add_argument("--label", default="", help="names this run's figures LABEL.<name> (another build)")
    ap.add_argument("--modes", default="", help="comma-separated parallel modes to run (default: all)")
    a = ap.parse_args()
    global PREFIX
    PREFIX = f"{a.label}." if a.label else ""
    skip = set(filter(None, a.skip.split(",")))
    steps = [("import", lambda: import_time()), ("warm", lambda: warm(a.rounds, a.batch)),
             ("parallel", lambda: parallel(a.turns, a.worker, set(filter(None, a.modes.split(",")))))]
    for name, step in steps:
        if name in skip:
            continue
        try:
            step()
        except Exception as e:  # noqa: BLE001
            say(f"{name}.error", repr(e)[:400])
    verdicts()
    if a.json:
        with open(a.json, "w") as f:
            json.dump(RESULTS, f, indent=1)


if __name__ == "__main__":
    main()
