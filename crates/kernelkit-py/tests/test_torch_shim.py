"""torch tensors read through torch's C functions (`src/ffi/torch_shim.rs`) and
through their methods: the same layout, the same errors, the same results.
"""

import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed here (the GPU machine has it)")

import kernelkit as kk  # noqa: E402
from kernelkit import _testing as hooks  # noqa: E402

CUDA = torch.cuda.is_available()
DEVICES = [
    pytest.param("cpu", id="cpu"),
    pytest.param("cuda", id="cuda", marks=pytest.mark.skipif(not CUDA, reason="torch sees no CUDA device")),
]
# torch 2.3 and later export every function the shim reads with.
HAS_SHIM = tuple(int(p) for p in torch.__version__.split(".")[:2]) >= (2, 3)


@pytest.fixture
def both_reads():
    """Yields a function that reads a tensor both ways; the shim is left on."""

    def read(t):
        hooks.torch_shim(True)
        direct = hooks.torch_layout(t)
        hooks.torch_shim(False)
        try:
            by_methods = hooks.torch_layout(t)
        finally:
            hooks.torch_shim(True)
        return direct, by_methods

    yield read
    hooks.torch_shim(True)


def test_the_shim_is_used_where_torch_has_it():
    if not HAS_SHIM:
        pytest.skip(f"torch {torch.__version__} predates the C functions the shim reads with")
    assert hooks.torch_shim()


def test_the_hook_turns_the_shim_off_before_the_first_tensor():
    code = (
        "import torch, kernelkit._testing as h; h.torch_shim(False); torch.empty(1); "
        "print(h.torch_shim()); print(h.torch_shim(True))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", str(HAS_SHIM)]


def layouts(device):
    base = torch.arange(4 * 6 * 5, dtype=torch.float32, device=device).reshape(4, 6, 5)
    yield base
    yield base[1:, ::2, 1:]  # an offset and steps
    yield base.transpose(0, 2)
    yield base[:, :1]  # an axis of extent 1
    yield base[0, 0, 0]  # 0-d, at an offset
    yield torch.tensor(2.5, device=device)
    yield torch.empty(0, 3, device=device)
    yield torch.empty(3, 1, device=device).expand(3, 4)  # stride 0
    yield torch.empty(2, 3, 4, 5, device=device).to(memory_format=torch.channels_last)
    for dtype in (
        torch.bool,
        torch.uint8,
        torch.int8,
        torch.int16,
        torch.int32,
        torch.int64,
        torch.float16,
        torch.bfloat16,
        torch.float64,
        torch.complex64,
        torch.uint16,
        torch.uint32,
        torch.uint64,
    ):
        yield torch.zeros(3, 2, dtype=dtype, device=device)


@pytest.mark.parametrize("device", DEVICES)
def test_both_reads_agree(device, both_reads):
    for t in layouts(device):
        direct, by_methods = both_reads(t)
        assert direct == by_methods, t
        data, where, dtype, shape, strides = direct
        assert data == t.data_ptr()
        assert where == ("cpu" if device == "cpu" else f"cuda:{t.device.index}")
        assert dtype == str(t.dtype).removeprefix("torch.")
        assert shape == list(t.shape) and strides == list(t.stride())


def test_tensor_impls_are_read_from_the_objects():
    if not HAS_SHIM:
        pytest.skip(f"torch {torch.__version__} predates the C functions the shim reads with")
    assert hooks.torch_cdata_slot()


def test_the_slot_is_found_when_torch_is_first_seen_in_inference_mode():
    if not HAS_SHIM:
        pytest.skip(f"torch {torch.__version__} predates the C functions the shim reads with")
    code = (
        "import torch, kernelkit._testing as n\n"
        "with torch.inference_mode():\n"
        "    x = torch.ones(4)\n"
        "    n.torch_layout(x)  # kernelkit's first torch tensor\n"
        "    print(n.torch_cdata_slot(), n.torch_layout(torch.nn.Parameter(x, False))[3])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "[4]"]


class Marked(torch.Tensor):
    """A subclass: its `_cdata` is read as an attribute, never from memory."""


def origins(device):
    base = torch.arange(6.0, device=device)
    yield base
    yield base.view(2, 3).t()
    yield torch.nn.Parameter(base.clone())
    yield base.clone().as_subclass(Marked)
    w = torch.ones(3, device=device, requires_grad=True)
    yield w * 2  # made by autograd, with a grad_fn
    yield (w * 2).detach()
    yield torch.from_dlpack(base.clone())
    if device == "cpu":
        yield torch.from_numpy(pytest.importorskip("numpy").arange(4.0))
    t = torch.zeros(2, device=device)
    torch.utils.swap_tensors(t, torch.ones(7, dtype=torch.int32, device=device))
    yield t


@pytest.mark.parametrize("device", DEVICES)
def test_both_reads_agree_on_tensors_of_every_origin(device, both_reads):
    for t in origins(device):
        direct, by_methods = both_reads(t)
        assert direct == by_methods, type(t)
        assert direct[0] == t.data_ptr() and direct[3] == list(t.shape)


def bad_tensors():
    yield torch.zeros(2, dtype=torch.complex128)
    yield torch.zeros(2, 2).to_sparse()
    yield torch.zeros(2, device="meta")
    yield torch.zeros(2, dtype=torch.float8_e4m3fn)


@pytest.mark.parametrize("make", range(4))
def test_both_reads_refuse_alike(make, both_reads):
    t = list(bad_tensors())[make]
    errors = []
    for on in (True, False):
        hooks.torch_shim(on)
        with pytest.raises(Exception) as caught:
            hooks.torch_layout(t)
        errors.append((type(caught.value), str(caught.value)))
    hooks.torch_shim(True)
    assert errors[0] == errors[1]


def test_a_tensor_changed_in_place_is_read_as_it_is_now(both_reads):
    t = torch.zeros(4, 6)
    t.t_()  # strides in place
    assert both_reads(t)[0][4] == [1, 6]
    t.data = torch.zeros(8, dtype=torch.int32)  # dtype and shape
    direct, by_methods = both_reads(t)
    assert direct == by_methods and direct[2] == "int32" and direct[3] == [8]
    t.set_(torch.zeros(3, 3, dtype=torch.int32))  # storage
    direct, by_methods = both_reads(t)
    assert direct == by_methods and direct[0] == t.data_ptr()
    t.resize_(2)
    assert both_reads(t)[0][3] == [2]
    u = torch.ones(5, dtype=torch.float64)
    torch.utils.swap_tensors(t, u)  # another TensorImpl behind the object
    direct, by_methods = both_reads(t)
    assert direct == by_methods and direct[2] == "float64" and direct[3] == [5]


DOUBLE = kk.metal_kernel(
    name="torch_shim_double",
    input_names=["inp"],
    output_names=["out"],
    source="uint i = thread_position_in_grid.x; out[i] = inp[i] * 2;",
)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("on", [True, False], ids=["shim", "methods"])
def test_calls_read_through_either(device, on):
    hooks.torch_shim(on)
    try:
        x = torch.arange(300, dtype=torch.float32, device=device)[::3]  # strided: a copy in
        out = torch.empty(100, device=device)
        (y,) = DOUBLE(inputs=[x], grid=(100, 1, 1), threadgroup=(100, 1, 1), out=[out])
        assert y is out
        (z,) = DOUBLE(
            inputs=[x], grid=(100, 1, 1), threadgroup=(100, 1, 1), output_shapes=[(100,)], output_dtypes=[x.dtype]
        )
        torch.testing.assert_close(out, x * 2)
        torch.testing.assert_close(z, x * 2)
        assert z.device == x.device
    finally:
        hooks.torch_shim(True)


@pytest.mark.skipif(not CUDA, reason="torch sees no CUDA device")
def test_calls_follow_the_current_stream_through_the_shim():
    x = torch.arange(1 << 20, dtype=torch.float32, device="cuda")
    out = torch.empty_like(x)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        # Queued on `side` behind a long fill: read on `side`, the values
        # are the fill's.
        x.fill_(3.0)
        DOUBLE(inputs=[x], grid=(x.numel(), 1, 1), threadgroup=(256, 1, 1), out=[out])
    side.synchronize()
    assert bool((out == 6.0).all())
