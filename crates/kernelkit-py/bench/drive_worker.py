"""One CLI compile worker driven directly, beside NVRTC through ctypes in
this process: is a worker's compile slower than NVRTC alone?

Speaks the worker's frame protocol (``backend/cuda/worker/frame.rs``:
a little-endian ``u32`` length, then a tag byte and the fields) to
``kernelkit compile-worker``: the handshake, then compile jobs of SOURCE
(made a new program each time by ``nvrtc_control.fresh_text``: a new
comment alone would let NVRTC answer from what it kept),
back to back, after pauses, and alternating with ctypes compiles of the
same source with the same options. The worker runs with
``KERNELKIT_LOG=debug``, so its own line per compile (wall time, user and
system CPU, page faults) is summarised too.

  python drive_worker.py CLI SOURCE
  python drive_worker.py --python SOURCE   # the package's own worker

``--python``: the worker the Python package starts (the interpreter with
``-S``, serving through the extension; ``kernelkit._kernelkit._worker_command()``),
which has no log of its own.

``SOURCE``: a generated source with ``TAG`` and the constant
``4242424.0f`` in its body (``kernelkit source --dialect cuda SPEC``).
``NVRTC_LIB`` and
``CUDA_INC`` override where NVRTC and the toolkit's headers are.
"""

import ctypes
import os
import re
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nvrtc_control import compile_once, fresh_text  # noqa: E402  (beside this file)

HELLO, READY, COMPILE, DONE = 1, 2, 4, 5
PROTOCOL = 2
INCLUDE = os.environ.get("CUDA_INC", "/usr/local/cuda/include")
OPTIONS = ["--gpu-architecture=sm_90a", "--device-as-default-execution-space",
           f"-I{INCLUDE}", f"-I{INCLUDE}/cccl"]


def field(value):
    data = value.encode() if isinstance(value, str) else value
    return struct.pack("<I", len(data)) + data


class Worker:
    def __init__(self, command, log):
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=log,
                                     env=dict(os.environ, KERNELKIT_LOG="debug"))
        answer = self.exchange(bytes([HELLO]) + b"KKCW" + struct.pack("<I", PROTOCOL))
        assert answer[0] == READY, f"no handshake: {answer[:40]!r}"

    def exchange(self, body):
        self.proc.stdin.write(struct.pack("<I", len(body)) + body)
        self.proc.stdin.flush()
        (n,) = struct.unpack("<I", self.proc.stdout.read(4))
        return self.proc.stdout.read(n)

    def compile(self, source):
        """Milliseconds for one job, round trip."""
        body = (bytes([COMPILE]) + field("kernel.cu") + field(source) + struct.pack("<I", 0)
                + struct.pack("<I", len(OPTIONS)) + b"".join(field(o) for o in OPTIONS)
                + struct.pack("<I", 0))  # output: cubin
        t = time.perf_counter()
        answer = self.exchange(body)
        elapsed = (time.perf_counter() - t) * 1e3
        assert answer[0] == DONE, f"the worker did not compile: {answer[:300]!r}"
        return elapsed

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


def main():
    cli, path = sys.argv[1], sys.argv[2]
    if cli == "--python":
        from kernelkit import _kernelkit

        command = _kernelkit._worker_command()
    else:
        command = [cli, "compile-worker"]
    with open(path) as f:
        text = f.read()
    new = lambda: fresh_text(text)  # noqa: E731
    lib = ctypes.CDLL(os.environ.get("NVRTC_LIB", "libnvrtc.so"))

    def nvrtc(source):
        t = time.perf_counter()
        compile_once(lib, INCLUDE, source, "sm_90a")
        return (time.perf_counter() - t) * 1e3

    with tempfile.NamedTemporaryFile("w+", suffix=".log") as log:
        worker = Worker(command, log)
        print("worker back_to_back", [round(worker.compile(new())) for _ in range(8)])
        print("ctypes back_to_back", [round(nvrtc(new())) for _ in range(8)])
        paused = []
        for _ in range(4):
            time.sleep(1.0)
            paused.append(round(worker.compile(new())))
        print("worker after 1 s pause", paused)
        w, c = [], []
        for _ in range(5):
            w.append(round(worker.compile(new())))
            c.append(round(nvrtc(new())))
        print("alternating worker", w, "ctypes", c)
        worker.close()
        log.seek(0)
        lines = [re.sub(r".*NVRTC took ", "", line.strip()) for line in log if "NVRTC took" in line]
        print("worker's own lines:", " | ".join(lines))


if __name__ == "__main__":
    main()
