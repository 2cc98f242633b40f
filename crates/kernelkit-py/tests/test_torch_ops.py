"""kernelkit kernels as PyTorch operators (issue 17): ``kernelkit.torch.
custom_op`` traced by ``torch.compile(fullgraph=True)`` without a graph break,
kept as one node by ``torch.export``, differentiated through a backward
given as another kernelkit kernel (``gradcheck`` on MLX's grid_sample pair)
or any Python function, and captured by ``torch.cuda.graph`` (GPU only:
as an operator, and as a plain call with ``output_shapes``).
CPU tensors run on kernelkit's CPU device. Skipped, with the reason, where
torch is not installed (the GPU machine has it)."""

import itertools

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed here (the GPU machine has it)")

import kernelkit as kk  # noqa: E402
import kernelkit.torch as kkt  # noqa: E402
import grid_sample_pair as _grid_sample  # noqa: E402

CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="torch sees no CUDA device")
DEVICES = [pytest.param("cpu", id="cpu"), pytest.param("cuda", id="cuda", marks=CUDA)]

_names = itertools.count()


def fresh(stem):
    """A namespace of its own per registration (operators are global)."""
    return f"kktest{next(_names)}::{stem}"


SCALE = kk.metal_kernel(
    name="tt_scale",
    input_names=["x"],
    output_names=["y"],
    source="uint i = thread_position_in_grid.x; y[i] = x[i] * T(S);",
)
SQUARE_SUM = kk.metal_kernel(
    name="tt_square_sum",
    input_names=["a", "b"],
    output_names=["sq", "sum"],
    source="uint i = thread_position_in_grid.x; sq[i] = a[i] * a[i]; sum[i] = a[i] + b[i];",
)


def scale_op(factor=3, backward=None):
    return kkt.custom_op(
        fresh("scale"),
        SCALE,
        template=lambda x: {"T": x.dtype, "S": factor},
        grid=lambda x: (x.numel(), 1, 1),
        output_shapes=lambda x: [x.shape],
        output_dtypes=lambda x: [x.dtype],
        backward=backward,
    )


def square_sum_op():
    return kkt.custom_op(
        fresh("square_sum"),
        SQUARE_SUM,
        template=lambda a, b: [("T", a.dtype)],
        grid=lambda a, b: (a.numel(), 1, 1),
        output_shapes=lambda a, b: [a.shape, a.shape],
        output_dtypes=lambda a, b: [a.dtype, a.dtype],
    )


@pytest.mark.parametrize("device", DEVICES)
def test_a_custom_op_runs_eagerly(device):
    op = scale_op()
    x = torch.arange(10, dtype=torch.float32, device=device)
    y = op(x)
    assert y.device == x.device and y.dtype == x.dtype
    assert torch.equal(y, x * 3)
    sq, s = square_sum_op()(x, x + 1)
    assert torch.equal(sq, x * x) and torch.equal(s, 2 * x + 1)


@pytest.mark.parametrize("device", DEVICES)
def test_two_ops_compile_with_no_graph_break_and_match_eager(device):
    scale, square_sum = scale_op(2), square_sum_op()

    def block(x, y):
        h = torch.relu(x) + 1
        sq, s = square_sum(scale(h), y)
        return torch.tanh(sq) * s.sum()

    x = torch.randn(64, 32, device=device)
    y = torch.randn(64, 32, device=device)
    explained = torch._dynamo.explain(block)(x, y)
    assert explained.graph_break_count == 0, explained.break_reasons
    assert explained.graph_count == 1
    compiled = torch.compile(block, fullgraph=True)
    torch.testing.assert_close(compiled(x, y), block(x, y))


@pytest.mark.parametrize("device", DEVICES)
def test_export_keeps_the_op_as_one_node(device):
    scale = scale_op(5)

    class Block(torch.nn.Module):
        def forward(self, x):
            return scale(x) + 1

    x = torch.randn(8, 4, device=device)
    exported = torch.export.export(Block(), (x,))
    targets = [n.target for n in exported.graph.nodes if n.op == "call_function"]
    ours = [t for t in targets if t is scale.op._opoverload]
    assert len(ours) == 1, targets
    torch.testing.assert_close(exported.module()(x), x * 5 + 1)


@pytest.mark.parametrize("device", DEVICES)
def test_a_python_backward_is_used_by_autograd(device):
    calls = []

    def backward(inputs, outputs, grads):
        calls.append(len(grads))
        return (grads[0] * 4,)

    op = scale_op(4, backward=backward)
    x = torch.randn(16, device=device, requires_grad=True)
    (op(x) * torch.arange(16, device=device)).sum().backward()
    torch.testing.assert_close(x.grad, 4 * torch.arange(16, device=device, dtype=x.dtype))
    assert calls == [1]


@pytest.mark.parametrize("device", DEVICES)
def test_grid_sample_pair_matches_torch_and_passes_gradcheck(device):
    sample, _ = _grid_sample.torch_ops(fresh("gs").split("::")[0])
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(2, 5, 6, 3, dtype=torch.float64, generator=gen).to(device)
    g = (torch.rand(2, 4, 3, 2, dtype=torch.float64, generator=gen) * 2.4 - 1.2).to(device)

    def reference(x, g):
        nchw = x.permute(0, 3, 1, 2)
        out = torch.nn.functional.grid_sample(nchw, g, mode="bilinear", padding_mode="zeros", align_corners=False)
        return out.permute(0, 2, 3, 1)

    torch.testing.assert_close(sample(x, g), reference(x, g))
    w = torch.randn(2, 4, 3, 3, dtype=torch.float64, generator=gen).to(device)
    ours = [t.clone().requires_grad_() for t in (x, g)]
    theirs = [t.clone().requires_grad_() for t in (x, g)]
    (sample(*ours) * w).sum().backward()
    (reference(*theirs) * w).sum().backward()
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a.grad, b.grad)
    assert torch.autograd.gradcheck(sample, tuple(t.detach().requires_grad_() for t in (x, g)))


def test_double_backward_is_refused():
    sample, _ = _grid_sample.torch_ops(fresh("gs2").split("::")[0])
    x = torch.randn(1, 3, 3, 2, dtype=torch.float64, requires_grad=True)
    g = (torch.rand(1, 2, 2, 2, dtype=torch.float64) - 0.5).requires_grad_()
    (gx,) = torch.autograd.grad(sample(x, g).sum(), x, create_graph=True)
    with pytest.raises(RuntimeError, match="no autograd formula"):
        torch.autograd.grad(gx.sum(), g)


def test_registration_and_call_errors_name_the_op():
    with pytest.raises(ValueError, match="namespace"):
        kkt.custom_op("no_namespace", SCALE, grid=(1, 1, 1), output_shapes=[(1,)], output_dtypes=[torch.float32])
    op = scale_op()
    with pytest.raises(TypeError, match="expected 1 tensor"):
        op(torch.ones(2), torch.ones(2))
    bad = scale_op(backward=lambda inputs, outputs, grads: (grads[0], grads[0]))
    with pytest.raises(ValueError, match="2 gradient"):
        bad(torch.ones(3, requires_grad=True)).sum().backward()


@CUDA
def test_cuda_graph_capture_replays_with_new_inputs():
    scale, square_sum = scale_op(2), square_sum_op()
    static_x = torch.zeros(4096, device="cuda")
    static_y = torch.zeros(4096, device="cuda")

    def step(x, y):
        sq, s = square_sum(scale(x), y)
        return sq + s

    # Warm-up on a side stream, as torch.cuda.graph's documentation asks:
    # compiles and loads the variants before the capture.
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        step(static_x, static_y)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_out = step(static_x, static_y)
    for i in range(1000):
        static_x.copy_(torch.full_like(static_x, float(i % 13)))
        static_y.copy_(torch.arange(4096, device="cuda", dtype=torch.float32) * (i % 7))
        graph.replay()
        want = (2 * static_x) ** 2 + 2 * static_x + static_y
        torch.testing.assert_close(static_out, want)


@CUDA
def test_a_plain_call_with_output_shapes_is_captured_with_a_strided_input():
    # Not an operator: a kernel called on torch tensors with output_shapes.
    # Under torch.cuda.graph its output comes from torch.empty (torch's
    # graph pool) and its strided input is copied by kernelkit into a graph
    # allocation that the graph frees itself; the copy kernel and the
    # variant are loaded by the warm-up.
    x = torch.zeros(64, 32, device="cuda")

    def step(x):
        (y,) = SCALE(
            inputs=[x.t()],
            template=[("T", x.dtype), ("S", 2)],
            grid=(x.numel(), 1, 1),
            threadgroup=(256, 1, 1),
            output_shapes=[(32, 64)],
            output_dtypes=[x.dtype],
        )
        return y

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        step(x)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_y = step(x)
    for i in range(100):
        x.copy_(torch.arange(64 * 32, device="cuda", dtype=torch.float32).reshape(64, 32) * (i % 5))
        graph.replay()
        torch.testing.assert_close(static_y, 2 * x.t())


@CUDA
def test_a_cold_variant_under_capture_is_an_error_and_the_capture_survives():
    scale = scale_op(7)
    warm = torch.ones(256, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        scale(warm)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    cold = torch.ones(256, device="cuda", dtype=torch.float16)  # another variant
    with torch.cuda.graph(graph):
        with pytest.raises(kk.CallError, match="compile it before capture"):
            scale(cold)
        out = scale(warm)
    graph.replay()
    torch.testing.assert_close(out, warm * 7)


@CUDA
def test_reduce_overhead_mode_compiles_and_matches():
    scale, square_sum = scale_op(3), square_sum_op()

    def block(x, y):
        sq, s = square_sum(scale(x), y)
        return sq - s

    x = torch.randn(1024, device="cuda")
    y = torch.randn(1024, device="cuda")
    compiled = torch.compile(block, mode="reduce-overhead", fullgraph=True)
    for _ in range(3):
        got = compiled(x, y)
    torch.testing.assert_close(got, block(x, y))


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck_passes(device):
    # torch's own checker of custom ops: schema, fake implementation against
    # the real one, autograd registration, tracing.
    scale = scale_op(2, backward=lambda inputs, outputs, grads: (grads[0] * 2,))
    x = torch.randn(32, device=device, requires_grad=True)
    torch.library.opcheck(scale.op, (x,))
    sample, vjp = _grid_sample.torch_ops(fresh("gs3").split("::")[0])
    x = torch.randn(1, 4, 5, 2, dtype=torch.float64, device=device, requires_grad=True)
    g = (torch.rand(1, 3, 3, 2, dtype=torch.float64, device=device) - 0.5).requires_grad_()
    torch.library.opcheck(sample.op, (x, g))
    cot = torch.randn(1, 3, 3, 2, dtype=torch.float64, device=device)
    torch.library.opcheck(vjp.op, (x.detach(), g.detach(), cot))


@pytest.mark.parametrize("device", DEVICES)
def test_a_tuned_kernel_is_a_custom_op_that_compiles_without_a_graph_break(device):
    tuned = kk.autotune(SCALE, configs=[{"threadgroup": (tg, 1, 1)} for tg in (32, 128, 256)])
    op = kkt.custom_op(
        fresh("tuned_scale"),
        tuned,
        template=lambda x: {"T": x.dtype, "S": 5},
        grid=lambda x: (x.numel(), 1, 1),
        output_shapes=lambda x: [x.shape],
        output_dtypes=lambda x: [x.dtype],
    )
    x = torch.arange(1000, dtype=torch.float32, device=device)
    assert torch.equal(op(x), x * 5)
    compiled = torch.compile(lambda t: op(t) + 1, fullgraph=True)
    assert torch.equal(compiled(x), x * 5 + 1)
    assert kk.cache_stats(device)["tunes"] >= 1


@pytest.mark.parametrize("device", DEVICES)
def test_a_warm_tuned_call_on_tensors_takes_the_untuned_calls_route(device):
    from kernelkit import _testing

    k = kk.metal_kernel(
        name="tt_tuned_route",
        input_names=["x"],
        output_names=["y"],
        source=f"// {next(_names)}\nuint i = thread_position_in_grid.x; if (i < x_shape[0]) y[i] = x[i] * T(S);",
    )
    tuned = kk.autotune(k, configs=[{"threadgroup": (tg, 1, 1)} for tg in (32, 128)])
    x = torch.arange(1000, dtype=torch.float32, device=device)
    y = torch.empty_like(x)
    call = dict(inputs=[x], grid=(1000, 1, 1), template={"T": torch.float32, "S": 2}, out=[y])
    assert tuned(**call)[0] is y
    assert torch.equal(y, x * 2)
    config = tuned.best(**call)

    def untuned():
        return k(inputs=[x], grid=(1000, 1, 1), threadgroup=config["threadgroup"],
                 template={"T": torch.float32, "S": 2}, out=[y])

    untuned()

    def routes(f):
        before = _testing.call_routes()
        for _ in range(3):
            f()
        after = _testing.call_routes()
        return {r: after[r] - before[r] for r in after}

    warm = kk.cache_stats(device)["tune_launches"]
    plain = routes(untuned)
    got = routes(lambda: tuned(**call))
    assert got == plain, (got, plain)
    assert got["parsed"] == 0
    if device == "cuda":
        assert got["repeat"] == 3, got
    assert kk.cache_stats(device)["tune_launches"] == warm
    assert torch.equal(y, x * 2)
