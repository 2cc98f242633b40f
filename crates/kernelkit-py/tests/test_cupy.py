"""CuPy arrays (issue 16, items 3 and 4): read through
``__cuda_array_interface__`` in place, outputs from ``cupy.empty`` on the
arrays' device, ``out=`` written in place, calls on CuPy's current stream.
Skipped, with the reason, where CuPy or a GPU is absent (the H200 machine
has both)."""

import pytest

cupy = pytest.importorskip("cupy", reason="CuPy is not installed here (the GPU machine has it)")

import kernelkit as kk  # noqa: E402

try:
    cupy.cuda.runtime.getDeviceCount()
    _NO_GPU = None
except Exception as e:  # noqa: BLE001
    _NO_GPU = f"CuPy sees no CUDA device: {e}"

pytestmark = pytest.mark.skipif(_NO_GPU is not None, reason=_NO_GPU or "")

ADDR = kk.metal_kernel(
    name="cupy_addresses",
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
    args = dict(inputs=[x], grid=(x.size, 1, 1), threadgroup=(min(x.size, 256), 1, 1))
    if "out" not in kw:
        args.update(output_shapes=[x.shape, (2,)], output_dtypes=[x.dtype, cupy.uint64])
    args.update(kw)
    return ADDR(**args)


def test_cupy_in_cupy_out_in_place():
    x = cupy.arange(1024, dtype=cupy.float32)
    out, where = call(x)
    assert isinstance(out, cupy.ndarray) and out.device == x.device and out.dtype == x.dtype
    cupy.testing.assert_array_equal(out, x * 2)
    assert int(where[0]) == x.data.ptr and int(where[1]) == out.data.ptr


def test_out_arrays_are_written_in_place():
    x = cupy.arange(64, dtype=cupy.float32)
    buf, where = cupy.full_like(x, -1), cupy.zeros(2, cupy.uint64)
    result = call(x, out=[buf, where])
    assert result[0] is buf and result[1] is where
    cupy.testing.assert_array_equal(buf, x * 2)


def test_runs_on_cupys_current_stream():
    side = cupy.cuda.Stream(non_blocking=True)
    with side:
        x = cupy.full((1 << 20,), 3.0, dtype=cupy.float32)
        out, _ = call(x)
        y = out + 1
    side.synchronize()
    cupy.testing.assert_array_equal(y, cupy.full_like(x, 7.0))


def test_strided_cupy_arrays():
    base = cupy.arange(60, dtype=cupy.float32).reshape(3, 4, 5)
    x = base.transpose(2, 0, 1)[:, 1:, ::2]
    out, _ = call(x)
    cupy.testing.assert_array_equal(out, cupy.ascontiguousarray(x) * 2)
