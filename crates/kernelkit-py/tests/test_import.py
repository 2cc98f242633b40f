"""`import kernelkit` stays light: no NumPy, PyTorch or CuPy import, no
device opened (the issue's target is 50 ms; measure with
`python -X importtime -c "import kernelkit"`)."""

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
