"""The cold burst's control: what the machine itself gives to 16 NVRTC
compiles at once, without kernelkit.

``compare.py``'s ``parallel.*`` figures time 16 Python threads calling 16
new kernels (16 compiles spread over kernelkit's compile workers) against
one cold compile. This control takes kernelkit out: 16 processes, each with
NVRTC loaded and warmed by one compile, wait at a barrier and then each
compile one source of their own, the source kernelkit generates for the
same kernel (``kernelkit source --dialect cuda``), with kernelkit's NVRTC
options; the figure is the wall time from the barrier to the last cubin,
against one such process compiling alone. Where 16 compiles at once take
more than 1.5x one on this machine (shared cores, SMT siblings, memory
bandwidth), the ``parallel.*`` target is out of kernelkit's reach there, and
the ratio to compare kernelkit with is this one.

  python nvrtc_control.py --cli PATH/kernelkit [--turns 5] [--procs 16]

Prints ``control.*`` lines (and, with ``--json``, writes them).
"""

import argparse
import ctypes
import glob
import json
import multiprocessing as mp
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

BODY = "uint i = thread_position_in_grid.x; out[i] = inp[i] * 2.0f + %d.0f; /* %s */"
# The body's constant in the generated source, replaced in every compile.
PLACEHOLDER = "4242424.0f"
# Set by --repeat: compile the same program every time (what this control
# did until 2026-12-01, and why it read fast: see `fresh_text`).
REPEAT = False


def fresh_text(source):
    """A program NVRTC has not compiled before: the body's constant and its
    comment made new. A new comment alone is not enough: NVRTC with a CUDA
    driver beside it returns a program it compiled before (same tokens,
    same options) in well under half the time of a new one, and a burst of
    new kernels never gets that."""
    text = source.replace("TAG", uuid.uuid4().hex)
    if REPEAT:
        return text
    return text.replace(PLACEHOLDER, f"{random.randint(1, 1 << 22)}.0f")


def generated_source(cli):
    """The CUDA source kernelkit generates for the burst's kernel."""
    spec = {
        "name": "cold_control",
        "source": BODY % (int(PLACEHOLDER.split(".")[0]), "TAG"),
        "inputs": [["inp", "float32", [1024]]],
        "outputs": [["out", "float32", [1024]]],
        "grid": [1024, 1, 1],
        "threadgroup": [256, 1, 1],
    }
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(spec, f)
    try:
        return subprocess.run([cli, "source", "--dialect", "cuda", f.name],
                              check=True, capture_output=True, text=True).stdout
    finally:
        os.unlink(f.name)


def nvrtc():
    roots = [os.environ.get("CUDA_HOME", ""), "/usr/local/cuda"]
    for root in filter(None, roots):
        for lib in sorted(glob.glob(os.path.join(root, "lib*", "libnvrtc.so*"))):
            if "builtins" not in lib and "alt" not in lib:
                return ctypes.CDLL(lib), os.path.join(root, "include")
    return ctypes.CDLL("libnvrtc.so"), "/usr/local/cuda/include"


def compile_text(lib, text, words, name=b"kernel.cu", header_arrays=False, cubin=False,
                 headers=()):
    """One NVRTC compile of `text`, exactly, with option `words` (str), to a
    cubin. `header_arrays`: empty, non-NULL header arrays (as kernelkit
    passes them) instead of NULL; `cubin`: the cubin also copied out;
    `headers`: (include name, text) pairs given to NVRTC."""
    prog = ctypes.c_void_p()
    if headers:
        names = (ctypes.c_char_p * len(headers))(*[n.encode() for n, _ in headers])
        texts = (ctypes.c_char_p * len(headers))(*[t.encode() for _, t in headers])
        arrays = (len(headers), texts, names)
    else:
        empty = (ctypes.c_char_p * 1)()
        arrays = (0, empty, empty) if header_arrays else (0, None, None)
    assert lib.nvrtcCreateProgram(ctypes.byref(prog), text.encode(), name, *arrays) == 0
    encoded = [w.encode() for w in words]
    rc = lib.nvrtcCompileProgram(prog, len(encoded), (ctypes.c_char_p * len(encoded))(*encoded))
    if rc != 0:
        size = ctypes.c_size_t()
        lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetProgramLog(prog, log)
        raise RuntimeError(f"NVRTC {rc}: {log.value.decode(errors='replace')[-2000:]}")
    size = ctypes.c_size_t()
    assert lib.nvrtcGetCUBINSize(prog, ctypes.byref(size)) == 0 and size.value > 0
    if cubin:
        out = ctypes.create_string_buffer(size.value)
        assert lib.nvrtcGetCUBIN(prog, out) == 0
    lib.nvrtcDestroyProgram(ctypes.byref(prog))


# NVRTC's own compile cache off, as kernelkit has it (`backend/cuda/nvrtc_cache.rs`;
# set by main() for NVRTC 12.9 on, unless --nvrtc-cache keeps it).
NO_CACHE = []


def kernelkit_words(include, arch):
    """kernelkit's NVRTC options for `arch` with the toolkit's `include`."""
    return [f"--gpu-architecture={arch}", "--device-as-default-execution-space",
            f"-I{include}", f"-I{include}/cccl"] + NO_CACHE


def nvrtc_version(lib):
    major, minor = ctypes.c_int(), ctypes.c_int()
    assert lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)) == 0
    return major.value, minor.value


# How each compile is given to NVRTC (--form): `full`, the generated source
# as it is; `pch`, its prelude as a header NVRTC precompiles (what
# KERNELKIT_NVRTC_PCH does on compile workers, see backend/cuda/pch.rs), the
# process's first compile writing the header; `minimal`, with NVRTC's
# `-minimal` (fewer builtin declarations); `pch_minimal`, both.
FORM = "full"
# More options for every compile (--extra, e.g. NVRTC's `--no-cache`).
EXTRA = []
PRELUDE_END = "// ---- end of prelude ----"


def through_header(text):
    """`text` with its prelude as a header: (source, [(name, header)])."""
    end = text.index(PRELUDE_END)
    prelude, rest = text[:end], text[end:]
    # (The control's source is in the default math mode: no marker line.)
    include = '#include "kk_prelude.h"\n#pragma nv_hdrstop\n'
    blank = prelude.count("\n") - include.count("\n")
    return include + "\n" * max(blank, 0) + rest, [("kk_prelude.h", prelude)]


# Kernels in each program: the source's kernel, after its prelude,
# repeated with new names and constants.
KERNELS = 1


def with_kernels(source, count):
    """`source` (a new program) with its kernel `count` times after its
    prelude, each with a name and a constant of its own."""
    if count == 1:
        return fresh_text(source)
    end = source.index(PRELUDE_END)
    prelude, kernel = source[:end], source[end:]
    copies = [re.sub(r"(custom_kernel_\w+)", rf"\g<1>_{i}", fresh_text(kernel)) for i in range(count)]
    return prelude + "".join(copies)


def compile_once(lib, include, source, arch):
    """One NVRTC compile of a new program from `source`, to a cubin, as
    kernelkit's options ask, in the form --form names."""
    text, words, headers = with_kernels(source, KERNELS), kernelkit_words(include, arch), ()
    if FORM.startswith("pch"):
        text, headers = through_header(text)
        words += ["-pch", "--pch-messages=false", "--diag-suppress=630"]
    if FORM.endswith("minimal"):
        words += ["-minimal"]
    words += EXTRA
    compile_text(lib, text, words, name=b"kernelkit.cu", headers=headers)


def cuda_context():
    """A CUDA context made current, as in a process that launches kernels
    (``--cuda``: does the driver beside NVRTC change its time?)."""
    cuda = ctypes.CDLL("libcuda.so.1")
    dev, ctx = ctypes.c_int(), ctypes.c_void_p()
    assert cuda.cuInit(0) == 0
    assert cuda.cuDeviceGet(ctypes.byref(dev), 0) == 0
    assert cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0
    assert cuda.cuCtxSetCurrent(ctx) == 0


def child(source, arch, start, done, turns, with_cuda=False):
    if with_cuda:
        cuda_context()
    lib, include = nvrtc()
    compile_once(lib, include, source, arch)  # NVRTC loaded and warm
    compile_once(lib, include, source, arch)  # (a header written, if any)
    for _ in range(turns):
        start.wait()
        compile_once(lib, include, source, arch)
        done.wait()


def burst(source, arch, procs, turns, with_cuda=False):
    """Median wall time (ms) of `procs` processes compiling at once."""
    ctx = mp.get_context("fork")
    start, done = ctx.Barrier(procs + 1), ctx.Barrier(procs + 1)
    kids = [ctx.Process(target=child, args=(source, arch, start, done, turns, with_cuda))
            for _ in range(procs)]
    for k in kids:
        k.start()
    walls = []
    for _ in range(turns):
        start.wait()
        t = time.perf_counter()
        done.wait()
        walls.append((time.perf_counter() - t) * 1e3)
    for k in kids:
        k.join()
        if k.exitcode != 0:
            raise RuntimeError(f"a control process failed ({k.exitcode})")
    return statistics.median(walls), walls


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", help="the kernelkit CLI (for the generated source)")
    ap.add_argument("--source", help="a file holding the generated source (instead of --cli)")
    ap.add_argument("--arch", default="sm_90a")
    ap.add_argument("--procs", type=int, default=16)
    ap.add_argument("--turns", type=int, default=5)
    ap.add_argument("--cuda", action="store_true",
                    help="each process makes a CUDA context current before it compiles")
    ap.add_argument("--repeat", action="store_true",
                    help="compile the same program every time (NVRTC then answers from what it kept)")
    ap.add_argument("--form", default="full", choices=["full", "minimal", "pch", "pch_minimal"],
                    help="how each compile is given to NVRTC (see FORM)")
    ap.add_argument("--extra", default="", help="more NVRTC options, comma-separated")
    ap.add_argument("--nvrtc-cache", action="store_true",
                    help="keep NVRTC's own compile cache (12.9 on), which kernelkit turns off")
    ap.add_argument("--json")
    a = ap.parse_args()
    global REPEAT, FORM, EXTRA
    REPEAT, FORM, EXTRA = a.repeat, a.form, list(filter(None, a.extra.split(",")))
    if not a.nvrtc_cache and nvrtc_version(nvrtc()[0]) >= (12, 9):
        NO_CACHE.append("--no-cache")
    if a.source:
        with open(a.source) as f:
            source = f.read()
    elif a.cli:
        source = generated_source(a.cli)
    else:
        ap.error("give --cli or --source")
    out = {"control.form": a.form, "control.source_bytes": len(source),
           "control.cpus": os.cpu_count()}
    # One alone and all at once, in turns, so that both see the same machine.
    singles, bursts = [], []
    for _ in range(a.turns):
        singles.append(burst(source, a.arch, 1, 1, a.cuda)[0])
        bursts.append(burst(source, a.arch, a.procs, 1, a.cuda)[0])
    out["control.one_ms"] = statistics.median(singles)
    out[f"control.{a.procs}_processes_ms"] = statistics.median(bursts)
    out["control.ratio"] = out[f"control.{a.procs}_processes_ms"] / out["control.one_ms"]
    for k, v in out.items():
        print(f"{k} = {v:.3f}" if isinstance(v, float) else f"{k} = {v}")
    print(f"control.all_one_ms = {[round(s, 1) for s in singles]}")
    print(f"control.all_{a.procs}_ms = {[round(b, 1) for b in bursts]}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
