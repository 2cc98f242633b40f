"""Shared set-up of the Python package's tests.

Tests that count compiles must not find kernels compiled by earlier runs in
the artifact store on disk: the store is off unless the caller chose
(``scripts/test.sh`` sets the same).
"""

import os

os.environ.setdefault("KERNELKIT_CACHE", "memory")

import pytest  # noqa: E402

import kernelkit as kk  # noqa: E402


def cuda_reason():
    """Why CUDA tests cannot run here, or None when a GPU can be used."""
    try:
        kk.gpu.description()
    except kk.DeviceError as e:
        return f"no CUDA device: {e}"
    return None


_CUDA_REASON = cuda_reason()

requires_cuda = pytest.mark.skipif(_CUDA_REASON is not None, reason=_CUDA_REASON or "")

# Every test that runs on a device, once per device present; CUDA skips
# with the reason when there is no GPU.
DEVICES = [
    pytest.param("cpu", id="cpu"),
    pytest.param("cuda", id="cuda", marks=requires_cuda),
]
