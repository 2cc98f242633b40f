"""Outputs of a call on CuPy arrays: allocated by CuPy (its memory pool, on
its current stream), on the inputs' device. Imported only by such a call,
so CuPy is never imported by kernelkit itself before a CuPy array is seen."""


def cupy_empty(shape, dtype, device_id):
    """A new CuPy array of ``shape`` and ``dtype`` (a name) on ``device_id``."""
    import cupy

    with cupy.cuda.Device(device_id):
        return cupy.empty(shape, dtype=dtype)
