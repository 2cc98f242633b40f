"""Where the package's cold burst (``compare.py``'s ``parallel.*``) spends
its wall time beyond one compile: each thread's call, and each compile
worker's CPU time and run-queue wait (``/proc/PID/schedstat``) over the
burst, against the same for one cold call, in one process.

- a thread's call much longer than its worker's CPU time: the call waited
  (for a worker, a CPU, the GIL, the driver);
- workers' CPU time in the burst above a single compile's: the compiles
  themselves ran slower (shared caches, memory, SMT siblings, vCPU steal);
- run-queue wait: a worker was ready and had no CPU.

With ``--log`` (``KERNELKIT_LOG=kernelkit=debug`` in the measured process)
each burst is also printed kernel by kernel: when its build began, when it
went to a worker, when its compile and its load ended and when its call
returned, in ms after the barrier.

  python burst_timeline.py [--turns 7] [--log]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import COLD_KERNELS  # noqa: E402

CHILD = COLD_KERNELS + r"""
import os
def workers():
    pids = []
    for t in os.listdir("/proc/self/task"):
        try:
            pids += open(f"/proc/self/task/{t}/children").read().split()
        except OSError:
            pass
    return pids
def sched(pids):
    out = {}
    for p in pids:
        try:
            run, wait, _ = open(f"/proc/{p}/schedstat").read().split()
            cpu = int(open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[36])
            out[p] = (int(run), int(wait), cpu)
        except OSError:
            pass
    return out
def delta(a, b):
    return {p: ((b[p][0] - a[p][0]) / 1e6, (b[p][1] - a[p][1]) / 1e6, b[p][2]) for p in b if p in a}
WALL = []
def timed_burst(ks):
    barrier = threading.Barrier(len(ks) + 1)
    ends = [0.0] * len(ks)
    wall_ends = [0.0] * len(ks)
    def work(i, k):
        barrier.wait(); call(k); ends[i] = time.perf_counter(); wall_ends[i] = time.time()
    threads = [threading.Thread(target=work, args=(i, k)) for i, k in enumerate(ks)]
    for th in threads: th.start()
    barrier.wait(); t = time.perf_counter(); t_wall = time.time()
    for th in threads: th.join()
    torch.cuda.synchronize()
    WALL.append({"start": t_wall, "ends": {k.name: e for k, e in zip(ks, wall_ends)}})
    return (time.perf_counter() - t) * 1e3, sorted((e - t) * 1e3 for e in ends)
call(fresh(uuid.uuid4().hex)); torch.cuda.synchronize(); time.sleep(3.0)
out = []
for _ in range(int(sys.argv[1])):
    pids = workers()
    k = fresh(uuid.uuid4().hex)
    a = sched(pids); t = time.perf_counter(); call(k); torch.cuda.synchronize()
    single = (time.perf_counter() - t) * 1e3; d1 = delta(a, sched(pids))
    ks = [fresh(uuid.uuid4().hex) for _ in range(16)]
    a = sched(pids); wall, ends = timed_burst(ks); d16 = delta(a, sched(pids))
    rss = []
    for p in pids:
        try:
            rss += [int(l.split()[1]) / 1024 for l in open(f"/proc/{p}/status") if l.startswith("VmRSS")]
        except OSError:
            pass
    out.append({"rss_mb": sorted(rss), "workers": len(pids), "single": single, "single_worker": max(d1.values(), default=(0, 0, 0)),
                "wall": wall, "ends": ends, "burst_workers": sorted(d16.values(), reverse=True)})
print(json.dumps(out))
print(json.dumps(WALL))
"""


def timeline(walls, log):
    """Per burst, per kernel: when its build began, its compile ended, its
    module loaded, and its call returned (ms after the barrier)."""
    import datetime
    import re
    pat = re.compile(r"^(\S+Z)\s+DEBUG\s+(ThreadId\(\d+\))?.*?(?:kernel `(cold_\w+)`: )?"
                     r"(not in memory|compiled in|loaded in|compile job: on worker)")
    events, kernel_of = {}, {}
    for line in log.splitlines():
        m = pat.match(re.sub(r"\x1b\[[0-9;]*m", "", line))
        if not m:
            continue
        ts = datetime.datetime.fromisoformat(m.group(1).replace("Z", "+00:00")).timestamp()
        thread, kernel, what = m.group(2), m.group(3), m.group(4).split()[0]
        if kernel and what == "not":
            kernel_of[thread] = kernel
        kernel = kernel or kernel_of.get(thread)
        if kernel:
            events.setdefault(kernel, {})[what] = ts
    for w in walls:
        rows = []
        for name, end in w["ends"].items():
            e = events.get(name, {})
            f = lambda k: (e[k] - w["start"]) * 1e3 if k in e else float("nan")  # noqa: E731
            rows.append((f("not"), f("compile"), f("compiled"), f("loaded"), (end - w["start"]) * 1e3))
        rows.sort(key=lambda r: r[-1])
        print("burst: build began / sent to a worker / compiled / loaded / returned (ms)")
        for r in rows:
            print("   " + " / ".join(f"{x:6.1f}" for x in r))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--turns", type=int, default=7)
    ap.add_argument("--log", action="store_true",
                    help="KERNELKIT_LOG=debug: each kernel's build, compile, load and call end, "
                         "in ms from the burst's start")
    a = ap.parse_args()
    env = dict(os.environ, KERNELKIT_CACHE="memory")
    if a.log:
        env["KERNELKIT_LOG"] = "kernelkit=debug"
    done = subprocess.run([sys.executable, "-c", CHILD, str(a.turns)], env=env,
                          capture_output=True, text=True, timeout=400)
    if done.returncode != 0:
        print(done.stderr[-2000:])
        return 1
    rows = json.loads(done.stdout.strip().splitlines()[-2])
    if a.log:
        timeline(json.loads(done.stdout.strip().splitlines()[-1]), done.stderr)
    r = lambda xs: [round(x, 1) for x in xs]  # noqa: E731
    for row in rows:
        busy = [w for w in row["burst_workers"] if w[0] > 5]
        cpus = sorted(w[2] for w in busy)
        print(f"workers {row['workers']}: single {row['single']:.1f} ms (worker cpu "
              f"{row['single_worker'][0]:.1f}, wait {row['single_worker'][1]:.1f}) | burst "
              f"{row['wall']:.1f} ms, calls end {r(row['ends'][:1] + row['ends'][7:8] + row['ends'][-1:])} "
              f"| {len(busy)} busy workers: cpu {r(sorted(w[0] for w in busy))} wait max "
              f"{max((w[1] for w in busy), default=0):.1f} on cpus {cpus}")
    med = lambda k: statistics.median(x[k] for x in rows)  # noqa: E731
    rss = rows[-1]["rss_mb"]
    if rss:
        print(f"timeline.worker_rss_mb = {statistics.median(rss):.1f} (min {rss[0]:.1f}, max {rss[-1]:.1f})")
    print(f"timeline.single_ms = {med('single'):.1f}")
    print(f"timeline.burst_ms = {med('wall'):.1f}")
    print(f"timeline.ratio = {med('wall') / med('single'):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
