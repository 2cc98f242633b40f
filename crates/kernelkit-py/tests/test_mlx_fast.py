"""The custom-kernel cases of MLX's own test suite (`python/tests/test_fast.py`,
`test_custom_kernel_*`), rewritten for kernelkit on NumPy arrays: each runs
the kernel MLX's case runs (a Metal body through `metal_kernel` on every
device, and on CUDA also the case's CUDA body through `cuda_kernel`) and
checks what MLX's case checks, against NumPy instead of MLX's own ops.

MLX's cases seed MLX's random generator and compare with constants that
seed gives; here the expected values are computed from the inputs.
"""

import numpy as np
import pytest

import kernelkit as kk
from conftest import DEVICES, requires_cuda

# A body's index of its thread, per dialect.
METAL_ELEM = "uint elem = thread_position_in_grid.x;"
CUDA_ELEM = "auto elem = cooperative_groups::this_grid().thread_rank();"

# (kernel constructor, the thread index line, device): the Metal-dialect body
# everywhere, the CUDA one on CUDA.
FLAVORS = [pytest.param(("metal", d.values[0]), id=f"metal-{d.id}", marks=d.marks) for d in DEVICES] + [
    pytest.param(("cuda", "cuda"), id="cuda_kernel-cuda", marks=requires_cuda)
]


def flavor(which):
    kind, device = which
    make = kk.metal_kernel if kind == "metal" else kk.cuda_kernel
    return kind, make, device


def normal(shape, seed=7):
    return np.random.default_rng(seed).normal(size=shape).astype(np.float32)


@pytest.mark.parametrize("which", FLAVORS)
def test_basic_copy(which):
    kind, make, device = flavor(which)
    elem = METAL_ELEM if kind == "metal" else CUDA_ELEM
    a = normal((2, 2))
    k = make(name="basic", input_names=["a"], output_names=["out1"], source=f"{elem} out1[elem] = a[elem];")
    (out,) = k(inputs=[a], grid=(4, 1, 1), threadgroup=(2, 1, 1), output_shapes=[(2, 2)],
               output_dtypes=[np.float32], device=device)
    np.testing.assert_allclose(out, a)


@pytest.mark.parametrize("which", FLAVORS)
def test_arguments_of_every_kind(which):
    # Inputs of four dtypes and ranks, one a Python float (a 0-d input);
    # template values of all three kinds (bool, int, dtype); two outputs of
    # different dtypes.
    kind, make, device = flavor(which)
    if kind == "metal":
        source = f"""
            {METAL_ELEM}
            T tmp = a[0];
            if (e) {{
                out1[elem] = a[1] + b[2] + c[3] + d + f;
            }} else {{
                out1[elem] = 1;
            }}
            out2[elem] = a[1] + b[2] + c[1] - d;
        """
    else:
        source = f"""
            {CUDA_ELEM}
            T tmp = a[0];
            if (e) {{
                out1[elem] = a[1] + b[2] + static_cast<float>(c[3]) + d[0] + f;
            }} else {{
                out1[elem] = 1;
            }}
            out2[elem] = a[1] + b[2] + static_cast<float>(c[1]) - d[0];
        """
    a = normal((3, 6))
    b = np.array([3, 4, 5], dtype=np.int32)
    c = normal((2, 2), seed=8).astype(np.float16)
    d = 7.3
    k = make(name="arg_test", input_names=["a", "b", "c", "d"], output_names=["out1", "out2"], source=source)
    for e in (True, False):
        out1, out2 = k(
            inputs=[a, b, c, d],
            template=[("e", e), ("f", 3), ("T", np.float16)],
            grid=(6, 1, 1),
            threadgroup=(2, 1, 1),
            output_shapes=[(3, 2), (3, 2)],
            output_dtypes=[np.float32, np.int32],
            device=device,
        )
        a1, b2, c1, c3 = float(a.flat[1]), float(b[2]), float(c.flat[1]), float(c.flat[3])
        want1 = a1 + b2 + c3 + np.float32(d) + 3 if e else 1.0
        np.testing.assert_allclose(out1, np.full((3, 2), want1, np.float32), rtol=1e-5)
        # The float sum converted to int, as the body's assignment does.
        want2 = int(np.float32(a1 + b2 + c1 - np.float32(d)))
        assert out2.dtype == np.int32
        np.testing.assert_array_equal(out2, np.full((3, 2), want2, np.int32))


@pytest.mark.parametrize("which", FLAVORS)
def test_strided_input_with_and_without_a_contiguous_copy(which):
    kind, make, device = flavor(which)
    if kind == "metal":
        strided = f"""
            {METAL_ELEM}
            uint loc = elem_to_loc(elem, inp_shape, inp_strides, inp_ndim);
            T tmp = inp[loc];
            out[elem] = metal::precise::exp(tmp) * threads_per_simdgroup;
        """
        contig = f"""
            {METAL_ELEM}
            T tmp = inp[elem];
            out[elem] = metal::precise::exp(tmp) * threads_per_simdgroup;
        """
    else:
        strided = f"""
            {CUDA_ELEM}
            auto loc = elem_to_loc(elem, inp_shape.data(), inp_strides.data(), inp_ndim);
            T tmp = inp[loc];
            out[elem] = exp(tmp) * WARP_SIZE;
        """
        contig = f"""
            {CUDA_ELEM}
            T tmp = inp[elem];
            out[elem] = exp(tmp) * WARP_SIZE;
        """
    # Every other row, repeated: a view that is not row-contiguous.
    base = np.tile(normal((3, 6))[::2], (4, 1))
    a = base[:, ::2]
    assert not a.flags.c_contiguous
    for ensure in (True, False):
        k = make(name=f"myexp{ensure}", input_names=["inp"], output_names=["out"],
                 source=contig if ensure else strided, ensure_row_contiguous=ensure)
        (out,) = k(inputs=[a], template=[("T", np.float32)], grid=(a.size, 1, 1), threadgroup=(256, 1, 1),
                   output_shapes=[a.shape], output_dtypes=[a.dtype], device=device)
        # 32: the SIMD group (warp) width MLX's case expects of Apple GPUs,
        # which kernelkit's CPU and CUDA devices report too.
        np.testing.assert_allclose(out, np.exp(a) * 32, rtol=1e-5)


@pytest.mark.parametrize("which", FLAVORS)
def test_a_helper_template_in_the_header(which):
    kind, make, device = flavor(which)
    if kind == "metal":
        header = "template <typename T> T do_exp(T x) { return metal::precise::exp(x); }"
        source = f"{METAL_ELEM} out1[elem] = do_exp(a[elem]);"
    else:
        header = "template <typename T> __device__ T do_exp(T x) { return exp(x); }"
        source = f"{CUDA_ELEM} out1[elem] = do_exp(a[elem]);"
    a = normal((2, 2))
    k = make(name="helper", input_names=["a"], output_names=["out1"], header=header, source=source)
    (out,) = k(inputs=[a], grid=(4, 1, 1), threadgroup=(2, 1, 1), output_shapes=[(2, 2)],
               output_dtypes=[np.float32], device=device)
    np.testing.assert_allclose(out, np.exp(a), rtol=1e-6)


@pytest.mark.parametrize("which", FLAVORS)
def test_threadgroup_size_attribute(which):
    kind, make, device = flavor(which)
    source = "out[0] = threads_per_threadgroup.x;" if kind == "metal" else "out[0] = blockDim.x;"
    a = np.zeros((1, 1), np.float32)
    k = make(name="test_fun", input_names=["a"], output_names=["out"], source=source)
    (out,) = k(inputs=[a], grid=(2, 1, 1), threadgroup=(2, 1, 1), output_shapes=[(1, 1)],
               output_dtypes=[np.uint32], device=device)
    assert out.dtype == np.uint32 and out.item() == 2


@pytest.mark.parametrize("which", FLAVORS)
def test_one_name_two_sources_two_kernels(which):
    # The bug MLX fixed twice (Metal, then its CUDA module cache): a second
    # kernel of the same name ran the first one's code. Both kernels are
    # alive and called in turn, twice.
    kind, make, device = flavor(which)
    elem = METAL_ELEM if kind == "metal" else CUDA_ELEM
    a = np.arange(32, dtype=np.float32)

    def kernel(body):
        return make(name="dup_name", input_names=["inp"], output_names=["out"], source=f"{elem} {body}")

    twice = kernel("out[elem] = inp[elem] * 2.0f;")
    plus = kernel("out[elem] = inp[elem] + 100.0f;")
    for _ in range(2):
        for k, want in ((twice, a * 2), (plus, a + 100)):
            (out,) = k(inputs=[a], grid=(a.size, 1, 1), threadgroup=(a.size, 1, 1),
                       output_shapes=[a.shape], output_dtypes=[a.dtype], device=device)
            np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("device", DEVICES)
def test_math_mode_reaches_the_compiler(device):
    # As MLX's case: a body that tells fast math from safe math by the
    # compiler's `__FAST_MATH__`, under one kernel name, so a stale build of
    # the other mode would show.
    source = f"""
        {METAL_ELEM}
        #if defined(__FAST_MATH__) && __FAST_MATH__
        out[elem] = 1.0f;
        #else
        out[elem] = 0.0f;
        #endif
    """
    a = np.zeros(4, np.float32)
    for mode, want in (("safe", 0.0), ("fast", 1.0), ("safe", 0.0)):
        k = kk.metal_kernel(name="math_mode", input_names=["inp"], output_names=["out"], source=source,
                            compile_options={"math_mode": mode})
        (out,) = k(inputs=[a], grid=(4, 1, 1), threadgroup=(4, 1, 1), output_shapes=[a.shape],
                   output_dtypes=[a.dtype], device=device)
        np.testing.assert_array_equal(out, np.full(4, want, np.float32), err_msg=mode)
    for bad in ({"math_mode": "precise"}, {"unknown": "value"}):
        with pytest.raises(ValueError):
            kk.metal_kernel(name="bad_options", input_names=["inp"], output_names=["out"],
                            source="out[0] = inp[0];", compile_options=bad)


@pytest.mark.parametrize("device", DEVICES)
def test_one_kernel_two_input_dtypes(device):
    k = kk.metal_kernel(name="mixed_dtypes", input_names=["inp"], output_names=["out"],
                        source=f"{METAL_ELEM} out[elem] = inp[elem] + inp[elem];")

    def call(a):
        (out,) = k(inputs=[a], grid=(a.size, 1, 1), threadgroup=(a.size, 1, 1), output_shapes=[a.shape],
                   output_dtypes=[a.dtype], device=device)
        return out

    half, single = call(np.full(32, 1.5, np.float16)), call(np.full(32, 2.5, np.float32))
    assert half.dtype == np.float16 and single.dtype == np.float32
    np.testing.assert_allclose(half.astype(np.float32) + single, np.full(32, 8.0, np.float32))
