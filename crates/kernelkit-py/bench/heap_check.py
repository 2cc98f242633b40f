"""A cold compile's time beside its page faults, in one process (torch,
kernelkit with compiles in the process): NVRTC through ctypes on the main
thread and a kernelkit cold call (its compile on the NVRTC thread),
alternating; per compile the wall time, the compiling thread's CPU time and
its minor page faults (``/proc/self/task/<tid>/stat``). Run it with and
without ``GLIBC_TUNABLES`` holding the C heap (trim and mmap thresholds) to
see what returning the compiler's memory to the kernel costs here.

Every ctypes compile is a new program (``nvrtc_control.fresh_text``), as
every kernelkit cold call's is, except ``--job``'s: that compiles the
captured program again each time, which NVRTC answers from its own cache
(see ``nvrtc_matrix.py``).

  python heap_check.py --cli PATH/kernelkit [--rounds 8] [--job CAPTURED] [--windows FILE]
"""

import argparse
import os
import statistics
import sys
import threading
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nvrtc_control import compile_once, compile_text, generated_source, nvrtc  # noqa: E402

os.environ["KERNELKIT_COMPILE_WORKERS"] = "0"
os.environ.setdefault("KERNELKIT_CACHE", "memory")

import kernelkit as kk  # noqa: E402
import torch  # noqa: E402

BODY = "uint i = thread_position_in_grid.x; out[i] = inp[i] * 2.0f + %d.0f; /* %s */"


def task(tid):
    """(CPU ms, minor faults) of one thread of this process."""
    with open(f"/proc/self/task/{tid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) * 1e3 / tick, int(fields[7])


def xinuse():
    """XGETBV(1) on this thread: which parts of the vector state are in use
    (bit 2: upper halves of YMM0-15, 6: upper ZMM0-15, 7: ZMM16-31)."""
    import ctypes
    import mmap

    code = bytes.fromhex("B901000000" "0F01D0" "48C1E220" "4809D0" "C3")
    buf = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    buf.write(code)
    fn = ctypes.CFUNCTYPE(ctypes.c_uint64)(ctypes.addressof(ctypes.c_char.from_buffer(buf)))
    return fn()


def captured_job(path):
    """(source, options, header count) of the first compile job in a
    capture (frames: hello, warm-up, then jobs; `worker/frame.rs`)."""
    import struct

    data = open(path, "rb").read()
    at, frames = 0, []
    while at + 4 <= len(data):
        (n,) = struct.unpack_from("<I", data, at)
        frames.append(data[at + 4:at + 4 + n])
        at += 4 + n
    body, at = frames[2], 1

    def field():
        nonlocal at
        (n,) = struct.unpack_from("<I", body, at)
        value = body[at + 4:at + 4 + n]
        at += 4 + n
        return value

    field()  # program name
    source = field().decode()
    (headers,) = struct.unpack_from("<I", body, at)
    at += 4
    for _ in range(headers):
        field()
        field()
    (count,) = struct.unpack_from("<I", body, at)
    at += 4
    options = [field().decode() for _ in range(count)]
    return source, options, headers


def kernelkit_cold(x, prefix):
    """A kernelkit cold call: a new kernel on `x`, synchronised; its ms."""
    tag = uuid.uuid4().hex
    k = kk.metal_kernel(name=prefix + tag[:8], input_names=["inp"], output_names=["out"],
                        source=BODY % (len(tag), tag))
    t = time.perf_counter()
    k(inputs=[x], grid=(1024, 1, 1), threadgroup=(256, 1, 1), output_shapes=[x.shape],
      output_dtypes=[x.dtype])
    torch.cuda.synchronize()
    return (time.perf_counter() - t) * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--job", help="a captured compile job (capture_worker.sh's in.* file): its "
                    "source and options are compiled through ctypes too")
    ap.add_argument("--windows", help="write each compile's (what, start, end) in CLOCK_MONOTONIC "
                    "seconds here, one JSON line each (for perf_windows.py)")
    a = ap.parse_args()
    x = torch.ones(1024, device="cuda")
    torch.cuda.synchronize()
    lib, include = nvrtc()
    source = generated_source(a.cli)
    me = threading.get_native_id()

    def kk_cold():
        kernelkit_cold(x, "h")

    kk_cold()
    print(f"heap.main_thread_xinuse = {xinuse():#x}", flush=True)
    nvrtc_tid = next(int(t) for t in os.listdir("/proc/self/task")
                     if open(f"/proc/self/task/{t}/comm").read().startswith("kernelkit-nvrt"))

    windows = []

    def timed(fn, tid, what):
        c0, f0 = task(tid)
        t = time.perf_counter()
        m0 = time.monotonic()
        fn()
        windows.append((what, m0, time.monotonic()))
        wall = (time.perf_counter() - t) * 1e3
        c1, f1 = task(tid)
        return wall, c1 - c0, f1 - f0

    import ctypes

    mapped = sorted({line.split()[-1] for line in open("/proc/self/maps") if "libnvrtc" in line})
    print(f"heap.mapped = {mapped}", flush=True)
    libs = {f"ctypes@{path}": ctypes.CDLL(path) for path in mapped if "builtins" not in path}
    rows = {"ctypes": [], "kernelkit": [], **{name: [] for name in libs}}
    job = captured_job(a.job) if a.job else None
    if job:
        print(f"heap.job = {len(job[0])} bytes, options {job[1]}, headers {job[2]}", flush=True)
        rows["ctypes_job"] = []
    for _ in range(a.rounds):
        rows["ctypes"].append(timed(lambda: compile_once(lib, include, source, "sm_90a"), me, "ctypes"))
        rows["kernelkit"].append(timed(kk_cold, nvrtc_tid, "kernelkit"))
        if job:
            rows["ctypes_job"].append(timed(lambda: compile_text(lib, job[0].replace("TAG", uuid.uuid4().hex), job[1]),
                      me, "ctypes_job"))
        rows.setdefault("idle", []).append(timed(lambda: time.sleep(0.03), me, "idle"))
        for name, other in libs.items():
            rows[name].append(timed(lambda: compile_once(other, include, source, "sm_90a"), me, name))
    if a.windows:
        import json

        with open(a.windows, "w") as f:
            for w in windows:
                f.write(json.dumps(w) + "\n")
    label = "tunables" if os.environ.get("GLIBC_TUNABLES") else "default"
    for name, r in rows.items():
        print(f"heap.{label}.{name} = wall {statistics.median(v[0] for v in r):.1f} ms, "
              f"cpu {statistics.median(v[1] for v in r):.0f} ms, faults {statistics.median(v[2] for v in r):.0f}"
              f"  # {[(round(v[0]), v[2]) for v in r]}", flush=True)


if __name__ == "__main__":
    main()
