"""Production without JIT from Python: kk.record, kk.set_jit / JitError,
kk.precompile and kk.import_bundle (CPU; docs/production.md)."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import kernelkit as kk

SRC = "uint i = thread_position_in_grid.x; out[i] = inp[i] + V;"


def call(k, v, device="cpu"):
    x = np.ones(8, dtype=np.float32)
    return k(inputs=[x], template=[("V", v)], grid=(8, 1, 1), threadgroup=(8, 1, 1),
             output_shapes=[x.shape], output_dtypes=[x.dtype], device=device)[0]


def test_jit_error_names_the_variant_and_the_device_stays_usable():
    assert issubclass(kk.JitError, kk.KernelError) and issubclass(kk.JitError, RuntimeError)
    k = kk.metal_kernel(name="py_forbid", input_names=["inp"], output_names=["out"], source=SRC)
    assert kk.jit_policy() == "allow"
    np.testing.assert_array_equal(call(k, 1), np.full(8, 2.0, np.float32))
    kk.set_jit("forbid")
    try:
        # Loaded already: runs.
        np.testing.assert_array_equal(call(k, 1), np.full(8, 2.0, np.float32))
        with pytest.raises(kk.JitError) as e:
            call(k, 2)
        message = str(e.value)
        assert "JIT is forbidden" in message and "py_forbid" in message
        assert "V=2" in message and "native" in message
        np.testing.assert_array_equal(call(k, 1), np.full(8, 2.0, np.float32))
        with pytest.raises(kk.CallError):
            kk.set_jit("sometimes")
    finally:
        kk.set_jit("allow")
    np.testing.assert_array_equal(call(k, 2), np.full(8, 3.0, np.float32))


def test_record_precompile_import_replay_with_no_compiler(tmp_path):
    manifest = tmp_path / "manifest.jsonl"
    k = kk.metal_kernel(name="py_record", input_names=["inp"], output_names=["out"], source=SRC)
    with kk.record(manifest):
        for v in range(3):
            for _ in range(3):
                call(k, v)
    call(k, 7)  # not recorded
    lines = manifest.read_text().splitlines()
    assert len(lines) == 3
    assert all(json.loads(line)["spec"]["name"] == "py_record" for line in lines)
    assert str(tmp_path) not in manifest.read_text()

    key = tmp_path / "ci.key"
    kk.keygen(key, "ci")
    out = tmp_path / "kernels.kkb"
    report = kk.precompile(manifest=manifest, out=out, signing_key=key, cpu=["x86-64-v2"])
    assert report["variants"] == 3 and report["entries"] == 3 and not report["failed"]

    # A fresh process: its own store, no compiler, JIT forbidden.
    store = tmp_path / "store"
    script = textwrap.dedent(f"""
        import numpy as np, kernelkit as kk
        r = kk.import_bundle({str(out)!r}, trusted_keys={str(key) + '.pub'!r})
        assert r["imported"] == 3, r
        k = kk.metal_kernel(name="py_record", input_names=["inp"], output_names=["out"],
                            source={SRC!r})
        x = np.ones(8, dtype=np.float32)
        for v in range(3):
            y = k(inputs=[x], template=[("V", v)], grid=(8, 1, 1), threadgroup=(8, 1, 1),
                  output_shapes=[x.shape], output_dtypes=[x.dtype])[0]
            assert (y == 1 + v).all(), y
        s = kk.cache_stats("cpu")
        assert s["compiles"] == 0 and s["disk_hits"] == 3, s
        try:
            k(inputs=[x], template=[("V", 99)], grid=(8, 1, 1), threadgroup=(8, 1, 1),
              output_shapes=[x.shape], output_dtypes=[x.dtype])
        except kk.JitError as e:
            assert "JIT is forbidden" in str(e)
        else:
            raise AssertionError("compiled under forbid")
        print("replayed")
    """)
    env = dict(os.environ, KERNELKIT_CACHE="disk", KERNELKIT_CACHE_DIR=str(store),
               KERNELKIT_JIT="forbid", CXX="/nonexistent/c++", PATH="/nonexistent")
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "replayed" in done.stdout
