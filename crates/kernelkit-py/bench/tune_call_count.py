"""Instructions of a warm tuned call beside the same call untuned (issue
44), for callgrind: ``tune_call.py``'s NumPy ``out=`` pair on the CPU
device, one of the two called ``N`` times, with one configuration (so
that both processes run the same variant whatever timing would choose).
Count only inside the call's entry, so that the tuning itself and the
interpreter's loop are left out, and divide by ``N``:

    valgrind --tool=callgrind --collect-atstart=no \\
        --toggle-collect='*TunedCall*Handler*call*' \\
        python tune_call_count.py tuned 5000
    valgrind --tool=callgrind --collect-atstart=no \\
        --toggle-collect='*KernelCall*Handler*call*' \\
        python tune_call_count.py untuned 5000

(``KERNELKIT_CACHE=memory``; a build with symbols, e.g. ``cargo build
--release -p kernelkit-py --features cuda`` copied over the installed
package's ``_kernelkit.abi3.so``; ``--cache-sim=yes`` adds the
instruction-cache misses.) ``--alloc`` times the allocating pair
(``output_shapes=``/``output_dtypes=``) instead.

Usage: python tune_call_count.py tuned|untuned N [--alloc]
"""

import sys

import numpy as np

import kernelkit as kk

BODY = "uint i = thread_position_in_grid.x; if (i < x_shape[0]) y[i] = x[i] * K + TILE;"


def main():
    mode, n = sys.argv[1], int(sys.argv[2])
    alloc = "--alloc" in sys.argv[3:]
    if mode not in ("tuned", "untuned"):
        sys.exit(__doc__)
    k = kk.metal_kernel(name="tune_count", input_names=["x"], output_names=["y"], source=BODY)
    x = np.arange(1024, dtype=np.float32)
    y = np.empty_like(x)
    g = (1024, 1, 1)
    own = {"K": 3}
    tuned = kk.autotune(k, configs=[{"threadgroup": (256, 1, 1), "template": {"TILE": 0}}])
    sh, dt = [x.shape], [x.dtype]
    if alloc:
        best = tuned.best(inputs=[x], grid=g, template=own, output_shapes=sh, output_dtypes=dt)
    else:
        best = tuned.best(inputs=[x], grid=g, template=own, out=[y])
    tg = tuple(best["threadgroup"])
    template = {**own, **best.get("template", {})}
    # The spellings of tune_call.py's pairs, written out (no `**kwargs`).
    if mode == "tuned" and alloc:
        def f():
            return tuned(inputs=[x], grid=g, template=own, output_shapes=sh, output_dtypes=dt)
    elif mode == "tuned":
        def f():
            return tuned(inputs=[x], grid=g, template=own, out=[y])
    elif alloc:
        def f():
            return k(inputs=[x], grid=g, threadgroup=tg, template=template, output_shapes=sh,
                     output_dtypes=dt)
    else:
        def f():
            return k(inputs=[x], grid=g, threadgroup=tg, template=template, out=[y])
    for _ in range(n):
        f()


if __name__ == "__main__":
    main()
