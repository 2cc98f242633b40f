"""Is a cold compile slow because of where it runs? One process (torch,
kernelkit with its compiles in the process), every CPU in turn: the main
thread and kernelkit's NVRTC thread held to that CPU, then NVRTC through
ctypes on the main thread, a kernelkit cold call (its compile on the NVRTC
thread), and a fixed busy loop, each timed there. Then the same unpinned,
alternating.

  python cpu_map.py --cli PATH/kernelkit [--rounds 2]

Prints ``cpu_map.*`` lines: per CPU, ctypes ms, kernelkit ms, loop ms.
"""

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# heap_check, on import, keeps kernelkit's compiles in this process.
from heap_check import kernelkit_cold, torch  # noqa: E402
from nvrtc_control import compile_once, generated_source, nvrtc  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args()
    x = torch.ones(1024, device="cuda")
    torch.cuda.synchronize()

    def kk_cold():
        return kernelkit_cold(x, "m")

    lib, include = nvrtc()
    source = generated_source(a.cli)

    def ctypes_cold():
        t = time.perf_counter()
        compile_once(lib, include, source, "sm_90a")
        return (time.perf_counter() - t) * 1e3

    def loop():
        t = time.perf_counter()
        n = 0
        for i in range(300_000):
            n += i
        return (time.perf_counter() - t) * 1e3

    kk_cold()
    ctypes_cold()
    nvrtc_tid = None
    for tid in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{tid}/comm") as f:
            if f.read().startswith("kernelkit-nvrt"):
                nvrtc_tid = int(tid)
    print(f"cpu_map.nvrtc_thread = {nvrtc_tid}", flush=True)
    every = sorted(os.sched_getaffinity(0))
    for round_ in range(a.rounds):
        for cpu in every:
            os.sched_setaffinity(0, {cpu})
            if nvrtc_tid:
                os.sched_setaffinity(nvrtc_tid, {cpu})
            c = min(ctypes_cold() for _ in range(2))
            k = min(kk_cold() for _ in range(2))
            b = min(loop() for _ in range(3))
            print(f"cpu_map.{round_}.cpu{cpu} = ctypes {c:.1f} ms, kernelkit {k:.1f} ms, loop {b:.2f} ms",
                  flush=True)
    os.sched_setaffinity(0, set(every))
    if nvrtc_tid:
        os.sched_setaffinity(nvrtc_tid, set(every))
    cs, ks = [], []
    for _ in range(8):
        cs.append(ctypes_cold())
        ks.append(kk_cold())
    print(f"cpu_map.unpinned = ctypes {statistics.median(cs):.1f} ms {[round(v) for v in cs]}, "
          f"kernelkit {statistics.median(ks):.1f} ms {[round(v) for v in ks]}", flush=True)


if __name__ == "__main__":
    main()
