"""Would compiling several kernels in one NVRTC program help a burst?

16 new kernels at once: 16 processes of one kernel each (what kernelkit's
workers do), or 8 of two, or 4 of four (one program holding several
kernels after one prelude). NVRTC's work per program is a fixed part (the
prelude, NVRTC's own set-up) and a part per kernel; fewer processes
contend less for the machine's cores. Each shape is timed from a barrier
to the last cubin (`nvrtc_control.burst`), in turns with one kernel
compiled alone, with kernelkit's generated source and options.

  python batch_control.py --cli PATH/kernelkit [--turns 5] [--form full]
"""

import argparse
import statistics
import sys

import nvrtc_control as nc

SHAPES = [(1, 1), (16, 1), (8, 1), (4, 1), (8, 2), (4, 4), (1, 2), (1, 4)]  # (processes, kernels each)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--arch", default="sm_90a")
    ap.add_argument("--turns", type=int, default=5)
    ap.add_argument("--form", default="full", choices=["full", "minimal", "pch", "pch_minimal"])
    a = ap.parse_args()
    nc.FORM = a.form
    source = nc.generated_source(a.cli)
    walls = {s: [] for s in SHAPES}
    for _ in range(a.turns):
        for procs, kernels in SHAPES:
            nc.KERNELS = kernels
            walls[(procs, kernels)].append(nc.burst(source, a.arch, procs, 1)[0])
    one = statistics.median(walls[(1, 1)])
    for (procs, kernels), w in walls.items():
        m = statistics.median(w)
        print(f"batch.{a.form}.{procs}x{kernels}_ms = {m:.1f}  ({m / one:.2f}x one; {[round(x) for x in w]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
