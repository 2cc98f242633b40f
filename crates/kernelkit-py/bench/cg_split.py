"""N cold compiles of one generated source, by kernelkit or by NVRTC
through ctypes, for counting their instructions under callgrind: does a
kernelkit compile make NVRTC do more work than NVRTC alone?

  python cg_split.py kk|ctypes N SOURCE

Run under ``valgrind --tool=callgrind`` with N = 1 and N = 3 and take half
the difference of the totals: the instructions of one compile, start-up
left out. ``kk`` compiles a new Metal kernel per call (NumPy input on the
``gpu`` device, so the stand-in driver does; set
``KERNELKIT_COMPILE_WORKERS=0`` and ``KERNELKIT_CACHE=memory``), ``ctypes``
compiles SOURCE (``kernelkit source --dialect cuda SPEC`` of the same body
with ``TAG`` in it) with kernelkit's options. ``NVRTC_LIB`` names NVRTC,
``CUDA_INC`` the toolkit's headers (``tools/fakecuda/with-nvrtc.sh`` sets
up both but these two).
"""

import ctypes
import os
import sys
import uuid

BODY = "uint i = thread_position_in_grid.x; out[i] = inp[i] * 2.0f + %d.0f; /* %s */"


def main():
    mode, n, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    if mode == "kk":
        import numpy as np

        import kernelkit as kk

        x = np.ones(1024, dtype=np.float32)
        for _ in range(n):
            tag = uuid.uuid4().hex
            k = kk.metal_kernel(name="c" + tag[:8], input_names=["inp"], output_names=["out"],
                                source=BODY % (len(tag), tag))
            k(inputs=[x], grid=(1024, 1, 1), threadgroup=(256, 1, 1), output_shapes=[x.shape],
              output_dtypes=[x.dtype], device="gpu")
        return
    with open(path) as f:
        source = f.read()
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from nvrtc_control import compile_once  # beside this file

    lib = ctypes.CDLL(os.environ["NVRTC_LIB"])
    for _ in range(n):
        compile_once(lib, os.environ["CUDA_INC"], source, "sm_90a")


if __name__ == "__main__":
    main()
