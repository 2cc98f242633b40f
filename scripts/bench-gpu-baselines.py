#!/usr/bin/env python3
"""The GPU baselines of BENCHMARKS.md, measured on the machine that runs
`kernelkit-bench --backend cuda`, so both sets of numbers come from one
machine on one day.

It prints one JSON object (stdout). Every figure is measured in its own
try/except: a missing package or a failing figure becomes an entry in
`errors` and the rest still run. Progress goes to stderr.

Figures (per call times are host times with the launch only enqueued, the
median over samples of `--iters` calls, as `kernelkit-bench` measures them):

  cupy_rawkernel_us            cupy.RawKernel __call__ of a trivial kernel
  cupy_function_call_us        RawModule.get_function(...) __call__ (the same
                               path through a module's function)
  raw_launch_us                cuLaunchKernel of the already-loaded function
                               with its arguments marshalled once (through
                               cupy.cuda.driver.launchKernel, else ctypes on
                               libcuda): the floor
  triton_jit_us                a trivial @triton.jit kernel called with torch
                               tensors
  cupy_compile_ms              NVRTC compile + load of a new trivial kernel in
                               a warm process (CuPy, unique source, median)
  cupy_first_compile_ms        the same, first compile of a fresh process
                               (NVRTC initialisation included)
  cupy_first_call_cold_disk_ms a fresh process, empty CUPY_CACHE_DIR: first
                               call of the trivial kernel (compile + load +
                               launch + sync), after import and context
  cupy_first_call_warm_disk_ms the same process again with the cache that the
                               cold one filled
  cupy_warm_process_ms         the warm child's whole wall time, as the parent
                               sees it (interpreter, imports, context
                               included)

Usage: python3 scripts/bench-gpu-baselines.py [--quick] > gpu-baselines.json
"""

import ctypes
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback

SOURCE = r"""
extern "C" __global__ void kk_trivial(const float* x, float* y) {
  unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  y[i] = x[i] + 3.0f;
}
"""
ELEMENTS = 16


def log(msg):
    print(f"gpu-baselines: {msg}", file=sys.stderr, flush=True)


def per_call_us(call, sync, iters, samples):
    """Median host time per call in µs, the launches only enqueued; the
    stream is drained between samples, outside the timed region."""
    for _ in range(min(iters, 200)):
        call()
    sync()
    values = []
    for _ in range(samples):
        start = time.perf_counter()
        for _ in range(iters):
            call()
        values.append((time.perf_counter() - start) / iters * 1e6)
        sync()
    return statistics.median(values)


def cupy_setup():
    import cupy

    x = cupy.arange(ELEMENTS, dtype=cupy.float32)
    y = cupy.zeros(ELEMENTS, dtype=cupy.float32)
    return cupy, x, y


def check(cupy, y):
    got = float(y[0].get())
    if got != 3.0:
        raise RuntimeError(f"the trivial kernel wrote {got}, expected 3.0")


def fig_cupy_rawkernel(iters, samples):
    cupy, x, y = cupy_setup()
    k = cupy.RawKernel(SOURCE, "kk_trivial")
    k((1,), (1,), (x, y))
    cupy.cuda.Stream.null.synchronize()
    check(cupy, y)
    sync = cupy.cuda.Stream.null.synchronize
    return per_call_us(lambda: k((1,), (1,), (x, y)), sync, iters, samples)


def fig_cupy_function_call(iters, samples):
    cupy, x, y = cupy_setup()
    f = cupy.RawModule(code=SOURCE).get_function("kk_trivial")
    f((1,), (1,), (x, y))
    cupy.cuda.Stream.null.synchronize()
    check(cupy, y)
    sync = cupy.cuda.Stream.null.synchronize
    return per_call_us(lambda: f((1,), (1,), (x, y)), sync, iters, samples)


def fig_raw_launch(iters, samples):
    """cuLaunchKernel of a resolved function, arguments marshalled once."""
    cupy, x, y = cupy_setup()
    f = cupy.RawModule(code=SOURCE).get_function("kk_trivial")
    # kernelParams: an array of pointers to each argument's value.
    xp = ctypes.c_void_p(x.data.ptr)
    yp = ctypes.c_void_p(y.data.ptr)
    params = (ctypes.c_void_p * 2)(ctypes.addressof(xp), ctypes.addressof(yp))
    params_ptr = ctypes.addressof(params)
    stream = cupy.cuda.get_current_stream().ptr
    launch = getattr(cupy.cuda.driver, "launchKernel", None)
    how = "cupy.cuda.driver.launchKernel"
    if launch is not None:
        def call():
            launch(f.ptr, 1, 1, 1, 1, 1, 1, 0, stream, params_ptr, 0)
    else:
        how = "ctypes libcuda.cuLaunchKernel"
        libcuda = ctypes.CDLL("libcuda.so.1")
        cu_launch = libcuda.cuLaunchKernel
        cu_launch.restype = ctypes.c_int
        cu_launch.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [
            ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]

        def call():
            rc = cu_launch(f.ptr, 1, 1, 1, 1, 1, 1, 0, stream, params_ptr, None)
            if rc != 0:
                raise RuntimeError(f"cuLaunchKernel returned {rc}")
    y.fill(0)
    call()
    cupy.cuda.get_current_stream().synchronize()
    check(cupy, y)
    sync = cupy.cuda.get_current_stream().synchronize
    return per_call_us(call, sync, iters, samples), how


def fig_triton(iters, samples):
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def kk_trivial(x_ptr, y_ptr, OFFSET: tl.constexpr):
        i = tl.program_id(0)
        tl.store(y_ptr + i, tl.load(x_ptr + i) + OFFSET)

    x = torch.arange(ELEMENTS, dtype=torch.float32, device="cuda")
    y = torch.zeros(ELEMENTS, dtype=torch.float32, device="cuda")
    kk_trivial[(1,)](x, y, OFFSET=3.0)
    torch.cuda.synchronize()
    if float(y[0]) != 3.0:
        raise RuntimeError(f"the Triton kernel wrote {float(y[0])}, expected 3.0")
    return per_call_us(lambda: kk_trivial[(1,)](x, y, OFFSET=3.0),
                       torch.cuda.synchronize, iters, samples), f"triton {triton.__version__}"


def unique_source(tag):
    return SOURCE.replace("3.0f;", f"3.0f; // {tag} {os.getpid()} {time.time_ns()}")


def compile_ms(cupy, tag):
    k = cupy.RawKernel(unique_source(tag), "kk_trivial")
    start = time.perf_counter()
    if hasattr(k, "compile"):
        k.compile()
    else:  # older CuPy: the first call compiles
        _, x, y = cupy_setup()
        k((1,), (1,), (x, y))
        cupy.cuda.Stream.null.synchronize()
    return (time.perf_counter() - start) * 1e3


def fig_cupy_compile(samples):
    import cupy

    compile_ms(cupy, "warm-up")  # NVRTC's own start-up is another figure
    return statistics.median(compile_ms(cupy, f"c{i}") for i in range(samples))


def child(task):
    """Runs in a fresh process: what the start figures time."""
    t0 = time.perf_counter()
    import cupy

    t1 = time.perf_counter()
    x = cupy.arange(ELEMENTS, dtype=cupy.float32)
    y = cupy.zeros(ELEMENTS, dtype=cupy.float32)
    cupy.cuda.Stream.null.synchronize()
    t2 = time.perf_counter()
    out = {"import_ms": (t1 - t0) * 1e3, "context_ms": (t2 - t1) * 1e3}
    if task == "first-compile":
        out["compile_ms"] = compile_ms(cupy, "first")
    else:
        k = cupy.RawKernel(SOURCE, "kk_trivial")
        k((1,), (1,), (x, y))
        cupy.cuda.Stream.null.synchronize()
        out["first_call_ms"] = (time.perf_counter() - t2) * 1e3
        check(cupy, y)
    print(json.dumps(out))


def run_child(task, cache_dir):
    env = dict(os.environ, CUPY_CACHE_DIR=cache_dir)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", task],
                          env=env, capture_output=True, text=True, timeout=600)
    wall = (time.perf_counter() - start) * 1e3
    if done.returncode != 0:
        raise RuntimeError(f"child {task} failed: {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1]), wall


def fig_disk_cache(samples):
    cold, warm, warm_wall, cold_wall = [], [], [], []
    for _ in range(samples):
        with tempfile.TemporaryDirectory(prefix="kk-cupy-disk-") as d:
            c, cw = run_child("first-call", d)
            w, ww = run_child("first-call", d)
            cold.append(c["first_call_ms"])
            cold_wall.append(cw)
            warm.append(w["first_call_ms"])
            warm_wall.append(ww)
    return {
        "cupy_first_call_cold_disk_ms": statistics.median(cold),
        "cupy_first_call_warm_disk_ms": statistics.median(warm),
        "cupy_cold_process_ms": statistics.median(cold_wall),
        "cupy_warm_process_ms": statistics.median(warm_wall),
    }


def fig_first_compile(samples):
    values = []
    for _ in range(samples):
        with tempfile.TemporaryDirectory(prefix="kk-cupy-first-") as d:
            values.append(run_child("first-compile", d)[0]["compile_ms"])
    return statistics.median(values)


def machine():
    info = {}
    try:
        import cupy

        props = cupy.cuda.runtime.getDeviceProperties(0)
        name = props["name"]
        info["gpu"] = name.decode() if isinstance(name, bytes) else str(name)
        info["cuda_driver"] = cupy.cuda.runtime.driverGetVersion()
        info["cuda_runtime"] = cupy.cuda.runtime.runtimeGetVersion()
        info["cupy"] = cupy.__version__
    except Exception as e:  # reported, not fatal
        info["gpu_error"] = repr(e)
    info["cores"] = os.cpu_count()
    info["python"] = sys.version.split()[0]
    return info


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "--child":
        child(sys.argv[2])
        return
    # Keep this process's CuPy disk cache away from the user's, and empty,
    # before CuPy is imported.
    own_cache = tempfile.mkdtemp(prefix="kk-cupy-cache-")
    os.environ["CUPY_CACHE_DIR"] = own_cache
    try:
        measure_all()
    finally:
        shutil.rmtree(own_cache, ignore_errors=True)


def measure_all():
    quick = "--quick" in sys.argv
    iters, samples = (2000, 5) if quick else (20000, 15)
    proc_samples = 1 if quick else 3
    result = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "iters": iters,
              "samples": samples}
    result.update(machine())
    errors = {}

    def attempt(key, fn):
        log(key)
        try:
            value = fn()
            if isinstance(value, dict):
                result.update(value)
            elif isinstance(value, tuple):
                result[key] = value[0]
                result[key + "_via"] = value[1]
            else:
                result[key] = value
        except Exception as e:  # every figure on its own
            errors[key] = f"{type(e).__name__}: {e}"
            log(f"{key} failed:\n{traceback.format_exc()}")

    attempt("cupy_rawkernel_us", lambda: fig_cupy_rawkernel(iters, samples))
    attempt("cupy_function_call_us", lambda: fig_cupy_function_call(iters, samples))
    attempt("raw_launch_us", lambda: fig_raw_launch(iters, samples))
    attempt("triton_jit_us", lambda: fig_triton(iters, samples))
    attempt("cupy_compile_ms", lambda: fig_cupy_compile(5 if quick else 15))
    attempt("cupy_first_compile_ms", lambda: fig_first_compile(proc_samples))
    attempt("disk_cache", lambda: fig_disk_cache(proc_samples))
    if "raw_launch_us" in result:
        for key in ("cupy_rawkernel_us", "cupy_function_call_us", "triton_jit_us"):
            if key in result:
                result[key.replace("_us", "_over_raw_us")] = result[key] - result["raw_launch_us"]
    result["errors"] = errors
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
