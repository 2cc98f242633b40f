"""Where a cold call's time goes, alone and in the 16-thread burst of
``compare.py``'s ``parallel.*`` figures: the call's wall time against the
time the kernel cache spent in the backend's compile (``compile_ns`` of
``cache_stats``: the worker's round trip, NVRTC included) in one process.
The rest is the call around it: codegen, keys, the module's load, the
launch, the synchronize.

With ``KERNELKIT_WORKER`` naming the CLI and ``KERNELKIT_LOG=debug``, the
workers also log each NVRTC run's own time to stderr ("NVRTC took"), which
this script summarises.

  python cold_split.py [--turns 5] [--mode workers|workers_cli|in_process] [--cli PATH]

Prints ``split.<mode>.*`` lines.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import COLD_KERNELS  # noqa: E402  (beside this file)

CHILD = COLD_KERNELS + r"""
def compile_ms():
    return kk.cache_stats("gpu")["compile_ns"] / 1e6
call(fresh(uuid.uuid4().hex))
torch.cuda.synchronize()
time.sleep(3.0)
out = {"single": [], "single_compile": [], "burst": [], "burst_compile_mean": []}
for _ in range(int(sys.argv[1])):
    k = fresh(uuid.uuid4().hex)
    c0 = compile_ms(); t = time.perf_counter(); call(k); torch.cuda.synchronize()
    out["single"].append((time.perf_counter() - t) * 1e3); out["single_compile"].append(compile_ms() - c0)
    ks = [fresh(uuid.uuid4().hex) for _ in range(16)]
    c0 = compile_ms()
    out["burst"].append(burst(ks) * 1e3); out["burst_compile_mean"].append((compile_ms() - c0) / 16)
print(json.dumps(out))
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--turns", type=int, default=5)
    ap.add_argument("--mode", default="workers", choices=["workers", "workers_cli", "in_process"])
    ap.add_argument("--cli", help="the kernelkit CLI, for --mode workers_cli")
    ap.add_argument("--log", default="debug", help="KERNELKIT_LOG for the CLI workers (workers_cli)")
    ap.add_argument("--show", type=int, default=0, help="print the first N lines of the workers' log")
    a = ap.parse_args()
    env = dict(os.environ, KERNELKIT_CACHE="memory")
    env.pop("KERNELKIT_WORKER", None)
    env.pop("KERNELKIT_COMPILE_WORKERS", None)
    if a.mode == "workers_cli":
        env.update(KERNELKIT_WORKER=a.cli, KERNELKIT_LOG=a.log)
    elif a.mode == "in_process":
        env["KERNELKIT_COMPILE_WORKERS"] = "0"
    done = subprocess.run([sys.executable, "-c", CHILD, str(a.turns)], env=env, capture_output=True,
                          text=True, timeout=500)
    name = f"split.{a.mode}"
    for line in [l for l in done.stderr.splitlines() if "NVRTC" in l][:a.show]:
        print(f"{name}.log: {line[-400:]}")
    if done.returncode != 0:
        print(f"{name}.error = {done.stderr.strip()[-600:]}")
        return
    d = json.loads(done.stdout.strip().splitlines()[-1])
    for key, values in d.items():
        print(f"{name}.{key}_ms = {statistics.median(values):.1f}  # all {[round(v, 1) for v in values]}")
    runs = re.findall(r"NVRTC took ([0-9.]+) ms(?: \(user ([0-9.]+) ms, system ([0-9.]+) ms, (-?[0-9]+) page faults)?",
                      done.stderr)
    if runs:
        # The first of each worker is its warm-up; the rest are the turns'.
        for i, what in enumerate(["wall", "user", "system", "faults"]):
            values = [float(r[i]) for r in runs if r[i]]
            if values:
                print(f"{name}.worker_nvrtc_{what} = {len(values)} runs, median {statistics.median(values):.1f}, "
                      f"min {min(values):.1f}, max {max(values):.1f}  # in order: {[round(v, 1) for v in values]}")


if __name__ == "__main__":
    main()
