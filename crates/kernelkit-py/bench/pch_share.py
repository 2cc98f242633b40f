"""Does one precompiled prelude shared by forked compile processes beat one
header per process when 16 compile at once?

``nvrtc_control.py --form pch`` gives each of 16 processes its own header
(NVRTC's automatic ``-pch``), as kernelkit's workers have them: 16 at once
take 1.5-1.9x one. An earlier call measured 16 processes forked from one
that had written a header *file* (``--create-pch``) and then each read it
(``--use-pch``) at 1.18x. This control separates what differs between the
two, each form 16 processes against one, in turns:

- ``own_full``: each process loads NVRTC after the fork, full source;
- ``own_auto``: the same with its own automatic header (the workers today);
- ``parent_full``: NVRTC loaded and warmed in the parent before the fork
  (the children share its pages until they write them), full source;
- ``parent_auto``: the parent writes the automatic header, the children
  inherit it (the header's file and NVRTC's heap for it);
- ``shared_file``: the parent writes a header file, the children use it.

Every child compiles twice before the barrier (its own state warm, as a
worker's after a few jobs), then one new program.

Measured on the H200 (BENCHMARKS.md, "2026-12-01, evening"), two runs:
the shared file 1.22x / 1.32x, each process's own header 1.17x / 1.03x,
the parent's header inherited 1.46x / 1.44x: no form stands out from the
noise of one compile (40-84 ms on these vCPUs), so kernelkit's workers
keep a header each. (NVRTC's own cache is on here, as NVRTC has it.)

  python pch_share.py --cli PATH/kernelkit [--forms a,b] [--turns 5]
"""

import argparse
import ctypes
import multiprocessing as mp
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nvrtc_control as nc  # noqa: E402

PCH_FILE = os.path.join(tempfile.gettempdir(), f"kk_pch_share_{os.getpid()}.pch")
QUIET = ["--pch-messages=false", "--diag-suppress=630"]


def words_for(form, include, arch, create=False):
    words = nc.kernelkit_words(include, arch)
    if form.endswith("auto"):
        return words + ["-pch"] + QUIET
    if form == "shared_file":
        if create:
            return words + [f"--create-pch={PCH_FILE}"] + QUIET
        return words + [f"--use-pch={PCH_FILE}"] + QUIET
    return words


def compile_form(lib, include, source, arch, form, create=False, check_log=None):
    text, headers = nc.fresh_text(source), ()
    if not form.endswith("full"):
        text, headers = nc.through_header(text)
    words = words_for(form, include, arch, create)
    prog = ctypes.c_void_p()
    names = (ctypes.c_char_p * max(len(headers), 1))(*[n.encode() for n, _ in headers])
    texts = (ctypes.c_char_p * max(len(headers), 1))(*[t.encode() for _, t in headers])
    assert lib.nvrtcCreateProgram(ctypes.byref(prog), text.encode(), b"kernelkit.cu",
                                  len(headers), texts, names) == 0
    enc = [w.encode() for w in words]
    rc = lib.nvrtcCompileProgram(prog, len(enc), (ctypes.c_char_p * len(enc))(*enc))
    size = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetProgramLog(prog, log)
    log = log.value.decode(errors="replace")
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    if rc != 0:
        raise RuntimeError(f"NVRTC {rc} ({form}): {log[-1500:]}")
    if check_log is not None:
        check_log(log)
    return log


STATE = {}


def parent_setup(source, arch, form):
    """What the parent does before it forks (loaded NVRTC, a header)."""
    if not form.startswith(("parent", "shared")):
        return
    if form not in STATE:
        lib, include = nc.nvrtc()
        if form == "shared_file":
            log = compile_form(lib, include, source, arch, form, create=True)
            if not os.path.exists(PCH_FILE):
                raise RuntimeError(f"no header file written: {log[-800:]}")
        else:
            compile_form(lib, include, source, arch, form)
            compile_form(lib, include, source, arch, form)
        STATE[form] = (lib, include)


def child(source, arch, form, start, done, turns):
    if form in STATE:
        lib, include = STATE[form]
    else:
        lib, include = nc.nvrtc()

    def no_refusal(log):
        if "precompiled header" in log and "using" not in log:
            raise RuntimeError(f"header refused ({form}): {log[-800:]}")

    compile_form(lib, include, source, arch, form)
    compile_form(lib, include, source, arch, form, check_log=no_refusal)
    for _ in range(turns):
        start.wait(120)
        compile_form(lib, include, source, arch, form, check_log=no_refusal)
        done.wait(120)


def burst(source, arch, form, procs):
    ctx = mp.get_context("fork")
    start, done = ctx.Barrier(procs + 1), ctx.Barrier(procs + 1)
    kids = [ctx.Process(target=child, args=(source, arch, form, start, done, 1))
            for _ in range(procs)]
    for k in kids:
        k.start()
    start.wait(120)
    t = time.perf_counter()
    done.wait(120)
    wall = (time.perf_counter() - t) * 1e3
    for k in kids:
        k.join()
        if k.exitcode != 0:
            raise RuntimeError(f"a {form} process failed ({k.exitcode})")
    return wall


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli")
    ap.add_argument("--source")
    ap.add_argument("--arch", default="sm_90a")
    ap.add_argument("--procs", type=int, default=16)
    ap.add_argument("--turns", type=int, default=5)
    ap.add_argument("--forms", default="own_full,own_auto,parent_full,parent_auto,shared_file")
    a = ap.parse_args()
    if a.source:
        with open(a.source) as f:
            source = f.read()
    else:
        source = nc.generated_source(a.cli)
    forms = a.forms.split(",")
    for form in forms:
        parent_setup(source, a.arch, form)
    res = {f: ([], []) for f in forms}
    for _ in range(a.turns):
        for form in forms:
            res[form][0].append(burst(source, a.arch, form, 1))
            res[form][1].append(burst(source, a.arch, form, a.procs))
    for form in forms:
        one, many = statistics.median(res[form][0]), statistics.median(res[form][1])
        print(f"share.{form}: one {one:.1f} ms, {a.procs} at once {many:.1f} ms, "
              f"ratio {many / one:.2f}  (one {[round(x, 1) for x in res[form][0]]}, "
              f"many {[round(x, 1) for x in res[form][1]]})", flush=True)
    if os.path.exists(PCH_FILE):
        os.unlink(PCH_FILE)
    return 0


if __name__ == "__main__":
    sys.exit(main())
