"""MLX's own cold burst on CUDA, the baseline of ``compare.py``'s
``parallel.*`` figures: 16 Python threads, a barrier, 16 distinct
``mx.fast.cuda_kernel`` kernels, each thread its own stream, against one
cold kernel alone, in turns, in one process.

Each burst runs in a child process (``--child``) so that an MLX failure
under threads is reported, not fatal to the caller. Prints ``mlx_cold.*``
lines.

  python mlx_cold.py [--turns 3]
"""

import argparse
import json
import statistics
import subprocess
import sys
import threading
import time
import uuid

N = 1024


def child(turns):
    import mlx.core as mx

    x = mx.ones((N,), dtype=mx.float32)
    mx.eval(x)

    def fresh(tag):
        src = ("int i = blockIdx.x * blockDim.x + threadIdx.x; "
               "out[i] = inp[i] * 2.0f + %d.0f; /* %s */" % (len(tag), tag))
        return mx.fast.cuda_kernel(name="cold_" + tag[:8], input_names=["inp"], output_names=["out"],
                                   source=src)

    def call(k, stream=None):
        (y,) = k(inputs=[x], grid=(N, 1, 1), threadgroup=(256, 1, 1), output_shapes=[(N,)],
                 output_dtypes=[mx.float32], stream=stream)
        mx.eval(y)
        return y

    y = call(fresh(uuid.uuid4().hex))  # the device and NVRTC started
    assert mx.allclose(y, mx.full((N,), 2.0 + 32.0)).item(), "MLX's result is wrong"
    single, burst = [], []
    for _ in range(turns):
        k = fresh(uuid.uuid4().hex)
        t = time.perf_counter()
        call(k)
        mx.synchronize()
        single.append(time.perf_counter() - t)
        ks = [fresh(uuid.uuid4().hex) for _ in range(16)]
        barrier = threading.Barrier(17)
        errors = []

        def work(k):
            s = mx.new_stream(mx.gpu)  # MLX's streams belong to the thread that made them
            barrier.wait()
            try:
                call(k, s)
            except Exception as e:  # noqa: BLE001
                errors.append(repr(e)[:200])

        threads = [threading.Thread(target=work, args=(k,)) for k in ks]
        for th in threads:
            th.start()
        barrier.wait()
        t = time.perf_counter()
        for th in threads:
            th.join()
        mx.synchronize()
        burst.append(time.perf_counter() - t)
        if errors:
            print(json.dumps({"errors": errors}))
            return
    print(json.dumps({"single": single, "burst": burst}))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--turns", type=int, default=3)
    ap.add_argument("--child", action="store_true")
    a = ap.parse_args()
    if a.child:
        child(a.turns)
        return
    done = subprocess.run([sys.executable, __file__, "--child", "--turns", str(a.turns)],
                          capture_output=True, text=True, timeout=500)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        print(f"mlx_cold.error = rc {done.returncode}: {done.stderr.strip()[-600:]}")
        return
    d = json.loads(lines[-1])
    if "errors" in d:
        print(f"mlx_cold.error = {d['errors']}")
        return
    single = statistics.median(d["single"]) * 1e3
    burst = statistics.median(d["burst"]) * 1e3
    print(f"mlx_cold.one_cold_ms = {single:.3f}  # all {[round(s * 1e3, 1) for s in d['single']]}")
    print(f"mlx_cold.sixteen_threads_ms = {burst:.3f}  # all {[round(s * 1e3, 1) for s in d['burst']]}")
    print(f"mlx_cold.ratio = {burst / single:.3f}  # 16 threads x 16 cold kernels vs one; 16 = serial")


if __name__ == "__main__":
    main()
