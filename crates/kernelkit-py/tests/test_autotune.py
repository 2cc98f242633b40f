"""`kk.autotune`: a tuned kernel gives the kernel's results, times a key
once (counters in `cache_stats`), writes `out=` arrays once (an
accumulating `out[i] += inp[i]`, an atomic counter with `init_value`),
`.best()` returns a configuration without running the kernel, a user key
shares one choice, and a second process on the same disk store uses the
record without timing."""

import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import kernelkit as kk
from conftest import DEVICES

TILED = """
    uint base = thread_position_in_grid.x * TILE;
    for (int k = 0; k < TILE; k++) {
        uint i = base + k;
        if (i < inp_shape[0]) out[i] = inp[i] * SCALE;
    }
"""

CONFIGS = [{"threadgroup": (64, 1, 1), "template": {"TILE": t}} for t in (1, 2, 4)]


def grid(config, inputs):
    return (-(-inputs[0].shape[0] // config["template"]["TILE"]), 1, 1)


def kernel(tag):
    # A new body per test (and run): counters start from its first call.
    return kk.metal_kernel(
        name="tiled_scale",
        input_names=["inp"],
        output_names=["out"],
        source=f"// {tag} {time.time_ns()}\n" + TILED,
    )


def stats(device):
    s = kk.cache_stats(device)
    return s["tunes"], s["tune_hits"], s["tune_launches"]


@pytest.mark.parametrize("device", DEVICES)
def test_a_tuned_call_is_the_kernels_call_and_tunes_once(device):
    tuned = kk.autotune(kernel("once"), configs=CONFIGS, grid=grid)
    x = np.arange(1000, dtype=np.float32)
    before = stats(device)
    for _ in range(3):
        (out,) = tuned(
            inputs=[x],
            template={"SCALE": 3},
            output_shapes=[x.shape],
            output_dtypes=[x.dtype],
            device=device,
        )
        np.testing.assert_array_equal(out, x * 3)
    tunes, hits, launches = (b - a for a, b in zip(before, stats(device)))
    assert (tunes, hits) == (1, 0)
    assert launches >= len(CONFIGS)
    best = tuned.best(
        inputs=[x], template={"SCALE": 3}, output_shapes=[x.shape], output_dtypes=[x.dtype], device=device
    )
    assert best in CONFIGS
    assert stats(device)[0] - before[0] == 1, "best() of a tuned key times nothing"


def test_out_is_written_once_and_an_atomic_counter_counts_one_run():
    acc = kk.metal_kernel(
        name="accumulate",
        input_names=["inp"],
        output_names=["out"],
        source=f"// {time.time_ns()}\nuint i = thread_position_in_grid.x; if (i < inp_shape[0]) out[i] += inp[i] * W;",
    )
    tuned = kk.autotune(acc, configs=[{"threadgroup": (tg, 1, 1), "template": {"W": 1}} for tg in (1, 32, 256)])
    inp = np.full(512, 10, dtype=np.float32)
    out = np.arange(512, dtype=np.float32)
    start = out.copy()
    tuned(inputs=[inp], grid=(512, 1, 1), out=[out])
    np.testing.assert_array_equal(out, start + 10)

    count = kk.metal_kernel(
        name="count_threads",
        input_names=["inp"],
        output_names=["n"],
        atomic_outputs=True,
        source=f"// {time.time_ns()}\nif (thread_position_in_grid.x < inp_shape[0] && W > 0) "
        "atomic_fetch_add_explicit(&n[0], 1u, memory_order_relaxed);",
    )
    tuned = kk.autotune(count, configs=[{"threadgroup": (tg, 1, 1), "template": {"W": 1}} for tg in (8, 64, 256)])
    n = np.array([77], dtype=np.uint32)
    tuned(inputs=[np.zeros(1000, np.uint32)], grid=(1000, 1, 1), init_value=0, out=[n])
    assert n[0] == 1000


def test_a_user_key_shares_one_choice():
    tuned = kk.autotune(kernel("key"), configs=CONFIGS, grid=grid, key=lambda inputs: inputs[0].shape[0] // 1000)
    before = stats("cpu")
    for n in (1000, 1500, 1999):
        x = np.ones(n, dtype=np.float32)
        (out,) = tuned(inputs=[x], template={"SCALE": 2}, output_shapes=[x.shape], output_dtypes=[x.dtype])
        np.testing.assert_array_equal(out, x * 2)
    assert stats("cpu")[0] - before[0] == 1


def test_bad_configurations_are_refused():
    with pytest.raises(ValueError):
        kk.autotune(kernel("bad"), configs=[])
    with pytest.raises(ValueError):
        kk.autotune(kernel("bad"), configs=[{"template": {"TILE": 1}}])


def test_a_second_process_on_the_same_disk_uses_the_record(tmp_path):
    script = textwrap.dedent(
        f"""
        import numpy as np, kernelkit as kk
        k = kk.metal_kernel(name="tiled_scale", input_names=["inp"], output_names=["out"],
                            source={("// disk " + str(time.time_ns()) + chr(10) + TILED)!r})
        configs = {CONFIGS!r}
        def grid(config, inputs):
            return (-(-inputs[0].shape[0] // config["template"]["TILE"]), 1, 1)
        t = kk.autotune(k, configs=configs, grid=grid)
        x = np.arange(4096, dtype=np.float32)
        (out,) = t(inputs=[x], template={{"SCALE": 5}}, output_shapes=[x.shape], output_dtypes=[x.dtype])
        assert (out == x * 5).all()
        s = kk.cache_stats("cpu")
        print("COUNTS", s["tunes"], s["tune_hits"], s["tune_launches"])
        """
    )
    env = dict(os.environ, KERNELKIT_CACHE="disk", KERNELKIT_CACHE_DIR=str(tmp_path / "store"))

    def run():
        done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        line = next(l for l in done.stdout.splitlines() if l.startswith("COUNTS"))
        return tuple(int(v) for v in line.split()[1:])

    first = run()
    assert first[0] == 1
    second = run()
    assert second[0] == 0 and second[2] == 0, second
    assert second[1] >= 1, second
