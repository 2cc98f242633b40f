"""Why did kernelkit's in-process compile read about twice as slow as NVRTC
through ctypes in the same process? (Answer, 2026-12-01 on the H200: the
ctypes kinds below compile one program again and again, and NVRTC answers a
program it has compiled before from its own cache, in well under half the
time; ``new_*`` compile new programs and take what kernelkit takes. With
``CUDA_CACHE_DISABLE=1`` every kind takes that.) One process (torch, kernelkit with its
compiles in the process), the same source and options (kernelkit's own,
captured from its pool with ``capture_worker.sh``, or the CLI's), timed in
turns:

- ``main``: ctypes on the main thread;
- ``dedicated``: ctypes on one long-lived Python thread fed by a queue (as
  kernelkit's NVRTC thread is fed);
- ``fresh``: ctypes on a new Python thread per compile;
- ``headers``: ``main`` with empty, non-NULL header arrays (as kernelkit
  passes them);
- ``cubin``: ``main`` that also copies the cubin out (as kernelkit does);
- ``kernelkit``: a kernelkit cold call;
- ``new_name``, ``new_constant``, ``new_both``: ``main`` with the kernel's
  name, the body's constant, or both new in every compile (as every new
  kernel's are), where the other kinds compile one text again and again.

``--ctypes-first``: the process's first NVRTC compile is a ctypes one.

  python nvrtc_matrix.py --cli PATH/kernelkit [--job CAPTURED] [--rounds 6] [--ctypes-first]
"""

import argparse
import os
import queue
import statistics
import sys
import threading
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from heap_check import captured_job, kernelkit_cold  # noqa: E402
from nvrtc_control import compile_text, generated_source, nvrtc  # noqa: E402
import torch  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--job")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--ctypes-first", action="store_true")
    a = ap.parse_args()
    lib, include = nvrtc()
    if a.job:
        source, options, _ = captured_job(a.job)
    else:
        source = generated_source(a.cli)
        options = ["--gpu-architecture=sm_90a", "--device-as-default-execution-space",
                   f"-I{include}", f"-I{include}/cccl"]

    import random
    import re

    def varied(what):
        text = source.replace("TAG", uuid.uuid4().hex)
        if what in ("name", "both"):
            text = re.sub(r"custom_kernel_\w+\(", f"custom_kernel_{uuid.uuid4().hex}(", text)
        if what in ("constant", "both"):
            text = re.sub(r"\+ [0-9]+\.0f;", f"+ {random.randint(0, 1 << 20)}.0f;", text)
        return text

    def compile_(headers=False, cubin=False, vary=None):
        compile_text(lib, varied(vary), options, header_arrays=headers, cubin=cubin)

    jobs, done = queue.Queue(), queue.Queue()

    def serve():
        while True:
            fn = jobs.get()
            fn()
            done.put(None)

    threading.Thread(target=serve, daemon=True).start()

    def dedicated():
        jobs.put(compile_)
        done.get()

    def fresh():
        t = threading.Thread(target=compile_)
        t.start()
        t.join()

    x = torch.ones(1024, device="cuda")
    torch.cuda.synchronize()

    def kernelkit():
        kernelkit_cold(x, "n")

    kinds = {"main": compile_, "dedicated": dedicated, "fresh": fresh,
             "headers": lambda: compile_(headers=True), "cubin": lambda: compile_(cubin=True),
             "kernelkit": kernelkit, "new_name": lambda: compile_(vary="name"),
             "new_constant": lambda: compile_(vary="constant"), "new_both": lambda: compile_(vary="both")}
    order = list(kinds) if a.ctypes_first else ["kernelkit"] + [k for k in kinds if k != "kernelkit"]
    for name in order:
        kinds[name]()  # each path's first use
    times = {k: [] for k in kinds}
    for _ in range(a.rounds):
        for name in order:
            t = time.perf_counter()
            kinds[name]()
            times[name].append((time.perf_counter() - t) * 1e3)
    label = "ctypes_first" if a.ctypes_first else "kernelkit_first"
    for name in order:
        v = times[name]
        print(f"matrix.{label}.{name} = {statistics.median(v):.1f} ms  # {[round(t) for t in v]}",
              flush=True)


if __name__ == "__main__":
    main()
