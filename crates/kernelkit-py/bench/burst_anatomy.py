"""The cold burst taken apart outside the package: is the burst slow because
of the workers, or because of the process that drives them?

``compare.py``'s cold burst (16 Python threads, 16 new kernels, the
package's pool) stretches more than the control (``nvrtc_control.py``: 16
forked processes compiling with NVRTC through ctypes). Between the two sit
the worker program and the package's process. This script measures, in one
run and in turns, on the same generated source (``kernelkit source
--dialect cuda``):

- ``control``: the control at 1, 4, 8, 12 and 16 processes (how this
  machine's cores scale, apart from kernelkit);
- ``direct_cli`` and ``direct_python``: 16 compile workers (the CLI's
  ``compile-worker``, and the package's own) driven straight through their
  frame protocol by 16 threads of a bare Python, released at a barrier:
  the worker program under the burst's load, without the package's
  process;
- ``direct_cli_pinned``: ``direct_cli`` with worker i held to core i;
- ``direct_cli_torch``: the same from a process that holds torch and a
  CUDA context (as the package's process does);
- ``replay_cli`` (with ``--replay DIR``): ``direct_cli`` sending, byte for
  byte, the compile jobs the package's pool sent (captured by
  ``capture_worker.sh`` as the package's worker program), then
  ``direct_cli_again`` for the same machine moments later. A replayed job
  is a program NVRTC has compiled before, on this machine: NVRTC (12.9 and
  later, with a CUDA driver beside it) answers those from its own cache in
  well under half the time, so a replay reads fast (that is how this
  script found the cache; ``nvrtc_matrix.py`` shows it alone).

Every other job is a new program (``nvrtc_control.fresh_text``).

Per burst: the wall time, each worker's own NVRTC time and CPU time (its
``KERNELKIT_LOG=debug`` line), and the machine's steal time and the
cgroup's CPU throttling over the burst (``/proc/stat``, ``cpu.stat``).

  python burst_anatomy.py --cli PATH/kernelkit [--turns 5] [--skip control,direct_python] [--replay DIR]

Prints ``anatomy.*`` lines.
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from drive_worker import DONE, Worker  # noqa: E402  (beside this file)
from nvrtc_control import burst as control_burst  # noqa: E402
from nvrtc_control import fresh_text, generated_source  # noqa: E402


def say(key, value):
    print(f"anatomy.{key} = {value}", flush=True)


def read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def machine():
    """What bounds 16 compiles at once here: cores, SMT, the cgroup's quota."""
    say("cpus", os.cpu_count())
    say("affinity", len(os.sched_getaffinity(0)))
    model = [line.split(":", 1)[1].strip() for line in (read("/proc/cpuinfo") or "").splitlines()
             if line.startswith("model name")]
    say("cpu_model", model[0] if model else "?")
    siblings = read("/sys/devices/system/cpu/cpu0/topology/thread_siblings_list")
    say("cpu0_siblings", siblings)
    say("numa_nodes", len([d for d in os.listdir("/sys/devices/system/node") if d.startswith("node")])
        if os.path.isdir("/sys/devices/system/node") else "?")
    say("cgroup_cpu_max", read("/sys/fs/cgroup/cpu.max"))
    say("thp", read("/sys/kernel/mm/transparent_hugepage/enabled"))


def counters():
    """(steal ticks, all ticks) of /proc/stat, and the cgroup's throttled µs."""
    first = (read("/proc/stat") or "cpu 0").splitlines()[0].split()[1:]
    ticks = [int(v) for v in first]
    steal = ticks[7] if len(ticks) > 7 else 0
    throttled = 0
    for line in (read("/sys/fs/cgroup/cpu.stat") or "").splitlines():
        if line.startswith("throttled_usec"):
            throttled = int(line.split()[1])
    return steal, sum(ticks[:8]), throttled


def since(before):
    after = counters()
    return {"steal_ticks": after[0] - before[0], "all_ticks": after[1] - before[1],
            "throttled_ms": (after[2] - before[2]) / 1e3}


def control(source, turns):
    for procs in (1, 4, 8, 12, 16):
        walls, extra = [], []
        for _ in range(turns):
            c = counters()
            walls.append(control_burst(source, "sm_90a", procs, 1)[0])
            extra.append(since(c))
        say(f"control.{procs}_ms", f"{statistics.median(walls):.1f}  # {[round(w, 1) for w in walls]}")
        say(f"control.{procs}_steal_ticks", [e["steal_ticks"] for e in extra])


TOOK = re.compile(r"compile worker (\d+): NVRTC took ([0-9.]+) ms(?: \(user ([0-9.]+) ms, system [0-9.]+ ms, (-?\d+) page faults)?")


def direct(name, command, text, turns, pin=False, jobs=None):
    """16 workers driven by 16 threads; one alone, then all at once. With
    `pin`, worker i runs on core i only. `jobs`: frame bodies to send as
    they are, in turn (captured from the package's pool), instead of
    compile jobs of `text`."""
    new = lambda: fresh_text(text)  # noqa: E731
    if jobs:
        sent = iter(range(1 << 30))

        class Replay(Worker):
            def compile(self, _source):
                body = jobs[next(sent) % len(jobs)]
                t = time.perf_counter()
                answer = self.exchange(body)
                assert answer[0] == DONE, f"the worker did not compile: {answer[:300]!r}"
                return (time.perf_counter() - t) * 1e3

        worker_kind = Replay
    else:
        worker_kind = Worker
    with tempfile.NamedTemporaryFile("w+", suffix=".log") as log:
        workers = [worker_kind(command, log) for _ in range(16)]
        if pin:
            cores = sorted(os.sched_getaffinity(0))
            for i, w in enumerate(workers):
                os.sched_setaffinity(w.proc.pid, {cores[i % len(cores)]})
        for w in workers:
            w.compile(new())  # the warm-up the pool gives its workers
        singles, bursts, stretch, extra = [], [], [], []
        for _ in range(turns):
            time.sleep(0.5)
            singles.append(workers[0].compile(new()))
            time.sleep(0.5)
            barrier = threading.Barrier(len(workers) + 1)
            took = [0.0] * len(workers)

            def one(i):
                barrier.wait()
                took[i] = workers[i].compile(new())

            threads = [threading.Thread(target=one, args=(i,)) for i in range(len(workers))]
            for t in threads:
                t.start()
            c = counters()
            barrier.wait()
            t0 = time.perf_counter()
            for t in threads:
                t.join()
            bursts.append((time.perf_counter() - t0) * 1e3)
            extra.append(since(c))
            stretch.append(sorted(round(v, 1) for v in took))
        for w in workers:
            w.close()
        log.seek(0)
        lines = [TOOK.search(line) for line in log]
    runs = [(float(m.group(2)), float(m.group(3) or 0), int(m.group(4) or 0)) for m in lines if m]
    single, wall = statistics.median(singles), statistics.median(bursts)
    say(f"{name}.one_ms", f"{single:.1f}  # {[round(s, 1) for s in singles]}")
    say(f"{name}.sixteen_ms", f"{wall:.1f}  # {[round(b, 1) for b in bursts]}")
    say(f"{name}.ratio", f"{wall / single:.3f}")
    say(f"{name}.round_trips_last_burst_ms", stretch[-1])
    say(f"{name}.steal_ticks", [e["steal_ticks"] for e in extra])
    say(f"{name}.throttled_ms", [e["throttled_ms"] for e in extra])
    if runs:
        # Per worker: 1 warm-up, then per turn the single (worker 0) and the burst.
        walls = [r[0] for r in runs[16:]]
        users = [r[1] for r in runs[16:]]
        say(f"{name}.nvrtc_wall_ms", f"median {statistics.median(walls):.1f}, max {max(walls):.1f}")
        say(f"{name}.nvrtc_user_ms", f"median {statistics.median(users):.1f}, max {max(users):.1f}")
        faults = [r[2] for r in runs[16:]]
        say(f"{name}.nvrtc_page_faults", f"median {statistics.median(faults):.0f}, max {max(faults)}")


def captured(folder):
    """The compile jobs the package's pool sent (frames after each worker's
    handshake and warm-up), from the `in.*` files of `capture_worker.sh`."""
    import glob
    import struct

    bodies = []
    for path in sorted(glob.glob(os.path.join(folder, "in.*"))):
        with open(path, "rb") as f:
            data = f.read()
        at, frames = 0, []
        while at + 4 <= len(data):
            (n,) = struct.unpack_from("<I", data, at)
            frames.append(data[at + 4:at + 4 + n])
            at += 4 + n
        bodies.extend(frames[2:])
    return bodies


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--turns", type=int, default=5)
    ap.add_argument("--skip", default="")
    ap.add_argument("--replay", help="a folder of capture_worker.sh: replay the package's jobs")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args()
    skip = set(filter(None, a.skip.split(",")))
    source = generated_source(a.cli)
    text = source  # the control's body holds a TAG comment, replaced per job
    assert "TAG" in text, "the generated source lost its TAG"
    cli = [a.cli, "compile-worker"]
    if a.child == "torch":
        import torch

        torch.ones(1, device="cuda")
        torch.cuda.synchronize()
        direct("direct_cli_torch", cli, text, a.turns)
        return
    machine()
    say("source_bytes", len(source))
    if "control" not in skip:
        control(source, a.turns)
    if "direct_cli" not in skip:
        direct("direct_cli", cli, text, a.turns)
    if a.replay:
        jobs = captured(a.replay)
        say("replay.jobs", len(jobs))
        direct("replay_cli", cli, text, a.turns, jobs=jobs)
        direct("direct_cli_again", cli, text, a.turns)
    if "direct_cli_pinned" not in skip:
        direct("direct_cli_pinned", cli, text, a.turns, pin=True)
    if "direct_python" not in skip:
        from kernelkit import _kernelkit

        direct("direct_python", _kernelkit._worker_command(), text, a.turns)
    if "direct_cli_torch" not in skip:
        subprocess.run([sys.executable, __file__, "--cli", a.cli, "--turns", str(a.turns), "--child", "torch"],
                       check=False, timeout=300)


if __name__ == "__main__":
    main()
