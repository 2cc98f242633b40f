"""Every spelling of a torch call, and donation, on the one-pass route,
without torch and without a GPU: the stand-in ``torch`` (``standin_torch.py``)
over the stand-in driver (``tools/fakecuda``; ``scripts/test.sh`` builds it).
Kernels do not run there: these tests check the route each warm call takes
(``kernelkit._testing.call_routes``) and the objects it returns. (Real
torch: ``test_torch_donation.py``.)"""

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
import json, sys, types
sys.path.insert(0, %(here)r)
import standin_torch as st
import kernelkit as kk
from kernelkit import _testing as K

K.torch_shim(sys.argv[1] == "shim")
N = 1024
x, y = st.make((N,), ptr=st._alloc(4 * N)), st.make((N,), ptr=st._alloc(4 * N))
k = kk.cuda_kernel(name="standin_spelled", input_names=["x"], output_names=["y"],
                   source="int i = blockIdx.x * blockDim.x + threadIdx.x; y[i] = x[i] * K;")


def fresh(n):
    return int(str(n))


current = types.SimpleNamespace(cuda_stream=0)  # torch's current stream's handle
spellings = {
    "benchmark's": lambda: dict(grid=(N, 1, 1), threadgroup=(256, 1, 1), template=[("K", 2)], out=[y]),
    "template dict": lambda: dict(grid=(N, 1, 1), threadgroup=(256, 1, 1), template={"K": fresh(2)}, out=[y]),
    "literals": lambda: dict(grid=(fresh(N), 1, 1), threadgroup=[256, 1, 1], template=[("K", 2)], out=[y],
                             output_shapes=[x.shape], output_dtypes=[st.float32]),
    "names": lambda: dict(grid=(N, 1, 1), threadgroup=(256, 1, 1), template=[("K", 2)], out=(y,),
                          output_shapes=[[N]], output_dtypes=["float32"]),
    "stream=": lambda: dict(grid=(N, 1, 1), threadgroup=(256, 1, 1), template=[("K", 2)], out=[y], stream=current),
    "donate": lambda: dict(grid=(N, 1, 1), threadgroup=(256, 1, 1), template=[("K", 2)], donate={"y": "x"}),
    "donate with shapes": lambda: dict(grid=(N, 1, 1), threadgroup=(256, 1, 1), template=[("K", 2)],
                                       donate={"y": "x"}, output_shapes=[x.shape], output_dtypes=["float32"]),
    "allow_overlap": lambda: dict(grid=(N, 1, 1), threadgroup=(256, 1, 1), template=[("K", 2)], out=[x],
                                  allow_overlap=True),
}
report = {}
for name, spelled in spellings.items():
    first = k(inputs=[x], **spelled())
    before = K.call_routes()
    got = [k(inputs=[x], **spelled()) for _ in range(3)]
    after = K.call_routes()
    expected = x if ("donate" in name or name == "allow_overlap") else y
    report[name] = {
        "routes": {r: after[r] - before[r] for r in after if after[r] != before[r]},
        "returns": all(len(r) == 1 and r[0] is expected for r in got + [first]),
    }
report["kept"] = getattr(k, "native", k)._rebound_launches
# Without allow_overlap, out=[x] is refused even though a launch that allows
# it is kept for the same tensors.
try:
    k(inputs=[x], grid=(N, 1, 1), threadgroup=(256, 1, 1), template=[("K", 2)], out=[x])
    report["overlap"] = "ok"
except kk.CallError as e:
    report["overlap"] = str(e)
# A donation whose shape is not the input's.
try:
    k(inputs=[x], grid=(N, 1, 1), threadgroup=(256, 1, 1), template=[("K", 2)], donate={"y": "x"},
      output_shapes=[(N // 2,)], output_dtypes=["float32"])
    report["wrong_shape"] = "ok"
except kk.DonationError as e:
    report["wrong_shape"] = str(e)
print(json.dumps(report))
"""


def run(read):
    env = dict(os.environ, LD_LIBRARY_PATH=FAKE, KERNELKIT_CACHE="memory", KERNELKIT_COMPILE_WORKERS="0")
    done = subprocess.run([sys.executable, "-c", CHILD % {"here": HERE}, read],
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_every_warm_spelling_takes_the_one_pass_route():
    report = run("shim")
    entry = sys.version_info >= (3, 12)
    for name in ("benchmark's", "template dict", "literals", "names", "stream=", "donate",
                 "donate with shapes", "allow_overlap"):
        r = report[name]
        assert r["returns"], name
        want = {"repeat": 3}
        if entry:
            want["entry"] = 3
        else:
            want["method"] = 3
        assert r["routes"] == want, (name, r["routes"])
    # One launch for out=[y]; one for the donated (and the overlapping)
    # calls, whose output is the input: never shared with the plain one.
    assert report["kept"] == 3


def test_a_kept_donation_never_lets_a_plain_call_overlap():
    report = run("shim")
    assert "shares memory with input `x`" in report["overlap"]
    assert "output `y` cannot be input `x`'s buffer" in report["wrong_shape"]


def test_the_methods_read_gives_the_same_results():
    report = run("methods")
    for name in ("benchmark's", "donate", "allow_overlap"):
        assert report[name]["returns"], name
    assert "shares memory" in report["overlap"]
