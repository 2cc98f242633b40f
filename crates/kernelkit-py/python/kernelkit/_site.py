"""Tells the library where this Python's packages are.

NVIDIA publishes NVRTC, the CUDA compiler library kernelkit loads at run
time, as wheels (``nvidia-cuda-nvrtc`` for CUDA 13, ``nvidia-cuda-nvrtc-cu12``
for CUDA 12; PyTorch's CUDA wheels install one). They put the library under
``<site>/nvidia/``, where no dynamic loader looks. The library reads the
site directories from ``KERNELKIT_PYTHON_SITE`` when it opens a CUDA device
(after ``KERNELKIT_NVRTC_PATH``, before ``CUDA_HOME`` and the system's
paths), and compile workers inherit the variable.
"""

import os
import sys


def export_site_dirs() -> None:
    """Sets ``KERNELKIT_PYTHON_SITE`` to the ``sys.path`` directories that
    hold an ``nvidia`` package, unless the user set it."""
    if os.environ.get("KERNELKIT_PYTHON_SITE"):
        return
    dirs = [p for p in sys.path if p and os.path.isdir(os.path.join(p, "nvidia"))]
    if dirs:
        os.environ["KERNELKIT_PYTHON_SITE"] = os.pathsep.join(dirs)
