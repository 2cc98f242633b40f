"""Bounds checks from Python: ``check_bounds=True`` on the constructors,
``kernelkit.OutOfBoundsError`` (an ``IndexError``) carrying the report."""

import numpy as np
import pytest

import kernelkit as kk

from conftest import DEVICES


def shifted(check_bounds, source="uint i = thread_position_in_grid.x; out[i] = inp[i + 1];"):
    return kk.metal_kernel(
        name="shifted",
        input_names=["inp"],
        output_names=["out"],
        source=source,
        check_bounds=check_bounds,
    )


def call(k, device, x):
    return k(
        inputs=[x],
        grid=(16, 1, 1),
        threadgroup=(8, 1, 1),
        output_shapes=[(16,)],
        output_dtypes=[np.float32],
        device=device,
    )


def test_the_error_is_an_index_error_of_kernelkit():
    assert issubclass(kk.OutOfBoundsError, IndexError)
    assert issubclass(kk.OutOfBoundsError, kk.KernelError)
    assert kk.OutOfBoundsError.__module__ == "kernelkit"


@pytest.mark.parametrize("device", DEVICES)
def test_a_read_past_the_end_is_named(device):
    x = np.arange(16, dtype=np.float32)
    with pytest.raises(kk.OutOfBoundsError) as e:
        call(shifted(True), device, x)
    err = e.value
    assert "kernel `shifted`: input `inp` accessed out of bounds at index 16" in str(err)
    assert (err.kernel, err.role, err.argument) == ("shifted", "input", "inp")
    assert err.index == 16 and err.span == (0, 16)
    assert err.thread == (7, 0, 0) and err.threadgroup == (1, 0, 0)
    assert err.byte_offset is None


@pytest.mark.parametrize("device", DEVICES)
def test_a_write_through_a_pointer_is_named_by_its_output(device):
    k = shifted(True, "uint i = thread_position_in_grid.x; device float* p = out + 1; p[i] = inp[i];")
    with pytest.raises(kk.OutOfBoundsError) as e:
        call(k, device, np.arange(16, dtype=np.float32))
    assert (e.value.role, e.value.argument) == ("output", "out")
    assert e.value.byte_offset == 64 and e.value.buffer_bytes == 64
    assert e.value.index is None


@pytest.mark.parametrize("device", DEVICES)
def test_a_correct_kernel_gives_the_same_results_checked(device):
    body = "uint i = thread_position_in_grid.x; out[i] = inp[i] + *(inp + (i + 1) % 16);"
    x = np.arange(16, dtype=np.float32)
    plain = np.asarray(call(shifted(False, body), device, x)[0])
    checked = np.asarray(call(shifted(True, body), device, x)[0])
    np.testing.assert_array_equal(plain, checked)


def test_check_bounds_must_be_a_bool():
    with pytest.raises(kk.ArgumentTypeError, match="check_bounds"):
        shifted("yes")
