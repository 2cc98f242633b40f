"""MLX's interface: `metal_kernel(...)` and the call, on NumPy arrays."""

import numpy as np
import pytest

import kernelkit as kk
from conftest import DEVICES

EXP = """
    uint elem = thread_position_in_grid.x;
    T tmp = inp[elem];
    out[elem] = metal::exp(tmp);
"""


@pytest.mark.parametrize("device", DEVICES)
def test_mlx_docs_exp_example(device):
    # The example of MLX's docs, as written there apart from the arrays.
    kernel = kk.fast.metal_kernel(
        name="myexp", input_names=["inp"], output_names=["out"], source=EXP
    )
    a = np.random.default_rng(0).normal(size=(4, 16)).astype(np.float16)
    outputs = kernel(
        inputs=[a],
        template=[("T", np.float32)],
        grid=(a.size, 1, 1),
        threadgroup=(256, 1, 1),
        output_shapes=[a.shape],
        output_dtypes=[a.dtype],
        device=device,
    )
    assert isinstance(outputs, list) and len(outputs) == 1
    b = outputs[0]
    assert isinstance(b, np.ndarray) and b.dtype == np.float16 and b.shape == (4, 16)
    np.testing.assert_allclose(b, np.exp(a), rtol=2e-3)


def offset_kernel():
    return kk.metal_kernel(
        name="add_offset",
        input_names=["inp"],
        output_names=["out"],
        source="uint i = thread_position_in_grid.x; out[i] = inp[i] + OFFSET;",
    )


def call(kernel, x, **kw):
    kw.setdefault("grid", (x.size, 1, 1))
    kw.setdefault("threadgroup", (32, 1, 1))
    kw.setdefault("output_shapes", [x.shape])
    kw.setdefault("output_dtypes", [x.dtype])
    return kernel(inputs=[x], **kw)


def test_int_template_values_reach_the_body():
    k = offset_kernel()
    x = np.arange(10, dtype=np.int32)
    for offset in (0, 7, -3, 2**31 - 1 - 10):
        (y,) = call(k, x, template=[("OFFSET", offset)])
        np.testing.assert_array_equal(y, x + offset)


def test_bool_and_int_of_the_same_value_are_distinct_variants():
    # As in the seed: True and 1 print alike but are different template
    # kinds, so they must not share a compiled kernel. `sizeof(T)` tells.
    k = kk.metal_kernel(
        name="kind_probe",
        input_names=["inp"],
        output_names=["out"],
        header="template <typename V> constexpr int kind_of(V) { return sizeof(V); }",
        source="out[0] = kind_of(FLAG) + inp[0];",
    )
    x = np.zeros(1, np.int32)
    args = dict(grid=(1, 1, 1), threadgroup=(1, 1, 1), output_shapes=[(1,)], output_dtypes=[np.int32])
    (as_bool,) = k(inputs=[x], template=[("FLAG", True)], **args)
    (as_int,) = k(inputs=[x], template=[("FLAG", 1)], **args)
    assert as_bool[0] == 1 and as_int[0] == 4


@pytest.mark.parametrize(
    "dtype",
    [np.float32, np.dtype("float32"), "float32", "f32", np.float64, np.int16, np.dtype(np.uint8)],
)
def test_dtype_template_values_and_output_dtypes(dtype):
    k = kk.metal_kernel(
        name="cast_to",
        input_names=["inp"],
        output_names=["out"],
        source="uint i = thread_position_in_grid.x; out[i] = static_cast<T>(inp[i]);",
    )
    x = np.arange(6, dtype=np.float32)
    (y,) = call(k, x, template=[("T", dtype)], output_dtypes=[dtype])
    want = np.dtype(dtype if not isinstance(dtype, str) else "float32")
    assert y.dtype == want
    np.testing.assert_array_equal(y, x.astype(want))


def test_torch_and_mlx_dtype_objects_are_read_without_importing_them():
    # Objects shaped like `torch.float16` and `mlx.core.int32`: recognised
    # by their type's module and printed name, as the real ones are.
    def fake(module, type_name, text):
        cls = type(type_name, (), {"__module__": module, "__str__": lambda self: text})
        return cls()

    k = kk.metal_kernel(
        name="cast_fake",
        input_names=["inp"],
        output_names=["out"],
        source="uint i = thread_position_in_grid.x; out[i] = static_cast<T>(inp[i]);",
    )
    x = np.arange(4, dtype=np.float32)
    (y,) = call(
        k, x, template=[("T", fake("torch", "dtype", "torch.float16"))],
        output_dtypes=[fake("mlx.core", "Dtype", "mlx.core.float16")],
    )
    assert y.dtype == np.float16
    with pytest.raises(kk.ArgumentTypeError, match="names no dtype"):
        call(k, x, template=[("T", np.float32)], output_dtypes=[fake("torch", "device", "torch.float16")])


def test_template_as_a_dict_and_repeated_lists():
    k = offset_kernel()
    x = np.arange(5, dtype=np.float32)
    template = [("OFFSET", 2)]
    for _ in range(3):  # the same list object: found by identity
        (y,) = call(k, x, template=template)
        np.testing.assert_array_equal(y, x + 2)
    (y,) = call(k, x, template={"OFFSET": 5})
    np.testing.assert_array_equal(y, x + 5)
    (y,) = call(k, x, template=[("OFFSET", 2000)])  # ints past the small-int cache
    np.testing.assert_array_equal(y, x + 2000)


def test_several_inputs_and_outputs_with_init_value():
    k = kk.metal_kernel(
        name="sum_and_count",
        input_names=["a", "b"],
        output_names=["total", "hits"],
        atomic_outputs=True,
        source="""
            uint i = thread_position_in_grid.x;
            atomic_fetch_add_explicit(&total[0], a[i] * b[i], memory_order_relaxed);
            atomic_fetch_add_explicit(&hits[i % 2], 1, memory_order_relaxed);
        """,
    )
    a = np.arange(8, dtype=np.float32)
    b = np.full(8, 2.0, np.float32)
    total, hits = k(
        inputs=[a, b], grid=(8, 1, 1), threadgroup=(4, 1, 1),
        output_shapes=[(1,), (2,)], output_dtypes=[np.float32, np.int32], init_value=1,
    )
    assert total[0] == 1 + 2 * a.sum()
    np.testing.assert_array_equal(hits, [5, 5])


def test_python_scalars_are_0d_inputs():
    k = kk.metal_kernel(
        name="scale_shift",
        input_names=["x", "scale", "shift", "flag"],
        output_names=["out"],
        source="""
            uint i = thread_position_in_grid.x;
            out[i] = flag ? x[i] * scale + shift : x[i];
        """,
    )
    x = np.arange(4, dtype=np.float32)
    (y,) = k(inputs=[x, 2.5, 3, True], grid=(4, 1, 1), threadgroup=(4, 1, 1),
             output_shapes=[x.shape], output_dtypes=[np.float32])
    np.testing.assert_array_equal(y, x * 2.5 + 3)
    (y,) = k(inputs=[x, np.float32(2.0), np.int32(1), False], grid=(4, 1, 1), threadgroup=(4, 1, 1),
             output_shapes=[x.shape], output_dtypes=[np.float32])
    np.testing.assert_array_equal(y, x)


def test_verbose_prints_the_generated_source(capsys):
    k = offset_kernel()
    x = np.arange(3, dtype=np.float32)
    call(k, x, template=[("OFFSET", 1)], verbose=True)
    printed = capsys.readouterr().out
    assert "out[i] = inp[i] + OFFSET;" in printed
    assert "add_offset" in printed


def test_out_arrays_receive_the_results():
    k = offset_kernel()
    x = np.arange(6, dtype=np.float32)
    out = np.empty(6, np.float32)
    (y,) = k(inputs=[x], template=[("OFFSET", 1)], grid=(6, 1, 1), threadgroup=(6, 1, 1), out=[out])
    assert y is out
    np.testing.assert_array_equal(out, x + 1)
    # A strided out= array is written through its strides.
    big = np.zeros(12, np.float32)
    k(inputs=[x], template=[("OFFSET", 2)], grid=(6, 1, 1), threadgroup=(6, 1, 1), out=[big[::2]])
    np.testing.assert_array_equal(big[::2], x + 2)
    np.testing.assert_array_equal(big[1::2], 0)
    with pytest.raises(kk.CallError, match="out= holds"):
        k(inputs=[x], template=[("OFFSET", 1)], grid=(6, 1, 1), threadgroup=(6, 1, 1),
          output_shapes=[(5,)], output_dtypes=[np.float32], out=[out])
    readonly = np.empty(6, np.float32)
    readonly.flags.writeable = False
    with pytest.raises(kk.CallError, match="read-only"):
        k(inputs=[x], template=[("OFFSET", 1)], grid=(6, 1, 1), threadgroup=(6, 1, 1), out=[readonly])


def test_streams_and_devices():
    k = offset_kernel()
    x = np.arange(4, dtype=np.float32)
    s = kk.new_stream(kk.cpu)
    assert s.device == kk.cpu and s.device == "cpu"
    for where in (dict(stream=s), dict(stream="cpu"), dict(stream=kk.cpu), dict(device="cpu"),
                  dict(device=kk.Device("cpu")), dict(stream=s, device="cpu")):
        (y,) = call(k, x, template=[("OFFSET", 1)], **where)
        np.testing.assert_array_equal(y, x + 1)
    s.synchronize()
    kk.cpu.synchronize()
    with pytest.raises(kk.CallError, match="not one of"):
        call(k, x, template=[("OFFSET", 1)], device="tpu")
    with pytest.raises(kk.ArgumentTypeError):
        call(k, x, template=[("OFFSET", 1)], stream=3)
    assert kk.Device("cuda", 1) == kk.Device("cuda:1") == "cuda:1"
    assert len({kk.Device("cuda:1"), "cuda:1", kk.cpu, "cpu"}) == 2
    assert len({kk.Device("cuda:1"), "cuda:1", kk.cpu, "cpu"}) == 2
    assert repr(kk.gpu) == "Device('cuda:0')" and kk.gpu.type == "cuda" and kk.cpu.index == 0


def test_clear_streams_retires_this_threads_streams():
    k = offset_kernel()
    x = np.arange(4, dtype=np.float32)
    s = kk.new_stream("cpu")
    call(k, x, template=[("OFFSET", 1)], stream=s)
    kk.clear_streams()
    with pytest.raises(kk.CallError, match="cleared by clear_streams"):
        call(k, x, template=[("OFFSET", 1)], stream=s)
    # New streams work again.
    call(k, x, template=[("OFFSET", 1)], stream=kk.new_stream("cpu"))


def test_cache_stats_count_one_compile_per_variant():
    k = kk.metal_kernel(
        name="stats_probe",
        input_names=["inp"],
        output_names=["out"],
        source="uint i = thread_position_in_grid.x; out[i] = inp[i] * 3;",
    )
    x = np.arange(4, dtype=np.float32)
    before = kk.cache_stats("cpu")
    for _ in range(3):
        call(k, x)
    call(k, x.astype(np.int32))  # a second variant
    after = kk.cache_stats(kk.cpu)
    assert after["compiles"] - before["compiles"] == 2
    assert after["failures"] == before["failures"]
    assert set(after) >= {"hits", "misses", "compiles", "failures", "compile_ns", "loaded_modules"}


def test_compile_options_as_mlx():
    src = "uint i = thread_position_in_grid.x; out[i] = inp[i];"
    for mode in ("safe", "relaxed", "fast"):
        kk.metal_kernel(name="m", input_names=["inp"], output_names=["out"], source=src,
                        compile_options={"math_mode": mode})
    with pytest.raises(kk.BuildError, match="math_mode"):
        kk.metal_kernel(name="m", input_names=["inp"], output_names=["out"], source=src,
                        compile_options={"math_mode": "reckless"})
    with pytest.raises(ValueError, match="unknown compile option"):
        kk.metal_kernel(name="m", input_names=["inp"], output_names=["out"], source=src,
                        compile_options={"opt": 3})


def test_kernel_attributes():
    k = offset_kernel()
    assert k.name == "add_offset"
    assert k.input_names == ["inp"] and k.output_names == ["out"]
    assert "add_offset" in repr(k)


def test_cuda_kernel_signature():
    k = kk.cuda_kernel(
        name="cuda_body", input_names=["inp"], output_names=["out"],
        source="out[0] = inp[0];", header="", ensure_row_contiguous=True, shared_memory=0,
    )
    assert "cuda_kernel" in repr(k)
    x = np.ones(1, np.float32)
    # A CUDA C++ body (the body language `cuda`) runs on CUDA devices only.
    with pytest.raises(kk.CallError, match="CUDA C\\+\\+"):
        k(inputs=[x], grid=(1, 1, 1), threadgroup=(1, 1, 1), output_shapes=[(1,)],
          output_dtypes=[np.float32], device="cpu")


@pytest.mark.skipif(not __import__("conftest")._CUDA_REASON, reason="a GPU is present")
def test_cuda_kernel_without_a_gpu_is_a_device_error():
    k = kk.cuda_kernel(name="cuda_body", input_names=["inp"], output_names=["out"], source="out[0] = inp[0];")
    with pytest.raises(kk.DeviceError):
        k(inputs=[np.ones(1, np.float32)], grid=(1, 1, 1), threadgroup=(1, 1, 1),
          output_shapes=[(1,)], output_dtypes=[np.float32])


@pytest.mark.parametrize("device", DEVICES)
def test_cuda_kernel_body_on_cuda(device):
    if device == "cpu":
        pytest.skip("a CUDA C++ body")
    k = kk.cuda_kernel(
        name="cuda_axpy", input_names=["x", "y"], output_names=["out"],
        source="""
            int i = blockIdx.x * blockDim.x + threadIdx.x;
            if (i < x_shape[0]) out[i] = 2.0f * x[i] + y[i];
        """,
    )
    x = np.arange(1000, dtype=np.float32)
    y = np.ones(1000, np.float32)
    (o,) = k(inputs=[x, y], grid=(1000, 1, 1), threadgroup=(128, 1, 1),
             output_shapes=[x.shape], output_dtypes=[np.float32])
    np.testing.assert_array_equal(o, 2 * x + y)


def test_output_shapes_and_dtypes_changed_between_calls_are_read_again():
    # A callable remembers the last output_shapes/output_dtypes by the
    # identity of their items (tuples only): a new tuple in the same list,
    # a mutated list shape, or another dtype must all be read anew.
    k = kk.metal_kernel(name="fill_index", input_names=["x"], output_names=["out"],
                        source="uint i = thread_position_in_grid.x; out[i] = x[0] + i;")
    x = np.ones(1, np.float32)

    def run(shapes, dtypes, n):
        return k(inputs=[x], grid=(n, 1, 1), threadgroup=(1, 1, 1), output_shapes=shapes, output_dtypes=dtypes)[0]

    shapes, dtypes = [(4,)], [np.float32]
    a = run(shapes, dtypes, 4)
    b = run(shapes, dtypes, 4)  # the same objects: remembered
    assert a.shape == b.shape == (4,) and a.dtype == b.dtype == np.float32
    np.testing.assert_array_equal(b, [1, 2, 3, 4])
    shapes[0] = (6,)  # the same list, another tuple
    c = run(shapes, dtypes, 6)
    assert c.shape == (6,)
    np.testing.assert_array_equal(c, np.arange(1, 7))
    dtypes[0] = np.int32  # the same list, another dtype
    d = run(shapes, dtypes, 6)
    assert d.dtype == np.int32 and d.shape == (6,)
    listed = [[3]]  # a list shape is never remembered: mutated in place
    assert run(listed, dtypes, 3).shape == (3,)
    listed[0][0] = 5
    assert run(listed, dtypes, 5).shape == (5,)
    # Two outputs' worth of the remembered items does not match one.
    with pytest.raises(kk.KernelError):
        run([(6,), (6,)], [np.int32, np.int32], 6)
