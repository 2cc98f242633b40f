"""The package's own CUDA compile worker (issue 16, the 16-thread target):
the interpreter, started as ``python -S -c CODE compile-worker``, serves
kernelkit's worker loop through the extension module, so an installed
package finds a worker without ``KERNELKIT_WORKER``. No GPU needed: the
worker loop is driven here directly."""

import struct
import subprocess
import sys

from kernelkit import _kernelkit


def test_the_worker_command_is_this_interpreter():
    cmd = _kernelkit._worker_command()
    assert cmd is not None
    assert cmd[0] == sys.executable
    assert cmd[1:3] == ["-S", "-c"] and cmd[-1] == "compile-worker"


def test_the_worker_starts_without_site_and_ends_with_its_input():
    # An empty input: the loop ends at once and the process exits 0, having
    # imported the extension from the package's directory without `site`.
    done = subprocess.run(_kernelkit._worker_command(), input=b"", capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert done.stdout == b""


def test_a_broken_frame_is_an_error_exit_with_a_message():
    # A frame whose body is not a message: the worker says why and exits 1
    # (the parent then compiles the job itself).
    frame = struct.pack("<I", 3) + b"\xff\xff\xff"
    done = subprocess.run(_kernelkit._worker_command(), input=frame, capture_output=True, timeout=120)
    assert done.returncode == 1
    assert b"kernelkit compile worker" in done.stderr
