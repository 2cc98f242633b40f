"""`kk.autotune`: a tuned kernel gives the kernel's results, times a key
once (counters in `cache_stats`), writes `out=` arrays once (an
accumulating `out[i] += inp[i]`, an atomic counter with `init_value`),
`.best()` returns a configuration without running the kernel, a user key
shares one choice, and a second process on the same disk store uses the
record without timing. A warm tuned call is the untuned call with the
chosen configuration: the same result, the same route (the call entry,
nothing parsed anew) for every spelling of its arguments, and no timing;
the key and grid functions are called with the call's inputs."""

import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import kernelkit as kk
from kernelkit import _testing
from conftest import DEVICES

ENTRY = sys.version_info >= (3, 12)

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


def untuned_call(tuned, config, x, grid_of=grid, **rest):
    """The kernel's own call with `config` given directly."""
    return tuned.kernel(
        inputs=[x],
        grid=config.get("grid") or grid_of(config, [x]),
        threadgroup=config["threadgroup"],
        template={"SCALE": 3, **config.get("template", {})},
        output_shapes=[x.shape],
        output_dtypes=[x.dtype],
        **rest,
    )


@pytest.mark.parametrize("device", DEVICES)
def test_a_tuned_call_equals_the_untuned_call_with_the_chosen_config(device):
    configs = CONFIGS + [{"threadgroup": (32, 1, 1), "template": {"TILE": 8}, "grid": (125, 1, 1)}]
    tuned = kk.autotune(kernel("equal"), configs=configs, grid=grid)
    assert tuned.configs == configs and tuned.name == "tiled_scale"
    assert (tuned.input_names, tuned.output_names) == (["inp"], ["out"])
    x = np.random.default_rng(0).standard_normal(1000).astype(np.float32)
    call = dict(inputs=[x], template={"SCALE": 3}, output_shapes=[x.shape], output_dtypes=[x.dtype], device=device)
    (got,) = tuned(**call)
    chosen = tuned.best(**call)
    assert chosen in configs
    (expected,) = untuned_call(tuned, chosen, x, device=device)
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(got, x * 3)
    # Every configuration applied gives the same result.
    for config in configs:
        (one,) = untuned_call(tuned, config, x, device=device)
        np.testing.assert_array_equal(one, x * 3)


def tuned_spellings(x, y):
    """Spellings of one tuned call (as the caller's code builds them anew
    at each call); `out=` ones write into `y`."""
    n = int(str(x.shape[0]))
    alloc = dict(output_shapes=[x.shape], output_dtypes=[x.dtype])
    return {
        "canonical": dict(inputs=[x], template=[("SCALE", 3)], **alloc),
        "template dict": dict(inputs=[x], template={"SCALE": int("3")}, **alloc),
        "lists": dict(inputs=[x], template=[["SCALE", 3]], output_shapes=[[n]], output_dtypes=[np.float32]),
        "literal shape": dict(inputs=(x,), template={"SCALE": 3}, output_shapes=[(n,)], output_dtypes=["float32"]),
        "threadgroup ignored": dict(inputs=[x], threadgroup=(1, 1, 1), template={"SCALE": 3}, **alloc),
        "stream": dict(inputs=[x], template={"SCALE": 3}, stream=kk.cpu, **alloc),
        "device": dict(inputs=[x], template={"SCALE": 3}, device="cpu", **alloc),
        "init_value": dict(inputs=[x], template={"SCALE": 3}, init_value=0.0, **alloc),
        "out=": dict(inputs=[x], template={"SCALE": 3}, out=[y]),
        "out= with shapes": dict(inputs=[x], template={"SCALE": 3}, out=[y], output_shapes=[[n]],
                                 output_dtypes=["float32"]),
    }


def routes_of(call, times=3):
    before = _testing.call_routes()
    for _ in range(times):
        call()
    after = _testing.call_routes()
    return {r: after[r] - before[r] for r in after}


def test_every_spelling_of_a_tuned_call_gives_the_result_and_a_warm_one_takes_the_fast_path():
    tuned = kk.autotune(kernel("spellings"), configs=CONFIGS, grid=grid)
    x = np.arange(2048, dtype=np.float32)
    y = np.zeros_like(x)
    before = stats("cpu")
    for name in tuned_spellings(x, y):
        y[:] = 0
        (got,) = tuned(**tuned_spellings(x, y)[name])
        np.testing.assert_array_equal(got, x * 3, err_msg=name)
        if "out" in name:
            assert got is y, name
        diff = routes_of(lambda: tuned(**tuned_spellings(x, y)[name]))
        assert diff["parsed"] == 0, (name, diff)
        assert diff["general"] == 3, (name, diff)
        if ENTRY:
            assert diff["entry"] == 3 and diff["method"] == 0, (name, diff)
    tunes, _, _ = (b - a for a, b in zip(before, stats("cpu")))
    assert tunes == 1, "every spelling is one tuning key"


def test_a_warm_tuned_call_takes_the_untuned_calls_route_and_times_nothing():
    tuned = kk.autotune(kernel("route"), configs=CONFIGS, grid=grid)
    x = np.arange(4096, dtype=np.float32)
    call = dict(inputs=[x], template={"SCALE": 3}, output_shapes=[x.shape], output_dtypes=[x.dtype])
    tuned(**call)
    config = tuned.best(**call)
    untuned_call(tuned, config, x)
    warm = stats("cpu")
    untuned = routes_of(lambda: untuned_call(tuned, config, x), times=5)
    tuned_routes = routes_of(lambda: tuned(**call), times=5)
    assert tuned_routes == untuned, (tuned_routes, untuned)
    assert tuned_routes["parsed"] == 0
    # Alternating, as the benchmark does: still nothing parsed anew.
    both = routes_of(lambda: (tuned(**call), untuned_call(tuned, config, x)), times=5)
    assert both["parsed"] == 0, both
    for _ in range(50):
        tuned(**call)
    assert stats("cpu") == warm, "warm tuned calls time nothing and find no record"


def test_the_key_and_grid_functions_are_called_with_the_calls_inputs():
    seen_keys, seen_grids = [], []

    def key(inputs):
        seen_keys.append(inputs)
        return inputs[0].shape[0] // 1000

    def grid_fn(config, inputs):
        seen_grids.append((config, inputs))
        return grid(config, inputs)

    tuned = kk.autotune(kernel("fns"), configs=CONFIGS, grid=grid_fn, key=key)
    x = np.ones(1000, dtype=np.float32)
    inputs = [x]
    call = dict(inputs=inputs, template={"SCALE": 2}, output_shapes=[x.shape], output_dtypes=[x.dtype])
    tuned(**call)
    # The cold call: the key once, the grid of every configuration (for
    # timing) and of the chosen one (for the call).
    assert len(seen_keys) == 1 and seen_keys[0] is inputs
    assert [c for c, _ in seen_grids[: len(CONFIGS)]] == CONFIGS
    assert all(i is inputs for _, i in seen_grids)
    chosen = tuned.best(**call)
    seen_keys.clear()
    seen_grids.clear()
    (out,) = tuned(**call)
    np.testing.assert_array_equal(out, x * 2)
    # A warm call: the key to find the choice, the chosen configuration's
    # grid for this call's inputs; nothing else.
    assert len(seen_keys) == 1 and seen_keys[0] is inputs
    assert len(seen_grids) == 1 and seen_grids[0][0] == chosen and seen_grids[0][1] is inputs
    # Another shape of the same key: no timing, the grid of the new inputs.
    before = stats("cpu")
    z = np.ones(1999, dtype=np.float32)
    (out,) = tuned(inputs=[z], template={"SCALE": 2}, output_shapes=[z.shape], output_dtypes=[z.dtype])
    np.testing.assert_array_equal(out, z * 2)
    assert stats("cpu")[0] == before[0] and stats("cpu")[2] == before[2]


def test_a_fixed_grid_calls_no_grid_function_and_the_calls_grid_serves_the_others():
    calls = []

    def grid_fn(config, inputs):
        calls.append(config)
        return (inputs[0].shape[0],)

    fixed = [{"threadgroup": (64, 1, 1), "template": {"TILE": 1}, "grid": (1000, 1, 1)}]
    tuned = kk.autotune(kernel("fixed"), configs=fixed, grid=grid_fn)
    x = np.arange(1000, dtype=np.float32)
    for _ in range(3):
        (out,) = tuned(inputs=[x], template={"SCALE": 4}, output_shapes=[x.shape], output_dtypes=[x.dtype])
        np.testing.assert_array_equal(out, x * 4)
    assert calls == []
    # No grid function: a configuration without a grid runs with the call's.
    plain = kk.autotune(kernel("call grid"), configs=[{"threadgroup": (t, 1, 1), "template": {"TILE": 1}}
                                                      for t in (32, 64)])
    (out,) = plain(inputs=[x], grid=(1000, 1, 1), template={"SCALE": 4}, output_shapes=[x.shape],
                   output_dtypes=[x.dtype])
    np.testing.assert_array_equal(out, x * 4)
    with pytest.raises(TypeError, match="grid"):
        plain(inputs=[x], template={"SCALE": 4}, output_shapes=[x.shape], output_dtypes=[x.dtype])


def test_a_warm_tuned_call_follows_its_template_values_grid_and_shapes_as_they_change():
    # A warm call's launch is kept whole under its signature: each change
    # of what the signature holds (a template value changed in the same
    # dict, the call's grid, an input's shape) is another launch.
    tuned = kk.autotune(kernel("changes"), configs=[{"threadgroup": (t, 1, 1), "template": {"TILE": 1}}
                                                    for t in (32, 64)])
    x = np.arange(1000, dtype=np.float32)
    y = np.zeros_like(x)
    own = {"SCALE": 3}
    for _ in range(2):
        tuned(inputs=[x], grid=(1000, 1, 1), template=own, out=[y])
        np.testing.assert_array_equal(y, x * 3)
    own["SCALE"] = 5
    tuned(inputs=[x], grid=(1000, 1, 1), template=own, out=[y])
    np.testing.assert_array_equal(y, x * 5)
    y[:] = 0
    tuned(inputs=[x], grid=(500, 1, 1), template=own, out=[y])
    np.testing.assert_array_equal(y[:500], x[:500] * 5)
    assert not y[500:].any(), "the smaller grid writes the first 500 only"
    z = x[:600].copy()
    (w,) = tuned(inputs=[z], grid=(600, 1, 1), template=own, output_shapes=[z.shape], output_dtypes=[z.dtype])
    np.testing.assert_array_equal(w, z * 5)
    m = z.reshape(2, 300)
    (w,) = tuned(inputs=[m], grid=(600, 1, 1), template=own, output_shapes=[m.shape], output_dtypes=[m.dtype])
    assert w.shape == (2, 300)
    np.testing.assert_array_equal(w.ravel()[:2], z[:2] * 5)  # the body's `i < inp_shape[0]`: 2


def test_a_template_value_a_configuration_sets_is_refused():
    tuned = kk.autotune(kernel("clash"), configs=CONFIGS, grid=grid)
    x = np.arange(100, dtype=np.float32)
    with pytest.raises(kk.KernelError, match="TILE"):
        tuned(inputs=[x], template={"SCALE": 1, "TILE": 2}, output_shapes=[x.shape], output_dtypes=[x.dtype])
