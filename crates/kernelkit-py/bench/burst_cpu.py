"""Who runs, and who waits, during ``compare.py``'s cold burst (16 Python
threads, 16 new kernels): the CPU time and run-queue wait of every compile
(the scheduler's own counters, ``/proc/<pid>/task/<tid>/schedstat``), in
this process's NVRTC thread and in each compile worker, beside each
thread's call.

Per burst it prints the wall time; each thread's call end (ms after the
barrier, sorted); this process's CPU time outside the NVRTC thread; the
NVRTC thread's CPU time and wait; and each worker that compiled: its CPU
time and run-queue wait. A compile that is slow with its CPU time near its
wall is slowed while running (shared caches, memory); one with a long
wait, by too many runnable threads. Each burst also names the tasks
outside this process and its workers that ran during it (a task that took
a worker's CPU), and the last line gives the workers' resident memory; the
summary is the median single call, the median burst and their ratio.

With ``--log``, the process runs with ``KERNELKIT_LOG=kernelkit=debug,_kernelkit=debug``
and each burst's timeline is printed from kernelkit's log: per call, in ms
after the barrier, when the package took the call's path for a new
layout, when the module was found missing from memory, when its compile
job was placed (here or on a worker),
when the compile ended (and how long it took), when the module's load
ended (and how long it took).

  python burst_cpu.py [--turns 4] [--mode workers|workers_cli] [--cli PATH] [--log]
"""

import argparse
import datetime
import json
import os
import re
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import COLD_KERNELS  # noqa: E402  (beside this file)

CHILD = COLD_KERNELS + r"""
import os, resource

def tasks(pid):
    out = {}
    base = f"/proc/{pid}/task"
    for tid in os.listdir(base):
        try:
            with open(f"{base}/{tid}/schedstat") as f:
                run, wait, _ = (int(v) for v in f.read().split())
            with open(f"{base}/{tid}/comm") as f:
                comm = f.read().strip()
        except OSError:
            continue
        out[int(tid)] = (comm, run, wait)
    return out

def workers():
    me, found = os.getpid(), []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == me:
                found.append(int(pid))
    return found

def snapshot():
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return {"self_cpu": (ru.ru_utime + ru.ru_stime) * 1e3, "self": tasks(os.getpid()),
            "workers": {p: tasks(p) for p in workers()}}

def machine():
    # CPU ns of every task of the machine, by (pid, tid): name.
    out = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                    run = int(f.read().split()[0])
                with open(f"/proc/{pid}/task/{tid}/comm") as f:
                    out[(int(pid), int(tid))] = (f.read().strip(), run)
            except (OSError, ValueError):
                continue
    return out

def others(a, b, mine):
    # The tasks outside this process and its workers that ran most between
    # two `machine()` snapshots: [ms, name, pid].
    rows = [[round((run - a[k][1]) / 1e6, 1), comm, k[0]] for k, (comm, run) in b.items()
            if k in a and k[0] not in mine and run - a[k][1] > 5e5]
    return sorted(rows, reverse=True)[:6]

def rss_mb(pids):
    out = []
    for p in pids:
        try:
            with open(f"/proc/{p}/status") as f:
                out += [round(int(l.split()[1]) / 1024, 1) for l in f if l.startswith("VmRSS")]
        except OSError:
            continue
    return sorted(out)

def delta(a, b):
    # ms of CPU and of run-queue wait, per worker and for the NVRTC thread.
    out = {"self_cpu_ms": b["self_cpu"] - a["self_cpu"]}
    for tid, (comm, run, wait) in b["self"].items():
        if comm.startswith("kernelkit-nvrt") and tid in a["self"]:
            out["nvrtc_thread"] = [(run - a["self"][tid][1]) / 1e6, (wait - a["self"][tid][2]) / 1e6]
    ws = []
    for pid, ts in b["workers"].items():
        run = sum(r for (_, r, _) in ts.values()) - sum(r for (_, r, _) in a["workers"].get(pid, {}).values())
        wait = sum(w for (_, _, w) in ts.values()) - sum(w for (_, _, w) in a["workers"].get(pid, {}).values())
        if run > 2e6:
            ws.append([round(run / 1e6, 1), round(wait / 1e6, 1)])
    out["workers_cpu_wait_ms"] = sorted(ws, reverse=True)
    return out

def timed_burst(ks):
    barrier = threading.Barrier(len(ks) + 1)
    starts, ends = [], []
    def work(k):
        barrier.wait(); starts.append(time.perf_counter()); call(k); ends.append(time.perf_counter())
    threads = [threading.Thread(target=work, args=(k,)) for k in ks]
    for th in threads: th.start()
    barrier.wait(); t = time.perf_counter()
    for th in threads: th.join()
    torch.cuda.synchronize()
    rel = lambda ts: sorted(round((e - t) * 1e3, 1) for e in ts)
    return time.perf_counter() - t, rel(starts), rel(ends)

call(fresh(uuid.uuid4().hex))
torch.cuda.synchronize()
time.sleep(3.0)
for turn in range(int(sys.argv[1])):
    k = fresh(uuid.uuid4().hex)
    a = snapshot(); t = time.perf_counter(); call(k); torch.cuda.synchronize()
    single = (time.perf_counter() - t) * 1e3; b = snapshot()
    print(json.dumps({"turn": turn, "single_ms": round(single, 1), **delta(a, b)}))
    ks = [fresh(uuid.uuid4().hex) for _ in range(16)]
    sys.stderr.write(f"MARK burst {turn} {time.time():.6f}\n"); sys.stderr.flush()
    m = machine(); a = snapshot(); wall, starts, ends = timed_burst(ks); b = snapshot()
    busy = others(m, machine(), {os.getpid(), *b["workers"]})
    sys.stderr.write(f"MARK end {turn}\n"); sys.stderr.flush()
    print(json.dumps({"turn": turn, "burst_ms": round(wall * 1e3, 1), "starts_ms": starts, "ends_ms": ends,
                      **delta(a, b), "other_tasks": busy}))
print(json.dumps({"workers_rss_mb": rss_mb(workers())}))
"""


EVENT = re.compile(r"^(\S+Z)\s+DEBUG\s+(ThreadId\(\d+\))\s+\S+: (.*)$")


def timelines(stderr):
    """Per burst, per thread of the log: [placed, compiled, compile ms,
    loaded, load ms], times in ms after the barrier."""
    bursts, current, t0 = [], None, 0.0
    for line in stderr.splitlines():
        if line.startswith("MARK burst"):
            t0, current = float(line.split()[3]), {}
            continue
        if line.startswith("MARK end"):
            bursts.append(current)
            current = None
            continue
        m = EVENT.match(line)
        if current is None or not m:
            continue
        when = datetime.datetime.fromisoformat(m.group(1).replace("Z", "+00:00")).timestamp()
        at, row = round((when - t0) * 1e3, 1), current.setdefault(m.group(2), {})
        text = m.group(3)
        if "a new torch layout" in text:
            row["entered"] = at
        elif "not in memory" in text:
            row["missed"] = at
        elif text.startswith("compile job:"):
            row["placed"], row["where"] = at, text.split(": ", 1)[1]
        elif "compiled in" in text:
            row["compiled"], row["compile_ms"] = at, float(text.split("compiled in ")[1].split()[0])
        elif "loaded in" in text:
            row["loaded"], row["load_ms"] = at, float(text.split("loaded in ")[1].split()[0])
    return bursts


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--turns", type=int, default=4)
    ap.add_argument("--mode", default="workers", choices=["workers", "workers_cli"])
    ap.add_argument("--cli", help="the kernelkit CLI, for --mode workers_cli")
    ap.add_argument("--log", action="store_true", help="each burst's timeline from kernelkit's log")
    a = ap.parse_args()
    env = dict(os.environ, KERNELKIT_CACHE="memory")
    env.pop("KERNELKIT_WORKER", None)
    env.pop("KERNELKIT_COMPILE_WORKERS", None)
    if a.mode == "workers_cli":
        env["KERNELKIT_WORKER"] = a.cli
    if a.log:
        env["KERNELKIT_LOG"] = "kernelkit=debug,_kernelkit=debug"
    done = subprocess.run([sys.executable, "-c", CHILD, str(a.turns)], env=env, capture_output=True,
                          text=True, timeout=300)
    singles, bursts = [], []
    for line in done.stdout.splitlines():
        print(f"burst_cpu.{a.mode} {line}")
        row = json.loads(line)
        singles += [row["single_ms"]] if "single_ms" in row else []
        bursts += [row["burst_ms"]] if "burst_ms" in row else []
    if singles and bursts:
        one, many = statistics.median(singles), statistics.median(bursts)
        print(f"burst_cpu.{a.mode}.median one cold call {one:.1f} ms, burst {many:.1f} ms, "
              f"ratio {many / one:.2f}")
    if a.log:
        for turn, rows in enumerate(timelines(done.stderr)):
            for row in sorted(rows.values(), key=lambda r: r.get("loaded", 1e9)):
                print(f"burst_cpu.{a.mode}.timeline {turn} {json.dumps(row)}")
        took = [line for line in done.stderr.splitlines() if "NVRTC took" in line]
        print(f"burst_cpu.{a.mode}.nvrtc_lines {len(took)}: {took[-3:]}")
    if done.returncode:
        print(done.stderr[-3000:])
        sys.exit(done.returncode)


if __name__ == "__main__":
    main()
