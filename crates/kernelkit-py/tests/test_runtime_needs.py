"""What a machine needs at run time (docs/install.md): a missing C++
compiler or NVRTC is a typed error at the first call that says what is
missing and how to get it; zig from PyPI is a compiler for CPU kernels; the
package tells the library where NVIDIA's NVRTC wheels are.

Each case runs in a fresh interpreter: the compiler and NVRTC are found
once per process, from the environment."""

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
STAND_IN_DRIVER = os.path.join(ROOT, "target", "fakecuda", "driver")

CALL = """
import numpy as np, kernelkit as kk
k = kk.metal_kernel(name="needs", input_names=["inp"], output_names=["out"],
                    source="uint i = thread_position_in_grid.x; out[i] = inp[i] * 2.0f;")
x = np.arange(8, dtype=np.float32)
try:
    out = k(inputs=[x], grid=(8, 1, 1), threadgroup=(8, 1, 1), output_shapes=[x.shape],
            output_dtypes=[x.dtype], device=DEVICE)[0]
    print("RESULT", out.tolist())
except kk.KernelError as e:
    print("ERROR", type(e).__name__, e)
"""


def run(device, timeout=300, **env):
    full = dict(os.environ, KERNELKIT_CACHE="memory", **env)
    out = subprocess.run([sys.executable, "-c", CALL.replace("DEVICE", repr(device))],
                         env=full, capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_a_missing_cpp_compiler_says_how_to_get_one():
    out = run("cpu", CXX="/nonexistent/c++", KERNELKIT_PCH_DIR="")
    assert out.startswith("ERROR CompileError"), out
    for part in ("needs", "no C++ compiler", "/nonexistent/c++", "apt install g++",
                 "pip install ziglang", "CXX="):
        assert part in out, (part, out)


def test_zig_from_pypi_compiles_cpu_kernels():
    try:
        import ziglang  # noqa: F401
    except ImportError:
        pytest.skip("ziglang is not installed (pip install ziglang)")
    # zig builds its C++ library into its cache at its first use (minutes on
    # a busy 2-core machine).
    out = run("cpu", timeout=1800, CXX=f"{sys.executable} -m ziglang c++")
    assert out.strip() == "RESULT " + str([2.0 * i for i in range(8)]), out


@pytest.mark.skipif(not os.path.isdir(STAND_IN_DRIVER),
                    reason="the stand-in driver is not built (bash tools/fakecuda/build.sh)")
def test_a_missing_nvrtc_names_the_setting():
    ld = os.pathsep.join(filter(None, [STAND_IN_DRIVER, os.environ.get("LD_LIBRARY_PATH")]))
    out = run("gpu", LD_LIBRARY_PATH=ld, KERNELKIT_NVRTC_PATH="/nonexistent/libnvrtc.so.13")
    assert out.startswith("ERROR DeviceError"), out
    assert "KERNELKIT_NVRTC_PATH=/nonexistent/libnvrtc.so.13" in out, out


def test_the_package_exports_where_nvidia_wheels_are(tmp_path):
    (tmp_path / "nvidia").mkdir()
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    env.pop("KERNELKIT_PYTHON_SITE", None)
    code = "import os, kernelkit; print(os.environ.get('KERNELKIT_PYTHON_SITE'))"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert str(tmp_path) in out.stdout.strip().split(os.pathsep), out.stdout
    # A value the user set is kept.
    env["KERNELKIT_PYTHON_SITE"] = "/mine"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.strip() == "/mine", out.stdout
