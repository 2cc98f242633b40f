"""Every spelling of a call's arguments gives the canonical call's result,
and a warm call equal by value to the last one takes the fast path: the
call entry takes it whole (Python 3.12 and later) and nothing of it is
parsed anew (``kernelkit._testing.call_routes``). NumPy arrays, on every
device present."""

import sys

import numpy as np
import pytest

import kernelkit as kk
from kernelkit import _testing
from conftest import DEVICES

N = 4096
BODY = """
    uint i = thread_position_in_grid.x;
    out[i] = inp[i] * K;
"""
ENTRY = sys.version_info >= (3, 12)


def scale():
    return kk.metal_kernel(name="spelled", input_names=["inp"], output_names=["out"], source=BODY)


def fresh(n):
    """`n` as a new int object (as a computed extent is)."""
    return int(str(n))


def spellings(x, y, where):
    """Each spelling of the same call, as keyword dicts; `out=` ones write
    into `y`."""
    n = fresh(N)
    stream = {"device": where} if where == "cuda" else {"stream": kk.cpu}
    common = dict(inputs=[x], **stream)
    alloc = dict(output_shapes=[x.shape], output_dtypes=[x.dtype])
    return {
        "canonical": dict(common, grid=(N, 1, 1), threadgroup=(256, 1, 1), template=[("K", 3)], **alloc),
        "built tuple": dict(common, grid=(n, 1, 1), threadgroup=(fresh(256), 1, 1), template=[("K", 3)], **alloc),
        "lists": dict(common, grid=[N, 1, 1], threadgroup=[256, 1, 1], template=[["K", 3]],
                      output_shapes=[[N]], output_dtypes=[np.float32]),
        "literal shape": dict(common, grid=(N, 1, 1), threadgroup=(256, 1, 1), template=[("K", 3)],
                              output_shapes=[(n,)], output_dtypes=["float32"]),
        "dtype object": dict(common, grid=(N, 1, 1), threadgroup=(256, 1, 1), template=[("K", 3)],
                             output_shapes=[x.shape], output_dtypes=[np.dtype("float32")]),
        "template dict": dict(common, grid=(N, 1, 1), threadgroup=(256, 1, 1), template={"K": fresh(3)}, **alloc),
        "init_value": dict(common, grid=(N, 1, 1), threadgroup=(256, 1, 1), template=[("K", 3)],
                           init_value=0.0, **alloc),
        "out=": dict(common, grid=(N, 1, 1), threadgroup=(256, 1, 1), template=[("K", 3)], out=[y]),
        "out= with shapes": dict(common, grid=(n, 1, 1), threadgroup=(256, 1, 1), template={"K": 3},
                                 out=[y], output_shapes=[list(x.shape)], output_dtypes=["float32"]),
    }


@pytest.mark.parametrize("device", DEVICES)
def test_every_spelling_gives_the_canonical_result(device):
    k = scale()
    x = np.arange(N, dtype=np.float32)
    y = np.zeros(N, dtype=np.float32)
    expected = x * 3
    for name, call in spellings(x, y, device).items():
        y[:] = 0
        (got,) = k(**call)
        np.testing.assert_array_equal(got, expected, err_msg=name)
        if "out" in call and device == "cpu":
            assert got is y, name


@pytest.mark.parametrize("device", DEVICES)
def test_a_warm_call_of_any_spelling_takes_the_fast_path(device):
    k = scale()
    x = np.arange(N, dtype=np.float32)
    y = np.zeros(N, dtype=np.float32)
    for name in spellings(x, y, device):
        # The call as the caller's code makes it: its arguments built anew
        # each time (new tuples, new ints, `x.shape` read again).
        k(**spellings(x, y, device)[name])
        before = _testing.call_routes()
        for _ in range(3):
            k(**spellings(x, y, device)[name])
        after = _testing.call_routes()
        diff = {r: after[r] - before[r] for r in after}
        assert diff["parsed"] == 0, (name, diff)
        if ENTRY:
            assert diff["entry"] == 3 and diff["method"] == 0, (name, diff)


def test_a_changed_value_is_parsed_and_used():
    k = scale()
    x = np.arange(16, dtype=np.float32)
    k(inputs=[x], grid=[16, 1, 1], threadgroup=[4, 1, 1], template={"K": 2},
      output_shapes=[[16]], output_dtypes=["float32"])
    grid = [16, 1, 1]
    shapes = [[16]]
    before = _testing.call_routes()["parsed"]
    # The same list objects changed in place are new values, not the
    # remembered ones.
    grid[0] = 8
    shapes[0][0] = 8
    (got,) = k(inputs=[x], grid=grid, threadgroup=[4, 1, 1], template={"K": 5},
               output_shapes=shapes, output_dtypes=["float32"])
    assert _testing.call_routes()["parsed"] > before
    np.testing.assert_array_equal(got, x[:8] * 5)
