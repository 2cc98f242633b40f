"""kernelkit.jax: kernels inside jax.jit, vmap, grad and shard_map through
XLA's FFI. Skipped where JAX is not installed (it needs Python 3.11 or
later); on the CPU always, on CUDA where JAX's CUDA plugin and a GPU are."""

import json
import os
import subprocess
import sys
import threading
import uuid

import numpy as np
import pytest

jax = pytest.importorskip("jax", reason="JAX is not installed here")
import jax.numpy as jnp  # noqa: E402
from jax.test_util import check_grads  # noqa: E402

import kernelkit as kk  # noqa: E402
import kernelkit.jax as kkj  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))

ADD = "uint i = thread_position_in_grid.x; out[i] = inp[i] + OFFSET;"


def add_kernel(name="jax_add"):
    return kkj.metal_kernel(name=name, input_names=["inp"], output_names=["out"],
                            source=ADD)


def add(k, x, offset=3):
    (y,) = k(inputs=[x], template=[("OFFSET", offset)],
             grid=(x.size, 1, 1), threadgroup=(64, 1, 1),
             output_shapes=[x.shape], output_dtypes=[x.dtype])
    return y


def square_kernel():
    return kkj.metal_kernel(name="jax_square", input_names=["x"], output_names=["y"],
                            source="uint i = thread_position_in_grid.x; y[i] = x[i] * x[i];")


def twice_kernel():
    return kkj.metal_kernel(name="jax_twice_mul", input_names=["x", "g"], output_names=["dx"],
                            source="uint i = thread_position_in_grid.x; dx[i] = T(2) * x[i] * g[i];")


def test_eager_and_jit_run_the_kernel():
    k = add_kernel()
    x = jnp.arange(1000, dtype=jnp.float32)
    np.testing.assert_array_equal(add(k, x), np.arange(1000) + 3)
    f = jax.jit(lambda x: add(k, add(k, x), offset=10))
    np.testing.assert_array_equal(f(x), np.arange(1000) + 13)
    np.testing.assert_array_equal(f(x * 2), np.arange(1000) * 2 + 13)


def test_lowered_program_holds_the_ffi_custom_call():
    k = add_kernel()
    x = jnp.ones(16, jnp.float32)
    text = jax.jit(lambda x: add(k, x)).lower(x).as_text()
    calls = [line for line in text.splitlines() if "custom_call" in line]
    assert len(calls) == 1, text
    assert f"@{kkj.TARGET}(" in calls[0] and kkj.TARGET.startswith("kernelkit")
    # The typed FFI (attributes as a dictionary), the kernel by content:
    # no callback.
    assert "mhlo.backend_config = {" in calls[0] and f'kernel = "{k.identity}"' in calls[0]
    assert "callback" not in text


def test_identity_is_content_addressed():
    a, b = add_kernel("same"), add_kernel("same")
    assert a.identity == b.identity
    other = kkj.metal_kernel(name="same", input_names=["inp"], output_names=["out"],
                             source=ADD + " ")
    assert other.identity != a.identity


def test_export_reloads_in_another_process(tmp_path):
    pytest.importorskip("flatbuffers", reason="jax.export's serialization needs flatbuffers")
    from jax import export

    k = add_kernel("jax_exported")
    x = jnp.arange(64, dtype=jnp.float32)
    # kernelkit's target is the user's own custom call: JAX asks to be told.
    allow = [export.DisabledSafetyCheck.custom_call(kkj.TARGET)]
    exp = export.export(jax.jit(lambda x: add(k, x, offset=7)), disabled_checks=allow)(x)
    path = tmp_path / "f.bin"
    path.write_bytes(exp.serialize())
    script = (
        "import sys, numpy as np, jax, jax.numpy as jnp, kernelkit.jax as kkj\n"
        "from jax import export\n"
        "kkj._register()\n"
        "exp = export.deserialize(bytearray(open(sys.argv[1], 'rb').read()))\n"
        "y = exp.call(jnp.arange(64, dtype=jnp.float32))\n"
        "np.testing.assert_array_equal(y, np.arange(64) + 7)\n"
        "print('reloaded')\n"
    )
    r = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0 and "reloaded" in r.stdout, r.stderr[-3000:]


def test_persistent_compilation_cache_reloads_in_another_process(tmp_path):
    # Two processes with one persistent cache: the second loads the
    # executable XLA compiled in the first and runs it.
    script = (
        "import sys, numpy as np, jax, jax.numpy as jnp, kernelkit.jax as kkj\n"
        "jax.config.update('jax_compilation_cache_dir', sys.argv[1])\n"
        "jax.config.update('jax_persistent_cache_min_compile_time_secs', 0)\n"
        "jax.config.update('jax_persistent_cache_min_entry_size_bytes', -1)\n"
        f"k = kkj.metal_kernel(name='jax_cached', input_names=['inp'], output_names=['out'], source={ADD!r})\n"
        "f = jax.jit(lambda x: k(inputs=[x], template=[('OFFSET', 9)], grid=(x.size, 1, 1),\n"
        "            threadgroup=(32, 1, 1), output_shapes=[x.shape], output_dtypes=[x.dtype])[0])\n"
        "np.testing.assert_array_equal(f(jnp.arange(32, dtype=jnp.float32)), np.arange(32) + 9)\n"
        "print('ok')\n"
    )
    for _ in range(2):
        r = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True,
                           text=True, timeout=300)
        assert r.returncode == 0 and "ok" in r.stdout, r.stderr[-3000:]
    assert any(tmp_path.iterdir()), "XLA wrote nothing to the persistent cache"


def test_vmap_sequential_by_default():
    k = add_kernel()
    xs = jnp.arange(3 * 40, dtype=jnp.float32).reshape(3, 40)
    ys = jax.jit(jax.vmap(lambda x: add(k, x)))(xs)
    np.testing.assert_array_equal(ys, np.asarray(xs) + 3)


def test_vmap_broadcast_all_for_a_batched_kernel():
    # The body handles the leading batch axis: grid z is the batch index.
    k = kkj.metal_kernel(
        name="jax_batched_scale", input_names=["x"], output_names=["y"], batched=True,
        source="""
            uint i = thread_position_in_grid.x;
            uint b = thread_position_in_grid.z;
            uint n = x_shape[x_ndim - 1];
            y[b * n + i] = x[b * n + i] * T(b + 1);
        """)

    def f(x):
        (y,) = k(inputs=[x], template=[("T", x.dtype)], grid=(x.shape[-1], 1, 1),
                 threadgroup=(32, 1, 1), output_shapes=[x.shape], output_dtypes=[x.dtype])
        return y

    xs = jnp.ones((4, 50), jnp.float32)
    text = jax.jit(jax.vmap(f)).lower(xs).as_text()
    assert text.count("custom_call @kernelkit") == 1
    ys = jax.jit(jax.vmap(f))(xs)
    np.testing.assert_array_equal(ys, np.arange(1, 5, dtype=np.float32)[:, None] * np.ones((4, 50)))


def test_grad_through_custom_vjp():
    sq, tw = square_kernel(), twice_kernel()

    def forward(x):
        (y,) = sq(inputs=[x], grid=(x.size, 1, 1), threadgroup=(32, 1, 1),
                  output_shapes=[x.shape], output_dtypes=[x.dtype])
        return y

    def backward(primals, y, g):
        (x,) = primals
        (dx,) = tw(inputs=[x, g], template=[("T", x.dtype)], grid=(x.size, 1, 1),
                   threadgroup=(32, 1, 1), output_shapes=[x.shape], output_dtypes=[x.dtype])
        return (dx,)

    f = kkj.custom_vjp(forward, backward)
    x = jnp.linspace(-2.0, 2.0, 50, dtype=jnp.float32)
    np.testing.assert_allclose(jax.grad(lambda x: f(x).sum())(x), 2 * np.asarray(x), rtol=1e-6)
    check_grads(f, (x,), order=1, modes=["rev"], eps=1e-2, atol=2e-2, rtol=2e-2)
    check_grads(jax.jit(f), (x,), order=1, modes=["rev"], eps=1e-2, atol=2e-2, rtol=2e-2)


def test_grid_sample_example_matches_numpy():
    # The example beside the tests in the repository, or under the
    # working directory (the GPU check runs a copy of the tests).
    for base in (os.path.join(HERE, "..", ".."), "crates"):
        examples = os.path.join(base, "kernelkit", "examples", "python")
        if os.path.exists(os.path.join(examples, "grid_sample_three_ways.py")):
            break
    else:
        pytest.skip("the example grid_sample_three_ways.py is not here")
    sys.path.insert(0, examples)
    try:
        import grid_sample_three_ways as ex
    finally:
        sys.path.pop(0)
    x, g, cot = ex.data(1)
    ref = ex.run_numpy(x, g, cot)
    got = ex.run_jax(x, g, cot)
    for a, b in zip(got, ref):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_input_output_aliases_run_in_place():
    k = kkj.metal_kernel(name="jax_inplace", input_names=["buf"], output_names=["res"],
                         source="uint i = thread_position_in_grid.x; res[i] = buf[i] * 2;")

    def f(x):
        (y,) = k(inputs=[x], grid=(x.size, 1, 1), threadgroup=(32, 1, 1),
                 output_shapes=[x.shape], output_dtypes=[x.dtype],
                 input_output_aliases={"buf": "res"})
        return y

    x = jnp.arange(100, dtype=jnp.float32)
    text = jax.jit(f).lower(x).as_text()
    assert "output_operand_aliases" in text
    np.testing.assert_array_equal(jax.jit(f, donate_argnums=0)(x + 0), np.arange(100) * 2)
    with pytest.raises(kk.CallError, match="no output 'nope'"):
        k(inputs=[x], grid=(100, 1, 1), output_shapes=[x.shape], output_dtypes=[x.dtype],
          input_output_aliases={"buf": "nope"})


def test_init_value_fills_before_the_kernel():
    k = kkj.metal_kernel(name="jax_partial", input_names=["x"], output_names=["y"],
                         source="uint i = thread_position_in_grid.x; if (i < 5) y[i] = x[i];")
    x = jnp.arange(10, dtype=jnp.float32)
    f = jax.jit(lambda x: k(inputs=[x], grid=(10, 1, 1), threadgroup=(16, 1, 1),
                            output_shapes=[x.shape], output_dtypes=[x.dtype], init_value=-1)[0])
    for _ in range(2):
        np.testing.assert_array_equal(f(x), [0, 1, 2, 3, 4, -1, -1, -1, -1, -1])


def test_compile_errors_keep_kernelkits_type_and_lines():
    k = kkj.metal_kernel(name="jax_broken", input_names=["x"], output_names=["y"],
                         source="uint i = thread_position_in_grid.x; y[i] = x[i] + undefined_name;")
    x = jnp.ones(8, jnp.float32)
    with pytest.raises(kk.CompileError, match="undefined_name") as e:
        jax.jit(lambda x: k(inputs=[x], grid=(8, 1, 1), output_shapes=[x.shape],
                            output_dtypes=[x.dtype])[0])(x)
    assert "jax_broken" in str(e.value)


def test_constructor_and_call_errors_are_kernelkits():
    with pytest.raises(kk.BuildError):
        kkj.metal_kernel(name="dup", input_names=["a"], output_names=["a"], source="")
    with pytest.raises(kk.ArgumentTypeError):
        kkj.metal_kernel(name="bad", input_names=["a"], output_names=["b"], source=3)
    k = add_kernel()
    with pytest.raises(kk.CallError, match="stream"):
        add_kernel()(inputs=[jnp.ones(4)], grid=(4, 1, 1), output_shapes=[(4,)],
                     output_dtypes=[jnp.float32], stream=object())
    with pytest.raises(kk.ArgumentTypeError, match="template"):
        k(inputs=[jnp.ones(4)], grid=(4, 1, 1), output_shapes=[(4,)],
          output_dtypes=[jnp.float32], template=[("OFFSET", "three")])


def test_errors_at_execution_go_through_the_ffi_error_path():
    # A threadgroup over the CPU's limit is refused when the call is
    # checked, inside XLA's execution: the process survives, the error is
    # kernelkit's (its type's name first in XLA's message).
    k = add_kernel()
    x = jnp.ones(8, jnp.float32)
    call = dict(inputs=[x], template=[("OFFSET", 1)], grid=(8, 1, 1),
                threadgroup=(1 << 20, 1, 1), output_shapes=[x.shape], output_dtypes=[x.dtype])
    with pytest.raises(kk.CallError, match="jax_add"):
        k(**call)
    with pytest.raises(Exception, match=r"kernelkit\.CallError: .*jax_add"):
        jax.block_until_ready(jax.jit(lambda x: k(**{**call, "inputs": [x]})[0])(x))
    # And the process goes on.
    np.testing.assert_array_equal(add(k, x), np.full(8, 4.0))


def test_shard_map_runs_on_each_devices_shard():
    script = (
        "import os\n"
        # Two CPU devices, also on a machine whose JAX has one GPU.
        "os.environ['XLA_FLAGS'] = '--xla_force_host_platform_device_count=2'\n"
        "os.environ['JAX_PLATFORMS'] = 'cpu'\n"
        "import numpy as np, jax, jax.numpy as jnp, kernelkit.jax as kkj\n"
        "from jax.sharding import Mesh, PartitionSpec as P\n"
        "try:\n    from jax import shard_map\nexcept ImportError:\n"
        "    from jax.experimental.shard_map import shard_map\n"
        f"k = kkj.metal_kernel(name='jax_sharded', input_names=['inp'], output_names=['out'], source={ADD!r})\n"
        "def f(x):\n"
        "    (y,) = k(inputs=[x], template=[('OFFSET', 5)], grid=(x.size, 1, 1),\n"
        "             threadgroup=(32, 1, 1), output_shapes=[x.shape], output_dtypes=[x.dtype])\n"
        "    return y\n"
        "mesh = Mesh(np.array(jax.devices()[:2]), ('d',))\n"
        "g = jax.jit(shard_map(f, mesh=mesh, in_specs=P('d'), out_specs=P('d')))\n"
        "x = jnp.arange(128, dtype=jnp.float32)\n"
        "np.testing.assert_array_equal(g(x), np.arange(128) + 5)\n"
        "assert len(jax.devices()) == 2\n"
        "print('sharded')\n"
    )
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "sharded" in r.stdout, r.stderr[-3000:]


def test_threads_jitting_distinct_kernels_compile_each_once():
    # The seed's reproduction: threads each jitting a distinct kernel at a
    # barrier, many rounds; every result right, one compile per kernel.
    threads = 16
    rounds = 100
    salt = uuid.uuid4().hex
    kernels = [
        kkj.metal_kernel(name=f"jax_thread_{t}", input_names=["inp"], output_names=["out"],
                         source=ADD + f" // {salt} {t}")
        for t in range(threads)
    ]
    before = kk.cache_stats(kk.gpu if kkj._platform() == "cuda" else kk.cpu)["compiles"]
    barrier = threading.Barrier(threads)
    errors = []

    def work(t):
        try:
            x = jnp.arange(256, dtype=jnp.float32)
            f = jax.jit(lambda x: add(kernels[t], x, offset=t))
            for _ in range(rounds):
                barrier.wait()
                np.testing.assert_array_equal(f(x), np.arange(256) + t)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)
            barrier.abort()

    ts = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors[0]
    after = kk.cache_stats(kk.gpu if kkj._platform() == "cuda" else kk.cpu)["compiles"]
    assert after - before == threads


@pytest.mark.skipif(jax.default_backend() != "gpu", reason="JAX has no GPU backend here")
def test_cuda_kernel_and_command_buffers_on_the_gpu():
    # A CUDA C++ body (MLX's cuda_kernel), jitted: with XLA's default
    # command buffers the call is captured into a CUDA graph after the
    # initialize stage loaded its variant, and replays right.
    k = kkj.cuda_kernel(
        name="jax_cuda_axpy", input_names=["x", "y"], output_names=["out"],
        source="""
            int i = blockIdx.x * blockDim.x + threadIdx.x;
            if (i < x_shape[0]) out[i] = 2.0f * x[i] + y[i];
        """,
    )

    def f(x, y):
        for _ in range(3):
            (x,) = k(inputs=[x, y], grid=(x.size, 1, 1), threadgroup=(128, 1, 1),
                     output_shapes=[x.shape], output_dtypes=[x.dtype])
        return x

    x = jnp.arange(1000, dtype=jnp.float32)
    y = jnp.ones(1000, jnp.float32)
    g = jax.jit(f)
    want = ((np.arange(1000) * 2 + 1) * 2 + 1) * 2 + 1
    for _ in range(3):
        np.testing.assert_array_equal(g(x, y), want)


def test_cuda_bodies_are_refused_on_the_cpu():
    if jax.default_backend() != "cpu":
        pytest.skip("JAX runs on a GPU here")
    k = kkj.cuda_kernel(name="jax_cuda_only", input_names=["x"], output_names=["y"],
                        source="int i = threadIdx.x; y[i] = x[i];")
    x = jnp.ones(4, jnp.float32)
    with pytest.raises(kk.KernelError, match="jax_cuda_only"):
        k(inputs=[x], grid=(4, 1, 1), output_shapes=[x.shape], output_dtypes=[x.dtype])
