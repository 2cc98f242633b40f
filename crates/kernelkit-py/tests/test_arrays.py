"""NumPy arrays in and out: every dtype, strided views, scalars, byte order."""

import numpy as np
import pytest

import kernelkit as kk
from conftest import DEVICES

COPY = kk.metal_kernel(
    name="copy_elems",
    input_names=["inp"],
    output_names=["out"],
    source="uint i = thread_position_in_grid.x; out[i] = inp[i];",
)

# Reads every element through `inp_strides`, so the result is the array in
# row-major order whatever layout reaches the kernel.
STRIDED = kk.metal_kernel(
    name="gather_strided",
    input_names=["inp"],
    output_names=["out", "strides"],
    ensure_row_contiguous=False,
    source="""
        uint i = thread_position_in_grid.x;
        uint rest = i;
        int64_t at = 0;
        for (int d = inp_ndim - 1; d >= 0; --d) {
            at += int64_t(rest % inp_shape[d]) * inp_strides[d];
            rest /= inp_shape[d];
        }
        out[i] = inp[at];
        if (i < uint(inp_ndim)) strides[i] = inp_strides[i];
    """,
)


def copy(x, device="cpu"):
    (y,) = COPY(inputs=[x], grid=(max(x.size, 1), 1, 1), threadgroup=(64, 1, 1),
                output_shapes=[x.shape], output_dtypes=[x.dtype], device=device)
    return y


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    "dtype",
    ["bool", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
     "float16", "float32", "float64", "complex64"],
)
def test_every_numpy_dtype_round_trips(dtype, device):
    rng = np.random.default_rng(1)
    x = (rng.normal(size=(3, 5)) * 50).astype(dtype)
    y = copy(x, device)
    assert y.dtype == x.dtype and y.shape == x.shape and y.flags.c_contiguous
    np.testing.assert_array_equal(y, x)


def test_bfloat16_through_ml_dtypes():
    ml_dtypes = pytest.importorskip("ml_dtypes", reason="ml_dtypes gives NumPy its bfloat16")
    x = np.arange(8, dtype=np.float32).astype(ml_dtypes.bfloat16)
    y = copy(x)
    assert y.dtype == x.dtype
    np.testing.assert_array_equal(y.astype(np.float32), x.astype(np.float32))


def test_bool_outputs_are_zero_or_one():
    k = kk.metal_kernel(
        name="bool_bytes", input_names=["inp"], output_names=["out"],
        source="uint i = thread_position_in_grid.x; reinterpret_cast<uint8_t*>(out)[i] = inp[i];",
    )
    x = np.array([0, 1, 2, 255], np.uint8)
    (y,) = k(inputs=[x], grid=(4, 1, 1), threadgroup=(4, 1, 1), output_shapes=[(4,)], output_dtypes=[np.bool_])
    assert y.view(np.uint8).tolist() == [0, 1, 1, 1]


def views():
    a = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    b = np.arange(12, dtype=np.int32).reshape(3, 4)
    return {
        "contiguous": a,
        "transpose": a.T,
        "fortran": np.asfortranarray(a),
        "swapaxes": a.swapaxes(0, 1),
        "column_slice": b[:, 1:3],
        "stepped": a[::2, 1::2, ::3],
        "tail_columns": b[:, 2:],
        "broadcast_row": np.broadcast_to(b[:1], (5, 4)),
        "broadcast_column": np.broadcast_to(b[:, 1:2], (3, 6)),
        "new_axis": b[:, None, :],
        "reversed": a[::-1],
        "reversed_inner": b[:, ::-1],
        "sliding": np.lib.stride_tricks.sliding_window_view(np.arange(10, dtype=np.float32), 3),
    }


@pytest.mark.parametrize("name", list(views()))
def test_strided_views_keep_their_meaning(name):
    x = views()[name]
    out, strides = STRIDED(
        inputs=[x], grid=(x.size, 1, 1), threadgroup=(32, 1, 1),
        output_shapes=[x.shape, (max(x.ndim, 1),)], output_dtypes=[x.dtype, np.int64],
    )
    np.testing.assert_array_equal(out, x)
    if name in ("transpose", "fortran", "column_slice", "stepped", "broadcast_row", "swapaxes"):
        # Expressible as a kernelkit view: the kernel sees NumPy's strides.
        assert tuple(strides[: x.ndim]) == tuple(s // x.itemsize for s in x.strides)


@pytest.mark.parametrize("name", list(views()))
def test_strided_views_with_ensure_row_contiguous(name):
    x = views()[name]
    np.testing.assert_array_equal(copy(x), np.ascontiguousarray(x))


def test_non_native_byte_order_is_converted():
    x = np.arange(6, dtype=">f4")
    y = copy(x)
    np.testing.assert_array_equal(y, x.astype("<f4"))


def test_unsupported_numpy_dtypes_are_type_errors():
    for bad in (np.arange(3, dtype=np.complex128), np.array(["a", "b"]), np.array([1, "x"], dtype=object),
                np.zeros(2, dtype=[("a", np.int32), ("b", np.float32)])):
        with pytest.raises(kk.ArgumentTypeError, match="input `inp`"):
            copy(bad)


def test_inputs_that_are_not_arrays_are_type_errors():
    for bad in ([1.0, 2.0], "abc", None, object(), {"a": 1}):
        with pytest.raises(kk.ArgumentTypeError, match="input `inp`"):
            COPY(inputs=[bad], grid=(1, 1, 1), threadgroup=(1, 1, 1), output_shapes=[(1,)],
                 output_dtypes=[np.float32])
    with pytest.raises(kk.ArgumentTypeError, match="inputs must be a list"):
        COPY(inputs=np.ones(3, np.float32), grid=(1, 1, 1), threadgroup=(1, 1, 1),
             output_shapes=[(1,)], output_dtypes=[np.float32])


def test_large_python_ints_are_int64_scalars():
    k = kk.metal_kernel(
        name="scalar_kind", input_names=["v"], output_names=["out"],
        source="out[0] = sizeof(v);",
    )
    args = dict(grid=(1, 1, 1), threadgroup=(1, 1, 1), output_shapes=[(1,)], output_dtypes=[np.int32])
    assert k(inputs=[3], **args)[0][0] == 4
    assert k(inputs=[2**40], **args)[0][0] == 8
    assert k(inputs=[True], **args)[0][0] == 1
    with pytest.raises(kk.CallError, match="does not fit int64"):
        k(inputs=[2**70], **args)
