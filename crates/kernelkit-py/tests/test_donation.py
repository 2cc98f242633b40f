"""Donation (``donate={"out": "inp"}``) and ``allow_overlap=`` on NumPy
arrays: the output is the input's own buffer, written in place without a
copy (checked by address), the input object itself is returned, and every
donation kernelkit cannot make is a ``DonationError`` naming the kernel, the
output and the input. (torch: ``test_torch_donation.py``.)"""

import sys

import numpy as np
import pytest

import kernelkit as kk
from kernelkit import _testing
from conftest import requires_cuda

INCREMENT = """
    uint i = thread_position_in_grid.x;
    out[i] = inp[i] + 1;
"""


def increment(**kw):
    return kk.metal_kernel(name="increment", input_names=["inp"], output_names=["out"],
                           source=INCREMENT, **kw)


def two_outputs():
    return kk.metal_kernel(
        name="two", input_names=["a", "b"], output_names=["x", "y"],
        source="uint i = thread_position_in_grid.x; x[i] = a[i] * 2; y[i] = b[i] + a[i];",
    )


def address(a):
    return a.__array_interface__["data"][0]


def test_numpy_in_place_without_a_copy():
    k = increment()
    x = np.arange(64, dtype=np.float32)
    where = address(x)
    (got,) = k(inputs=[x], grid=(64, 1, 1), threadgroup=(32, 1, 1), donate={"out": "inp"})
    assert got is x
    assert address(x) == where
    np.testing.assert_array_equal(x, np.arange(64, dtype=np.float32) + 1)


def test_a_view_is_written_in_its_base():
    k = increment()
    base = np.zeros(128, dtype=np.float32)
    view = base[32:96]
    (got,) = k(inputs=[view], grid=(64, 1, 1), threadgroup=(32, 1, 1), donate={"out": "inp"})
    assert got is view and address(got) == address(base) + 32 * 4
    assert base[32:96].tolist() == [1.0] * 64 and base[:32].sum() == 0 and base[96:].sum() == 0


def test_a_warm_donated_call_takes_the_fast_path():
    k = increment()
    x = np.zeros(64, dtype=np.float32)
    call = lambda: k(inputs=[x], grid=(64, 1, 1), threadgroup=(32, 1, 1),  # noqa: E731
                     donate={"out": "inp"}, output_shapes=[x.shape], output_dtypes=[x.dtype])
    call()
    before = _testing.call_routes()
    for _ in range(3):
        call()
    after = _testing.call_routes()
    assert after["parsed"] == before["parsed"]
    if sys.version_info >= (3, 12):
        assert after["entry"] - before["entry"] == 3
    assert x.tolist() == [4.0] * 64


def test_one_donated_output_beside_an_out_array():
    k = two_outputs()
    a = np.full(16, 3.0, dtype=np.float32)
    b = np.full(16, 1.0, dtype=np.float32)
    y = np.zeros(16, dtype=np.float32)
    x, yy = k(inputs=[a, b], grid=(16, 1, 1), threadgroup=(16, 1, 1), donate={"x": "a"}, out=[None, y])
    assert x is a and yy is y
    assert a.tolist() == [6.0] * 16
    # The body wrote x (which is a) first, then read a: y = 1 + 6, each
    # thread in order on its own element.
    assert y.tolist() == [7.0] * 16


def test_allow_overlap_lets_out_be_an_input():
    k = increment()
    x = np.zeros(32, dtype=np.float32)
    with pytest.raises(kk.CallError, match="shares memory with input `inp`"):
        k(inputs=[x], grid=(32, 1, 1), threadgroup=(32, 1, 1), out=[x])
    (got,) = k(inputs=[x], grid=(32, 1, 1), threadgroup=(32, 1, 1), out=[x], allow_overlap=True)
    assert got is x and x.tolist() == [1.0] * 32
    with pytest.raises(kk.ArgumentTypeError, match="allow_overlap"):
        k(inputs=[x], grid=(32, 1, 1), threadgroup=(32, 1, 1), out=[x], allow_overlap="yes")


def refused(match, **call):
    with pytest.raises(kk.DonationError, match=match) as e:
        call.setdefault("grid", (16, 1, 1))
        call.setdefault("threadgroup", (16, 1, 1))
        call.pop("kernel")(**call)
    assert isinstance(e.value, kk.CallError) and isinstance(e.value, ValueError)
    return str(e.value)


def test_donation_errors_name_kernel_output_and_input():
    k = increment()
    t = two_outputs()
    x = np.zeros(16, dtype=np.float32)
    b = np.zeros(16, dtype=np.float32)
    msg = refused("output `out` cannot be input `inp`'s buffer", kernel=k, inputs=[x],
                  donate={"out": "inp"}, output_shapes=[(8,)], output_dtypes=[np.float32])
    assert "kernel `increment`" in msg and "[8]" in msg
    refused("asked as .* int32", kernel=k, inputs=[x], donate={"out": "inp"},
            output_shapes=[x.shape], output_dtypes=[np.int32])
    refused("no output `nope`", kernel=k, inputs=[x], donate={"nope": "inp"})
    refused("no input `nope`", kernel=k, inputs=[x], donate={"out": "nope"})
    refused("donated to output `x` already", kernel=t, inputs=[x, b], donate={"x": "a", "y": "a"})
    ro = np.zeros(16, dtype=np.float32)
    ro.setflags(write=False)
    refused("read-only", kernel=k, inputs=[ro], donate={"out": "inp"})
    strided = np.zeros(32, dtype=np.float32)[::2]
    refused("would copy it first", kernel=k, inputs=[strided], donate={"out": "inp"})
    swapped = np.zeros(16, dtype=">f4")
    refused("would copy it first", kernel=k, inputs=[swapped], donate={"out": "inp"})
    refused("Python scalar", kernel=k, inputs=[1.5], donate={"out": "inp"})
    other = np.zeros(16, dtype=np.float32)
    refused("another array in its place", kernel=k, inputs=[x], donate={"out": "inp"}, out=[other])
    # init_value would fill the input before the kernel reads it.
    refused("init_value", kernel=k, inputs=[x], donate={"out": "inp"}, init_value=0.0)
    # Not a dict: a type error.
    with pytest.raises(kk.ArgumentTypeError, match="donate must be a dict"):
        k(inputs=[x], grid=(16, 1, 1), threadgroup=(16, 1, 1), donate=[("out", "inp")])
    # Some outputs left to allocate: out= is needed for them.
    with pytest.raises(kk.CallError, match="`y` are not donated"):
        t(inputs=[x, b], grid=(16, 1, 1), threadgroup=(16, 1, 1), donate={"x": "a"})


def test_a_strided_input_without_ensure_row_contiguous_is_refused_too():
    k = increment(ensure_row_contiguous=False)
    strided = np.zeros(32, dtype=np.float32)[::2]
    refused("dense array", kernel=k, inputs=[strided], donate={"out": "inp"})


@requires_cuda
def test_numpy_sent_to_a_gpu_cannot_be_donated():
    k = increment()
    x = np.zeros(16, dtype=np.float32)
    refused("NumPy array and the call runs on a GPU", kernel=k, inputs=[x], donate={"out": "inp"},
            device="cuda")
