"""Donation and every call spelling with real torch tensors (issue 42):
the output is the input tensor itself, its version counter bumped as
torch's in-place ops bump it; ``kernelkit.torch.custom_op(donate=...)``
declares the mutation (``torch.compile`` sees it); a donated call is
captured by ``torch.cuda.graph``; every warm spelling on the GPU takes the
one-pass route. Skipped, with the reason, where torch is not installed
(the GPU machine has it)."""

import itertools
import sys

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed here (the GPU machine has it)")

import kernelkit as kk  # noqa: E402
import kernelkit.torch as kkt  # noqa: E402
from kernelkit import _testing  # noqa: E402

CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="torch sees no CUDA device")
DEVICES = [pytest.param("cpu", id="cpu"), pytest.param("cuda", id="cuda", marks=CUDA)]
_names = itertools.count()

ADD_ONE = kk.metal_kernel(
    name="td_add_one",
    input_names=["x"],
    output_names=["y"],
    source="uint i = thread_position_in_grid.x; y[i] = x[i] + 1;",
)


def call(x, **kw):
    return ADD_ONE(inputs=[x], grid=(x.numel(), 1, 1), threadgroup=(256, 1, 1), **kw)


@pytest.mark.parametrize("device", DEVICES)
def test_a_donated_tensor_is_written_in_place_and_its_version_bumped(device):
    x = torch.zeros(1000, device=device)
    ptr, version = x.data_ptr(), x._version
    (y,) = call(x, donate={"y": "x"})
    assert y is x and x.data_ptr() == ptr
    assert x._version > version
    torch.testing.assert_close(x.cpu(), torch.ones(1000))
    (y,) = call(x, out=[x], allow_overlap=True)
    assert y is x
    torch.testing.assert_close(x.cpu(), torch.full((1000,), 2.0))


@pytest.mark.parametrize("device", DEVICES)
def test_donation_errors(device):
    x = torch.zeros(64, device=device)
    with pytest.raises(kk.DonationError, match="cannot be input `x`'s buffer"):
        call(x, donate={"y": "x"}, output_shapes=[(32,)], output_dtypes=[torch.float32])
    t = torch.zeros(8, 8, device=device).t()
    with pytest.raises(kk.DonationError, match="would copy it"):
        ADD_ONE(inputs=[t], grid=(64, 1, 1), threadgroup=(64, 1, 1), donate={"y": "x"})
    leaf = torch.zeros(64, device=device, requires_grad=True)
    # A leaf that requires grad cannot be written in place (as torch's own
    # in-place ops refuse it).
    with pytest.raises((kk.KernelError, RuntimeError)):
        call(leaf, donate={"y": "x"})


@CUDA
def test_every_warm_spelling_takes_the_one_pass_route():
    x = torch.zeros(65536, device="cuda")
    y = torch.empty_like(x)
    n = x.numel()
    spellings = [
        lambda: dict(grid=(n, 1, 1), threadgroup=(256, 1, 1), out=[y]),
        lambda: dict(grid=(int(str(n)), 1, 1), threadgroup=[256, 1, 1], out=[y],
                     output_shapes=[x.shape], output_dtypes=[torch.float32]),
        lambda: dict(grid=(n, 1, 1), threadgroup=(256, 1, 1), out=[y],
                     output_shapes=[tuple(x.shape)], output_dtypes=["float32"]),
        lambda: dict(grid=(n, 1, 1), threadgroup=(256, 1, 1), out=[y], stream=torch.cuda.current_stream()),
        lambda: dict(grid=(n, 1, 1), threadgroup=(256, 1, 1), donate={"y": "x"}),
    ]
    for spelled in spellings:
        ADD_ONE(inputs=[x], **spelled())
        before = _testing.call_routes()
        for _ in range(3):
            ADD_ONE(inputs=[x], **spelled())
        after = _testing.call_routes()
        assert after["repeat"] - before["repeat"] == 3, spelled()
        assert after["parsed"] == before["parsed"]
        if sys.version_info >= (3, 12):
            assert after["entry"] - before["entry"] == 3


@pytest.mark.parametrize("device", DEVICES)
def test_custom_op_declares_the_donated_input_mutated(device):
    op = kkt.custom_op(f"kkdon{next(_names)}::add_one", ADD_ONE, grid=lambda x: (x.numel(), 1, 1),
                       donate={"y": "x"})
    assert op._schema() == "(Tensor(a!) x) -> ()"
    x = torch.zeros(256, device=device)
    v = x._version
    assert op(x) is x and x._version > v
    torch.testing.assert_close(x.cpu(), torch.ones(256))

    def step(t):
        op(t)
        return t * 2

    compiled = torch.compile(step, fullgraph=True)
    z = torch.zeros(256, device=device)
    torch.testing.assert_close(compiled(z).cpu(), torch.full((256,), 2.0))
    torch.testing.assert_close(z.cpu(), torch.ones(256))


@CUDA
def test_a_donated_call_is_captured_by_a_cuda_graph():
    x = torch.zeros(4096, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        call(x, donate={"y": "x"})  # warm-up: compiles before the capture
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        call(x, donate={"y": "x"})
    x.zero_()
    for _ in range(5):
        graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(x, torch.full_like(x, 5.0))
