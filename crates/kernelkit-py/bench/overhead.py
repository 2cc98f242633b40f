"""kernelkit's Python layer per warm call, without a GPU and without
torch: the stand-in driver (``tools/fakecuda``) and a stand-in ``torch``
(``tests/standin_torch.py``), a trivial ``cuda_kernel`` called with ``out=`` and
with ``output_shapes``/``output_dtypes`` (outputs from the stand-in's
``empty_like``, a Python function: its cost is not torch's). Tensors are
read as on torch, through the stand-in of torch's C functions
(``tools/fakecuda/faketorch.c``); ``--methods`` measures the reads through
their methods instead (the test hook ``kernelkit._testing.torch_shim``). Two builds side by side in one run: the installed ``kernelkit``
and, with ``--base DIR``, the package in ``DIR`` (a copy of an older
build's ``kernelkit`` folder), in alternating child processes; ``--build
NAME=DIR`` adds more (an abi3 build beside a per-version one, say).

Figures: with ``--callgrind``, instructions per call (callgrind, runs of
200 and 1200 calls differenced, exact); with ``--icache`` too, the
instructions and the instruction-cache misses (64-byte lines of code) per
call outside the stand-in driver, which is set to evict the cache at every
launch as a real one does (``FAKECUDA_CODE_KB=32``): the lines a warm call
fetches again on a GPU host; else µs per call (medians of alternating
rounds; a shared machine's timings are rough).

  LD_LIBRARY_PATH=target/fakecuda FAKECUDA_CODE_KB=0 FAKECUDA_DATA_KB=0 \\
    python crates/kernelkit-py/bench/overhead.py --base /path/to/old [--callgrind [--icache]]
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
# The stand-in torch is a test fixture of the package.
TESTS = os.path.join(HERE, "..", "tests")

CHILD = r"""
import os, sys, time
sys.path.insert(0, %(here)r)
import standin_torch as st
import kernelkit as kk
if sys.argv[3:] == ["methods"]:
    try:
        from kernelkit import _testing
        _testing.torch_shim(False)
    except ImportError:  # a build from before the hooks' submodule
        kk._kernelkit._torch_shim(False)
N = 1024
x, y = st.make((N,), ptr=st._alloc(4 * N)), st.make((N,), ptr=st._alloc(4 * N))
k = kk.cuda_kernel(name="add_one_kk", input_names=["x"], output_names=["y"],
                   source="int i = blockIdx.x * blockDim.x + threadIdx.x; y[i] = x[i] + 1.0f;")
g, t = (N, 1, 1), (256, 1, 1)
shapes, dtypes = [x.shape], [x.dtype]
calls = {
    "out": lambda: k(inputs=[x], grid=g, threadgroup=t, out=[y]),
    "alloc": lambda: k(inputs=[x], grid=g, threadgroup=t, output_shapes=shapes, output_dtypes=dtypes),
}
f = calls[sys.argv[1]]
f()
n = int(sys.argv[2])
if n:  # callgrind: n calls, nothing else
    for _ in range(n):
        f()
else:  # timing: the median of 9 batches of 2000
    s = []
    for _ in range(9):
        t0 = time.perf_counter()
        for _ in range(2000):
            f()
        s.append((time.perf_counter() - t0) / 2000 * 1e6)
    print(sorted(s)[4])
"""


# One row of `callgrind_annotate --show=Ir,I1mr`: two counts (a dot for
# none, each maybe with a percentage) and the function with its object.
ROW = re.compile(r"\s*([\d,]+|\.)\s*(?:\(\s*[\d.]+%\))?\s+([\d,]+|\.)\s*(?:\(\s*[\d.]+%\))?\s+(.*)$")


def outside_driver(profile):
    """(instructions, I1 misses) of a cache-simulated callgrind profile,
    the stand-in driver (`libcuda`) left out."""
    text = subprocess.run(["callgrind_annotate", "--auto=no", "--show=Ir,I1mr", "--threshold=100", profile],
                          capture_output=True, text=True, check=True).stdout
    ir = misses = 0
    rows = text.split("file:function", 1)[-1].splitlines()
    for m in filter(None, map(ROW.match, rows)):
        if "libcuda" not in m.group(3):
            ir += 0 if m.group(1) == "." else int(m.group(1).replace(",", ""))
            misses += 0 if m.group(2) == "." else int(m.group(2).replace(",", ""))
    return ir, misses


# Whether tensors are read through their methods (`--methods`), not the shim.
METHODS = False


def child(build, mode, calls, callgrind, icache=False):
    # A fixed hash seed: dict layouts (and so counts) alike from run to run.
    env = dict(os.environ, KERNELKIT_CACHE="memory", KERNELKIT_COMPILE_WORKERS="0", PYTHONHASHSEED="0")
    if build:
        env["PYTHONPATH"] = build + os.pathsep + env.get("PYTHONPATH", "")
    code = CHILD % {"here": TESTS}
    cmd = [sys.executable, "-c", code, mode, str(calls)] + (["methods"] if METHODS else [])
    if callgrind:
        tool = ["valgrind", "--tool=callgrind"]
        if icache:
            env["FAKECUDA_CODE_KB"] = "32"
            tool += ["--cache-sim=yes", "--I1=32768,8,64", "--D1=49152,12,64", "--LL=2097152,16,64"]
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "cg.out")
            done = subprocess.run(tool + [f"--callgrind-out-file={out}"] + cmd,
                                  env=env, capture_output=True, text=True, check=True)
            if icache:
                return outside_driver(out)
            return int(re.search(r"Collected : (\d+)", done.stderr).group(1))
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return float(done.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", help="a folder holding an older build's `kernelkit` package")
    ap.add_argument("--build", action="append", default=[], metavar="NAME=DIR",
                    help="another build to measure beside them (e.g. abi3 against per-version)")
    ap.add_argument("--no-current", action="store_true", help="leave out the installed package")
    ap.add_argument("--callgrind", action="store_true")
    ap.add_argument("--icache", action="store_true",
                    help="with --callgrind: instructions and I1 misses per call outside the driver")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--methods", action="store_true",
                    help="read tensors through their methods, not torch's C functions")
    a = ap.parse_args()
    global METHODS
    METHODS = a.methods
    builds = {} if a.no_current else {"current": None}
    if a.base:
        builds["base"] = os.path.abspath(a.base)
    for b in a.build:
        name, _, folder = b.partition("=")
        builds[name] = os.path.abspath(folder)
    for mode in ("out", "alloc"):
        figures = {}
        for name, build in builds.items():
            if a.callgrind and a.icache:
                (ir1, mr1), (ir2, mr2) = child(build, mode, 200, True, True), child(build, mode, 1200, True, True)
                print(f"overhead.{mode}.{name}.icache = {(ir2 - ir1) / 1000:.0f} instructions/call, "
                      f"{(mr2 - mr1) / 1000:.1f} I1 misses/call (outside the driver)", flush=True)
                continue
            if a.callgrind:
                short, long = child(build, mode, 200, True), child(build, mode, 1200, True)
                figures[name] = (long - short) / 1000
        if not a.callgrind:
            samples = {name: [] for name in builds}
            for _ in range(a.rounds):
                for name, build in builds.items():
                    samples[name].append(child(build, mode, 0, False))
            figures = {name: statistics.median(s) for name, s in samples.items()}
        if not figures:
            continue
        unit = "instructions/call" if a.callgrind else "us/call"
        for name, v in figures.items():
            print(f"overhead.{mode}.{name} = {v:.3f} {unit}", flush=True)
        if "base" in figures and "current" in figures:
            print(f"overhead.{mode}.ratio = {figures['current'] / figures['base']:.3f}  # current / base",
                  flush=True)
        first = next(iter(figures))
        for name in list(figures)[1:]:
            if {first, name} != {"current", "base"}:
                print(f"overhead.{mode}.{name}_over_{first} = {figures[name] / figures[first]:.3f}", flush=True)


if __name__ == "__main__":
    main()
