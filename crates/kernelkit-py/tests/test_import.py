"""`import kernelkit` stays light: no NumPy, PyTorch or CuPy import, no
device opened (the issue's target is 50 ms; measure with
`python -X importtime -c "import kernelkit"`)."""

import os
import subprocess
import sys


def test_import_pulls_in_no_array_library_and_opens_no_device():
    script = (
        "import sys, kernelkit\n"
        "heavy = [m for m in ('numpy', 'torch', 'cupy', 'mlx', 'ml_dtypes') if m in sys.modules]\n"
        "print('heavy', heavy)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "heavy []" in done.stdout, done.stdout


def test_kernelkit_log_shows_the_library_log_on_stderr():
    # KERNELKIT_LOG, as for the CLI: a `tracing` filter; `debug` tells where
    # each compile ran and how long it and the load took.
    script = (
        "import numpy as np, kernelkit as kk\n"
        "k = kk.metal_kernel(name='logged', input_names=['a'], output_names=['b'],\n"
        "                    source='uint i = thread_position_in_grid.x; b[i] = a[i];')\n"
        "a = np.ones(4, np.float32)\n"
        "k(inputs=[a], grid=(4, 1, 1), threadgroup=(4, 1, 1), output_shapes=[a.shape],\n"
        "  output_dtypes=[a.dtype], device='cpu')\n"
    )
    env = dict(os.environ, KERNELKIT_LOG="kernelkit=debug", KERNELKIT_CACHE="memory")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    assert "kernel `logged`: not in memory, building" in done.stderr, done.stderr
    assert "kernel `logged`: compiled in" in done.stderr, done.stderr
    assert "kernel `logged`: loaded in" in done.stderr, done.stderr
    # Unset: nothing is written.
    env.pop("KERNELKIT_LOG")
    quiet = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, env=env)
    assert quiet.returncode == 0 and "compiled in" not in quiet.stderr, quiet.stderr
