"""kernelkit.jax's per-call cost on a GPU, in one process: a jitted function
of 100 chained calls of a trivial kernel (y = x + 1) through kernelkit's FFI
handler, against the same function through a C++ FFI handler compiled with
nvcc (jax_ffi_control.cc, the control), and the same elementwise op written
in jax.numpy and in Pallas (reported; XLA fuses the jnp chain into one
kernel). XLA's command buffers (CUDA graphs) are set by --command-buffers
before JAX starts, so run once per setting:

    python3 jax_bench.py --command-buffers on  --json out_on.json
    python3 jax_bench.py --command-buffers off --json out_off.json

The control's library is built here (``--nvcc``, default
/usr/local/cuda/bin/nvcc) into a temporary folder.
"""

import argparse
import ctypes
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CHAIN = 100


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--command-buffers", choices=["on", "off"], required=True)
    p.add_argument("--nvcc", default="/usr/local/cuda/bin/nvcc")
    p.add_argument("--n", type=int, default=1 << 16, help="elements")
    p.add_argument("--iters", type=int, default=200)
    p.add_argument("--turns", type=int, default=5)
    p.add_argument("--json")
    a = p.parse_args()
    flags = {
        "on": "--xla_gpu_enable_command_buffer=FUSION,CUSTOM_CALL --xla_gpu_graph_min_graph_size=1",
        "off": "--xla_gpu_enable_command_buffer=",
    }[a.command_buffers]
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + flags).strip()

    import jax
    import jax.numpy as jnp
    import numpy as np
    import kernelkit.jax as kkj

    if jax.default_backend() != "gpu":
        print("jax_bench: no GPU backend in JAX here; skipped")
        return 0
    src = os.path.join(HERE, "jax_ffi_control.cc")
    out = tempfile.mkdtemp(prefix="kk-jax-control-")
    lib = os.path.join(out, "libkk_jax_control.so")
    subprocess.run([a.nvcc, "-x", "cu", "-O3", "-std=c++17", "-shared", "-Xcompiler", "-fPIC",
                    "-arch=native", "-I", jax.ffi.include_dir(), src, "-o", lib], check=True)
    control = ctypes.cdll.LoadLibrary(lib)
    jax.ffi.register_ffi_target("kk_control_add_one", jax.ffi.pycapsule(control.KkControlAddOne),
                                platform="CUDA")

    k = kkj.metal_kernel(name="bench_add_one", input_names=["x"], output_names=["y"],
                         source="uint i = thread_position_in_grid.x; y[i] = x[i] + 1.0f;")
    x = jnp.zeros(a.n, jnp.float32)

    def kk_chain(x):
        for _ in range(CHAIN):
            (x,) = k(inputs=[x], grid=(x.size, 1, 1), threadgroup=(256, 1, 1),
                     output_shapes=[x.shape], output_dtypes=[x.dtype])
        return x

    def control_chain(x):
        call = jax.ffi.ffi_call("kk_control_add_one", jax.ShapeDtypeStruct(x.shape, x.dtype))
        for _ in range(CHAIN):
            x = call(x)
        return x

    def jnp_chain(x):
        for _ in range(CHAIN):
            x = x + 1.0
        return x

    fns = {"kernelkit": kk_chain, "cpp_ffi_control": control_chain, "jnp": jnp_chain}
    try:
        from jax.experimental import pallas as pl

        def add_one_kernel(x_ref, y_ref):
            y_ref[...] = x_ref[...] + 1.0

        block = 1024

        def pallas_chain(x):
            call = pl.pallas_call(add_one_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                                  grid=(x.size // block,),
                                  in_specs=[pl.BlockSpec((block,), lambda i: (i,))],
                                  out_specs=pl.BlockSpec((block,), lambda i: (i,)))
            for _ in range(CHAIN):
                x = call(x)
            return x

        fns["pallas"] = pallas_chain
    except Exception as e:  # noqa: BLE001 - reported, the rest runs
        print(f"pallas: skipped ({type(e).__name__}: {e})")

    jitted = {}
    for name, f in fns.items():
        try:
            j = jax.jit(f)
            y = j(x).block_until_ready()
            np.testing.assert_allclose(np.asarray(y), np.full(a.n, float(CHAIN)), rtol=0, atol=0)
            jitted[name] = j
        except Exception as e:  # noqa: BLE001 - reported
            print(f"{name}: failed ({type(e).__name__}: {str(e)[:400]})")
    best = {name: float("inf") for name in jitted}
    for _ in range(a.turns):  # interleaved turns, the best of each
        for name, j in jitted.items():
            j(x).block_until_ready()
            t0 = time.perf_counter()
            for _ in range(a.iters):
                y = j(x)
            y.block_until_ready()
            per_call = (time.perf_counter() - t0) / (a.iters * CHAIN)
            best[name] = min(best[name], per_call)
    result = {"command_buffers": a.command_buffers, "n": a.n, "chain": CHAIN,
              "per_call_us": {n: v * 1e6 for n, v in best.items()},
              "jax": jax.__version__, "device": str(jax.devices()[0])}
    if "kernelkit" in best and "cpp_ffi_control" in best:
        result["kernelkit_over_control"] = best["kernelkit"] / best["cpp_ffi_control"]
    print(json.dumps(result, indent=1))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
