"""The torch path without torch and without a GPU: the stand-in ``torch``
(``standin_torch.py``, beside this file) over the stand-in driver and torch C
interface (``tools/fakecuda``; ``scripts/test.sh`` builds them). Kernels do
not run there, so these tests check what a call does around the launch:
which objects come back, which layouts are kept, and that every error is
the same whether tensors are read through torch's C functions (the shim,
and the one-pass warm ``out=`` call it allows) or through their methods.

Each case runs in a child process (the stand-in driver must be the
``libcuda`` loaded, and the stand-in installs itself as ``torch``). A tuned
kernel (``kk.autotune``) on these tensors: its warm ``out=`` call takes the
untuned call's one-pass route, times nothing and calls neither its grid nor
its key function (a new layout calls both).
"""

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
FAKE = os.path.join(ROOT, "target", "fakecuda")
HERE = os.path.dirname(os.path.abspath(__file__))

pytestmark = pytest.mark.skipif(
    not os.path.exists(os.path.join(FAKE, "torch", "lib", "libtorch_cuda.so")),
    reason="the stand-in driver and torch are not built (bash tools/fakecuda/build.sh)",
)

CHILD = r"""
import json, re, sys
sys.path.insert(0, %(here)r)
import standin_torch as st
import kernelkit as kk
from kernelkit import _testing as K

shim = sys.argv[1] == "shim"
K.torch_shim(shim)
N = 1024
x, y = st.make((N,), ptr=st._alloc(4 * N)), st.make((N,), ptr=st._alloc(4 * N))
k = kk.cuda_kernel(name="standin_add", input_names=["x"], output_names=["y"],
                   source="int i = blockIdx.x * blockDim.x + threadIdx.x; y[i] = x[i] + 1.0f;")
native = getattr(k, "native", k)
g, t = (N, 1, 1), (256, 1, 1)
report = {"shim": K.torch_shim(), "slot": K.torch_cdata_slot()}


def outcome(**kw):
    try:
        r = k(**kw)
    except Exception as e:
        return [type(e).__name__, re.sub(r"0x[0-9a-f]+", "0x?", str(e))]  # addresses vary
    outs = kw.get("out")
    return ["ok", type(r).__name__, len(r), all(a is b for a, b in zip(r, outs or [])), r is not outs]


cases = report["cases"] = []
outs = [y]
for _ in range(3):
    cases.append(outcome(inputs=[x], grid=g, threadgroup=t, out=outs))
cases.append(outcome(inputs=(x,), grid=g, threadgroup=t, out=(y,)))
report["kept_after_repeats"] = native._rebound_launches
# Errors of a call whose layout is kept: what differs is an address.
cases.append(outcome(inputs=[x], grid=g, threadgroup=t, out=[x]))
cases.append(outcome(inputs=[x], grid=g, threadgroup=t, out=[st.make((N,), ptr=st._alloc(4 * N + 8) + 2)]))
cases.append(outcome(inputs=[st.make((N,), ptr=st._alloc(4 * N + 8) + 2)], grid=g, threadgroup=t, out=[y]))
# Calls that differ in something else.
cases.append(outcome(inputs=[x], grid=g, threadgroup=t, out=[y, y]))
cases.append(outcome(inputs=[x, x], grid=g, threadgroup=t, out=[y]))
cases.append(outcome(inputs=[x], grid=g, threadgroup=t, out=[st.make((N // 2,), ptr=st._alloc(4 * N), strides=(2,))]))
cases.append(outcome(inputs=[x], grid=g, threadgroup=t, out=[st.make((N,), ptr=st._alloc(4 * N), where="cpu")]))
cases.append(outcome(inputs=[x], grid=g, threadgroup=t, out=y))
cases.append(outcome(inputs=[x], grid=g, threadgroup=t, out=[y], init_value=0.0))
cases.append(outcome(inputs=[x], grid=(N // 2, 1, 1), threadgroup=t, out=[y]))
cases.append(outcome(inputs=[x], grid=(N // 2, 1, 1), threadgroup=t, out=[y]))
report["kept_at_end"] = native._rebound_launches

# 16 threads at a barrier, each with tensors of its own, half of them on a
# third layout (another grid), 30 rounds: each call returns its own tensor.
import threading
barrier, wrong = threading.Barrier(16), []


def work(t):
    xt, yt = st.make((N,), ptr=st._alloc(4 * N)), st.make((N,), ptr=st._alloc(4 * N))
    grid = g if t & 1 else (N // 4, 1, 1)
    for _ in range(30):
        barrier.wait()
        r = k(inputs=[xt], grid=grid, threadgroup=t_, out=[yt])
        if len(r) != 1 or r[0] is not yt:
            wrong.append(t)


t_ = t
threads = [threading.Thread(target=work, args=(i,)) for i in range(16)]
for th in threads:
    th.start()
for th in threads:
    th.join()
report["threads_wrong"] = wrong
report["kept_after_threads"] = native._rebound_launches
print(json.dumps(report))
"""


def run(read):
    env = dict(os.environ, LD_LIBRARY_PATH=FAKE, KERNELKIT_CACHE="memory", KERNELKIT_COMPILE_WORKERS="0")
    done = subprocess.run([sys.executable, "-c", CHILD % {"here": HERE}, read],
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_warm_out_calls_return_the_given_tensors_in_a_new_list():
    shim = run("shim")
    assert shim["shim"] and shim["slot"], "the stand-in's tensors are read through the shim"
    for case in shim["cases"][:4]:
        assert case == ["ok", "list", 1, True, True]
    assert shim["kept_after_repeats"] == 1, "one layout, one prepared launch"
    # The grid changed: a second layout kept; the threads' third one too.
    assert shim["kept_at_end"] == 2
    assert shim["threads_wrong"] == [] and shim["kept_after_threads"] == 3


def test_errors_name_the_kernel_and_the_argument():
    cases = run("shim")["cases"]
    overlap, out_misaligned, in_misaligned = cases[4:7]
    assert overlap[0] == "CallError" and "shares memory with input `x`" in overlap[1]
    assert out_misaligned[0] == "ArrayError"
    assert out_misaligned[1].startswith("kernel `standin_add`: output `y`: ") and "not aligned" in out_misaligned[1]
    assert in_misaligned[1].startswith("kernel `standin_add`: input `x`: ") and "not aligned" in in_misaligned[1]
    too_many_outs, too_many_ins, strided, on_cpu, not_a_list, fill = cases[7:13]
    assert "out= has 2 array(s) for 1 output(s)" in too_many_outs[1]
    assert too_many_ins[0] == "CallError" and "input" in too_many_ins[1]
    assert "not row-contiguous" in strided[1]
    assert on_cpu[0] == "CallError" and "cpu" in on_cpu[1]
    assert not_a_list[0] == "ArgumentTypeError" and "out" in not_a_list[1]
    assert fill[0] == "ok"


def test_the_shim_and_the_methods_give_the_same_outcomes():
    shim, methods = run("shim"), run("methods")
    assert not methods["shim"]
    assert shim["cases"] == methods["cases"]
    assert shim["kept_at_end"] == methods["kept_at_end"]
    assert methods["threads_wrong"] == [] and methods["kept_after_threads"] == 3


TUNED = r"""
import json, sys
sys.path.insert(0, %(here)r)
import standin_torch as st
import kernelkit as kk
from kernelkit import _testing as K

K.torch_shim(sys.argv[1] == "shim")
N = 1024
x, y = st.make((N,), ptr=st._alloc(4 * N)), st.make((N,), ptr=st._alloc(4 * N))
k = kk.cuda_kernel(name="standin_tuned", input_names=["x"], output_names=["y"],
                   source="int i = blockIdx.x * blockDim.x + threadIdx.x; y[i] = x[i] * K + 1.0f;")
tuned = kk.autotune(k, configs=[{"threadgroup": (tg, 1, 1)} for tg in (128, 256)])
call = dict(inputs=[x], grid=(N, 1, 1), template={"K": 2}, out=[y])
first = tuned(**call)
best = tuned.best(**call)


def untuned():
    return k(inputs=[x], grid=(N, 1, 1), threadgroup=best["threadgroup"], template={"K": 2}, out=[y])


untuned()


def routes(f):
    before = K.call_routes()
    for _ in range(3):
        assert f()[0] is y
    after = K.call_routes()
    return {n: after[n] - before[n] for n in after}


# A grid function and a key function: called for a layout the tuned kernel
# has not kept (its first calls), not by a warm call.
calls = {"grid": 0, "key": 0}


def grid(config, inputs):
    calls["grid"] += 1
    return (inputs[0].shape[0],)


def key(inputs):
    calls["key"] += 1
    return inputs[0].shape[0]


with_fns = kk.autotune(k, configs=[{"threadgroup": (tg, 1, 1)} for tg in (64, 512)], grid=grid, key=key)
fn_call = dict(inputs=[x], template={"K": 2}, out=[y])
with_fns(**fn_call)
fn_best = with_fns.best(**fn_call)


def fn_untuned():
    return k(inputs=[x], grid=(N, 1, 1), threadgroup=fn_best["threadgroup"], template={"K": 2}, out=[y])


warm = kk.cache_stats("cuda")
untuned()
report = {"first": first[0] is y, "untuned": routes(untuned), "tuned": routes(lambda: tuned(**call))}
fn_untuned()
report["fn_untuned"] = routes(fn_untuned)
with_fns(**fn_call)  # keeps its launch for the layout
calls.update(grid=0, key=0)
report["fn_tuned"] = routes(lambda: with_fns(**fn_call))
report["fn_calls"] = dict(calls)
now = kk.cache_stats("cuda")
report["timed"] = [now[n] - warm[n] for n in ("tunes", "tune_launches")]
# Another layout: the functions are called again, and its result is its own.
x2, y2 = st.make((N // 2,), ptr=st._alloc(2 * N)), st.make((N // 2,), ptr=st._alloc(2 * N))
calls.update(grid=0, key=0)
report["new_layout"] = with_fns(inputs=[x2], template={"K": 2}, out=[y2])[0] is y2
report["new_layout_calls"] = dict(calls)
print(json.dumps(report))
"""


@pytest.mark.parametrize("read", ["shim", "methods"])
def test_a_warm_tuned_call_takes_the_untuned_calls_route(read):
    env = dict(os.environ, LD_LIBRARY_PATH=FAKE, KERNELKIT_CACHE="memory", KERNELKIT_COMPILE_WORKERS="0")
    done = subprocess.run([sys.executable, "-c", TUNED % {"here": HERE}, read],
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["first"]
    assert report["tuned"] == report["untuned"], report
    assert report["tuned"]["parsed"] == 0
    assert report["fn_tuned"] == report["fn_untuned"], report
    assert report["fn_calls"] == {"grid": 0, "key": 0}, report
    assert report["new_layout"], report
    assert report["new_layout_calls"]["grid"] >= 1 and report["new_layout_calls"]["key"] >= 1, report
    if read == "shim":
        assert report["tuned"]["repeat"] == 3 and report["fn_tuned"]["repeat"] == 3, report
    assert report["timed"] == [0, 0]
