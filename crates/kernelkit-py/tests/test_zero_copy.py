"""Arrays in place, no copies (issue 16, item 3), on the CPU: NumPy inputs
and outputs are the arrays' own memory, `out=` is written in place, and
objects that only speak DLPack are read in place and get
`kernelkit.Array` outputs that export through DLPack.

The kernel reports the addresses it was handed (`where`), which must be
the arrays' own: the copy path handed it copies."""

import numpy as np
import pytest

import kernelkit as kk

ADDR = kk.metal_kernel(
    name="addresses",
    input_names=["inp"],
    output_names=["out", "where"],
    source="""
        uint i = thread_position_in_grid.x;
        out[i] = inp[i] * 2;
        if (i == 0) {
            where[0] = reinterpret_cast<uint64_t>(inp);
            where[1] = reinterpret_cast<uint64_t>(out);
        }
    """,
)


def call(x, **kw):
    args = dict(inputs=[x], grid=(8, 1, 1), threadgroup=(8, 1, 1))
    if "out" not in kw:
        args.update(output_shapes=[(8,), (2,)], output_dtypes=[np.float32, np.uint64])
    args.update(kw)
    return ADDR(**args)


def address(a):
    return a.__array_interface__["data"][0]


def test_numpy_inputs_and_outputs_are_their_own_memory():
    x = np.arange(8, dtype=np.float32)
    out, where = call(x)
    np.testing.assert_array_equal(out, x * 2)
    assert int(where[0]) == address(x)
    assert int(where[1]) == address(out)


def test_out_arrays_are_written_in_place_and_returned():
    x = np.arange(8, dtype=np.float32)
    buf, where = np.full(8, -1, np.float32), np.zeros(2, np.uint64)
    result = call(x, out=[buf, where])
    assert result[0] is buf and result[1] is where
    np.testing.assert_array_equal(buf, x * 2)
    assert int(where[1]) == address(buf)


def test_read_only_inputs_are_read_in_place_and_refused_as_outputs():
    x = np.arange(8, dtype=np.float32)
    x.flags.writeable = False
    out, where = call(x)
    assert int(where[0]) == address(x)
    frozen = np.zeros(8, np.float32)
    frozen.flags.writeable = False
    with pytest.raises(kk.CallError, match="read-only"):
        call(x, out=[frozen, np.zeros(2, np.uint64)])


def test_non_contiguous_out_is_written_through_numpy():
    x = np.arange(8, dtype=np.float32)
    big = np.zeros(16, np.float32)
    (out, _) = call(x, out=[big[::2], np.zeros(2, np.uint64)])
    np.testing.assert_array_equal(big[::2], x * 2)
    np.testing.assert_array_equal(big[1::2], 0)


class DlpackOnly:
    """An array of some other library: only the DLPack protocol."""

    def __init__(self, a):
        self.a = a
        self.asked = []

    def __dlpack__(self, **kw):
        self.asked.append(kw)
        return self.a.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()


def test_dlpack_objects_are_read_in_place():
    x = np.arange(8, dtype=np.float32)
    wrapped = DlpackOnly(x)
    out, where = call(wrapped)
    # A versioned capsule was asked for, with no stream on the CPU; a NumPy
    # before 2.1 knows no `max_version` and is asked again without it.
    try:
        x.__dlpack__(max_version=(1, 1))
        versioned = True
    except TypeError:
        versioned = False
    want = [{"max_version": (1, 1)}] if versioned else [{"max_version": (1, 1)}, {}]
    assert wrapped.asked == want
    assert int(np.asarray(where)[0]) == address(x)
    # This library has no from_dlpack: the outputs are kernelkit.Arrays.
    assert isinstance(out, kk.Array)
    assert out.shape == (8,) and out.dtype == "float32" and out.device == "cpu"
    assert out.__dlpack_device__() == (1, 0)
    np.testing.assert_array_equal(np.from_dlpack(out), x * 2)
    np.testing.assert_array_equal(np.asarray(out), x * 2)


def test_exported_arrays_are_not_copied_and_refuse_cpu_streams():
    x = np.arange(8, dtype=np.float32)
    out, where = call(DlpackOnly(x))
    view = np.from_dlpack(out)
    assert address(view) == int(np.asarray(where)[1])
    with pytest.raises(kk.CallError, match="stream"):
        out.__dlpack__(stream=5)
    with pytest.raises(BufferError):
        out.__dlpack__(copy=True)


def test_arrays_of_another_device_are_refused():
    class OnGpu(DlpackOnly):
        def __dlpack_device__(self):
            return (2, 0)

    with pytest.raises(kk.CallError, match="input `inp` is on cuda:0 but the call runs on cpu"):
        call(OnGpu(np.arange(8, dtype=np.float32)), device="cpu")


def test_host_arrays_have_no_cuda_array_interface():
    out, _ = call(DlpackOnly(np.arange(8, dtype=np.float32)))
    assert not hasattr(out, "__cuda_array_interface__")
