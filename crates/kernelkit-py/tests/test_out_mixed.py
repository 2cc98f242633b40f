"""``out=`` mixing NumPy arrays with arrays of another kind: every NumPy
output gets the checks an all-NumPy ``out=`` gets (writable, the machine's
byte order, strides of whole elements) and is written in place, never into
a copy the caller does not see. The other kind here is an object with only
``__dlpack__`` (any array-API library), so this runs without torch."""

import numpy as np
import pytest

import kernelkit as kk

TWO = kk.metal_kernel(
    name="mixed_two_outputs",
    input_names=["inp"],
    output_names=["a", "b"],
    source="uint i = thread_position_in_grid.x; a[i] = inp[i]; b[i] = inp[i] * 2;",
)


class OnlyDlpack:
    """An array known to kernelkit only through DLPack."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, **kw):
        return self.array.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


def call(b):
    src = np.arange(4, dtype=np.float32)
    a = np.zeros(4, dtype=np.float32)
    return a, TWO(inputs=[src], grid=(4, 1, 1), threadgroup=(4, 1, 1), out=[OnlyDlpack(a), b])


def test_a_numpy_output_beside_another_kind_is_written_in_place():
    b = np.zeros(4, dtype=np.float32)
    a, (_, got) = call(b)
    assert got is b
    assert (a == np.arange(4)).all() and (b == np.arange(4) * 2).all()


def test_a_big_endian_numpy_output_beside_another_kind_is_refused():
    b = np.zeros(4, dtype=">f4")
    with pytest.raises(kk.CallError, match="byte order"):
        call(b)
    assert (b == 0).all()


def test_a_read_only_numpy_output_beside_another_kind_is_refused():
    b = np.zeros(4, dtype=np.float32)
    b.flags.writeable = False
    with pytest.raises(kk.CallError, match="read-only"):
        call(b)


def test_a_numpy_output_of_partial_element_strides_beside_another_kind_is_refused():
    odd = np.ndarray((4,), dtype=np.float32, buffer=np.zeros(32, np.uint8), strides=(6,))
    with pytest.raises(kk.CallError, match="whole elements"):
        call(odd)
