"""PyTorch tensors (issue 16, items 3 and 4): read in place through
``data_ptr()``/``stride()``, outputs from ``torch.empty`` on the inputs'
device (torch in, torch out), ``out=`` written in place, calls on torch's
current stream of the tensors' device. CPU tensors run on kernelkit's CPU
device; CUDA tensors where a GPU is present. Skipped, with the reason,
where torch is not installed (the H200 machine has it)."""

import threading

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed here (the GPU machine has it)")

import kernelkit as kk  # noqa: E402

DEVICES = [
    pytest.param("cpu", id="cpu"),
    pytest.param(
        "cuda",
        id="cuda",
        marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="torch sees no CUDA device"),
    ),
]

ADDR = kk.metal_kernel(
    name="torch_addresses",
    input_names=["inp"],
    output_names=["out", "where"],
    source="""
        uint i = thread_position_in_grid.x;
        out[i] = inp[i] * 2;
        if (i == 0) {
            where[0] = reinterpret_cast<uint64_t>(inp);
            where[1] = reinterpret_cast<uint64_t>(out);
        }
    """,
)

STRIDED = kk.metal_kernel(
    name="torch_strided",
    input_names=["inp"],
    output_names=["out"],
    ensure_row_contiguous=False,
    source="""
        uint i = thread_position_in_grid.x;
        uint rest = i;
        int64_t at = 0;
        for (int d = inp_ndim - 1; d >= 0; --d) {
            at += int64_t(rest % inp_shape[d]) * inp_strides[d];
            rest /= inp_shape[d];
        }
        out[i] = inp[at];
    """,
)


def call(x, like=None, **kw):
    # `like`: the tensor behind a wrapper that has only the protocols.
    t = x if like is None else like
    n = t.numel()
    args = dict(inputs=[x], grid=(n, 1, 1), threadgroup=(min(n, 256), 1, 1))
    if "out" not in kw:
        args.update(output_shapes=[t.shape, (2,)], output_dtypes=[t.dtype, torch.int64])
    args.update(kw)
    return ADDR(**args)


@pytest.mark.parametrize("device", DEVICES)
def test_torch_in_torch_out_in_place(device):
    x = torch.arange(1024, dtype=torch.float32, device=device)
    out, where = call(x)
    assert isinstance(out, torch.Tensor) and out.device == x.device and out.dtype == x.dtype
    assert out.shape == x.shape and out.is_contiguous()
    torch.testing.assert_close(out, x * 2)
    # The kernel was handed the tensors' own memory.
    assert int(where[0]) == x.data_ptr() and int(where[1]) == out.data_ptr()
    # `out` (x's dtype: made by x.new_empty) and `where` (int64: torch.empty)
    # are new tensors of their own.
    assert out.data_ptr() != x.data_ptr() and where.dtype == torch.int64
    assert where.device == x.device


@pytest.mark.parametrize("device", DEVICES)
def test_outputs_like_an_input_that_requires_grad_do_not(device):
    x = torch.arange(64, dtype=torch.float32, device=device, requires_grad=True)
    out, _ = call(x)
    assert not out.requires_grad and out.dtype == x.dtype and out.device == x.device
    torch.testing.assert_close(out, x.detach() * 2)


@pytest.mark.parametrize("device", DEVICES)
def test_outputs_shaped_like_an_input_have_row_major_strides(device):
    # Outputs of an input's shape and dtype come from torch.empty_like only
    # when that input's strides are row-major; else new_empty: row-major
    # strides either way, as kernelkit describes the outputs it makes.
    copy = kk.metal_kernel(name="torch_like_copy", input_names=["inp"], output_names=["out"],
                           source="uint i = thread_position_in_grid.x; out[i] = inp[i];")
    base = torch.arange(64, dtype=torch.float32, device=device)
    row_major = base.reshape(8, 8)
    transposed = base.reshape(8, 8).t()
    odd_unit_stride = base.reshape(64, 1).as_strided((64, 1), (1, 5))
    for t, strides in ((row_major, (8, 1)), (transposed, (8, 1)), (odd_unit_stride, (1, 1))):
        (y,) = copy(inputs=[t], grid=(64, 1, 1), threadgroup=(64, 1, 1),
                    output_shapes=[t.shape], output_dtypes=[t.dtype])
        assert y.shape == t.shape and tuple(y.stride()) == strides
        assert y.data_ptr() != t.data_ptr()
        torch.testing.assert_close(y, t.contiguous())


@pytest.mark.parametrize("device", DEVICES)
def test_out_tensors_are_written_in_place(device):
    x = torch.arange(64, dtype=torch.float32, device=device)
    buf = torch.full_like(x, -1)
    where = torch.zeros(2, dtype=torch.int64, device=device)
    result = call(x, out=[buf, where])
    assert result[0] is buf and result[1] is where
    torch.testing.assert_close(buf, x * 2)
    assert int(where[1]) == buf.data_ptr()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64", "int8", "int32", "int64", "uint8", "bool"])
def test_torch_dtypes(device, dtype):
    copy = kk.metal_kernel(name="torch_copy", input_names=["inp"], output_names=["out"],
                           source="uint i = thread_position_in_grid.x; out[i] = inp[i];")
    x = (torch.arange(32, device=device) % 7).to(getattr(torch, dtype))
    (y,) = copy(inputs=[x], grid=(32, 1, 1), threadgroup=(32, 1, 1), output_shapes=[x.shape], output_dtypes=[x.dtype])
    assert y.dtype == x.dtype
    assert torch.equal(y, x)


@pytest.mark.parametrize("device", DEVICES)
def test_strided_tensors_follow_ensure_row_contiguous(device):
    base = torch.arange(60, dtype=torch.float32, device=device).reshape(3, 4, 5)
    for x in (base.transpose(0, 2), base[:, 1:3, ::2], base.expand(2, 3, 4, 5)[1]):
        (y,) = STRIDED(inputs=[x], grid=(x.numel(), 1, 1), threadgroup=(32, 1, 1),
                       output_shapes=[x.shape], output_dtypes=[x.dtype])
        torch.testing.assert_close(y, x.contiguous())
        out, _ = call(x)
        torch.testing.assert_close(out, x.contiguous() * 2)


@pytest.mark.parametrize("device", DEVICES)
def test_python_scalars_are_0d_inputs(device):
    k = kk.metal_kernel(name="torch_scale", input_names=["x", "s"], output_names=["y"],
                        source="uint i = thread_position_in_grid.x; y[i] = x[i] * s;")
    x = torch.ones(16, device=device)
    (y,) = k(inputs=[x, 3.0], grid=(16, 1, 1), threadgroup=(16, 1, 1), output_shapes=[x.shape], output_dtypes=[x.dtype])
    torch.testing.assert_close(y, x * 3)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="torch sees no CUDA device")
def test_runs_on_torchs_current_stream_without_dlpack(monkeypatch):
    # The hot path reads tensors through their methods: a DLPack export
    # would fail here.
    def no_dlpack(*a, **k):
        raise AssertionError("torch tensors must not go through DLPack")

    monkeypatch.setattr(torch.Tensor, "__dlpack__", no_dlpack)
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        # Written on `side` and read there by the kernel without a
        # synchronize in between: only stream order makes it right.
        x = torch.full((1 << 20,), 3.0, device="cuda")
        out, _ = call(x)
        y = out + 1
    side.synchronize()
    torch.testing.assert_close(y, torch.full_like(x, 7.0))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="torch sees no CUDA device")
def test_stream_argument_overrides_the_current_stream():
    x = torch.arange(256, dtype=torch.float32, device="cuda")
    for stream in (kk.new_stream("cuda"), torch.cuda.Stream()):
        out, _ = call(x, stream=stream)
        torch.cuda.synchronize()
        torch.testing.assert_close(out, x * 2)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="torch sees no CUDA device")
def test_dlpack_general_path_on_the_gpu():
    class DlpackOnly:
        def __init__(self, t):
            self.t = t
            self.asked = []

        def __dlpack__(self, **kw):
            self.asked.append(kw)
            return self.t.__dlpack__(**kw)

        def __dlpack_device__(self):
            return self.t.__dlpack_device__()

    x = torch.arange(1024, dtype=torch.float32, device="cuda")
    wrapped = DlpackOnly(x)
    out, where = call(wrapped, like=x)
    # The consumer's stream was named (never 0).
    assert wrapped.asked and wrapped.asked[0].get("stream") not in (None, 0)
    assert isinstance(out, kk.Array) and out.device == "cuda:0"
    # Exported to torch through DLPack (the legacy default stream waits
    # for kernelkit's with an event).
    y = torch.from_dlpack(out)
    torch.testing.assert_close(y, x * 2)
    assert int(torch.from_dlpack(where)[0].item()) == x.data_ptr()
    # The CUDA array interface points at the same memory.
    iface = out.__cuda_array_interface__
    assert iface["data"][0] == y.data_ptr() and iface["shape"] == (1024,) and iface["typestr"] == "<f4"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="torch sees no CUDA device")
def test_seed_reproduction_with_torch_tensors():
    k_by_thread = [
        kk.metal_kernel(name="torch_seed", input_names=["inp"], output_names=["out"],
                        source=f"uint i = thread_position_in_grid.x; out[i] = inp[i] + {i}.0f;")
        for i in range(16)
    ]
    before = kk.cache_stats("cuda")
    for _ in range(5):
        barrier = threading.Barrier(16)
        results, errors = [None] * 16, []

        def worker(i):
            try:
                stream = kk.new_stream("cuda")
                value = torch.zeros(1, device="cuda")
                barrier.wait()
                (r,) = k_by_thread[i](inputs=[value], grid=(1, 1, 1), threadgroup=(1, 1, 1),
                                      output_shapes=[value.shape], output_dtypes=[value.dtype], stream=stream)
                results[i] = r.item()
            except BaseException as e:  # noqa: BLE001
                errors.append((i, repr(e)))

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        assert results == [float(i) for i in range(16)]
    assert kk.cache_stats("cuda")["compiles"] - before["compiles"] == 16


requires_torch_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="torch sees no CUDA device")

SCALE = kk.cuda_kernel(
    name="torch_rebound_scale",
    input_names=["x", "y"],
    output_names=["out"],
    source="""
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        out[i] = x[i] * 2.0f + y[i];
    """,
)


def scale(x, y, **kw):
    n = x.numel()
    if "out" not in kw:
        kw.update(output_shapes=[x.shape], output_dtypes=[x.dtype])
    return SCALE(inputs=[x, y], grid=(n, 1, 1), threadgroup=(min(n, 256), 1, 1), **kw)[0]


@requires_torch_cuda
def test_repeated_layouts_run_prepared_launches_on_new_tensors():
    # A warm torch call launches what the first call of its layout
    # prepared, with the addresses of the tensors it is given now.
    before = SCALE._rebound_launches
    for n in (256, 256, 512, 256, 512):
        x = torch.randn(n, device="cuda")
        y = torch.randn(n, device="cuda")
        out = torch.empty_like(x)
        assert scale(x, y, out=[out]) is out
        fresh = scale(x, y)
        torch.testing.assert_close(out, x * 2 + y)
        torch.testing.assert_close(fresh, x * 2 + y)
    # Two layouts (256, 512), each for out= and for new outputs (whose
    # layout is the same): two launches kept.
    assert SCALE._rebound_launches - before == 2


@requires_torch_cuda
def test_parameters_take_the_prepared_launches_too():
    # torch treats nn.Parameter as a plain tensor; so does the torch path.
    k = kk.cuda_kernel(
        name="torch_parameter_axpy",
        input_names=["w", "b"],
        output_names=["out"],
        source="int i = blockIdx.x * blockDim.x + threadIdx.x; out[i] = w[i] * 2.0f + b[i];",
    )
    w = torch.nn.Parameter(torch.randn(256, device="cuda"))
    b = torch.nn.Parameter(torch.randn(256, device="cuda"))
    out = torch.empty(256, device="cuda")
    for _ in range(3):
        assert k(inputs=[w, b], grid=(256, 1, 1), threadgroup=(256, 1, 1), out=[out])[0] is out
        (fresh,) = k(inputs=[w, b], grid=(256, 1, 1), threadgroup=(256, 1, 1),
                     output_shapes=[(256,)], output_dtypes=[torch.float32])
        with torch.no_grad():
            w.mul_(0.5)  # in place: read again by the next call
    assert k._rebound_launches == 1
    assert type(fresh) is torch.Tensor and not fresh.requires_grad
    with torch.no_grad():
        torch.testing.assert_close(fresh, w * 4 + b)  # w was halved after this call
        torch.testing.assert_close(out, w * 4 + b)


@requires_torch_cuda
def test_a_tensor_changed_in_place_is_read_again():
    x, y = torch.ones(256, device="cuda"), torch.zeros(256, device="cuda")
    out = torch.empty(256, device="cuda")
    scale(x, y, out=[out])
    # The same objects, new storage and values: the call reads them again.
    x.set_(torch.full((256,), 3.0, device="cuda"))
    y.set_(torch.full((256,), 1.0, device="cuda"))
    scale(x, y, out=[out])
    torch.testing.assert_close(out, torch.full((256,), 7.0, device="cuda"))
    # A new shape in place: another layout, not the prepared one.
    x.resize_(128).fill_(1.0)
    y.resize_(128).fill_(0.5)
    small = scale(x, y)
    torch.testing.assert_close(small, torch.full((128,), 2.5, device="cuda"))


@requires_torch_cuda
def test_prepared_launches_keep_the_calls_checks():
    x, y = torch.ones(256, device="cuda"), torch.ones(256, device="cuda")
    out = torch.empty(256, device="cuda")
    scale(x, y, out=[out])
    scale(x, y, out=[out])
    with pytest.raises(kk.CallError, match="shares memory with input `x`"):
        scale(x, y, out=[x])
    with pytest.raises(kk.CallError, match="shares memory with input `y`"):
        scale(x, y, out=[y])
    # Non-contiguous inputs are copied (the general path), as before.
    wide = torch.arange(512, dtype=torch.float32, device="cuda")
    odd = wide[::2]
    torch.testing.assert_close(scale(odd, y), odd * 2 + y)
    # Another stream: another layout, run there.
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        z = scale(x, y)
    side.synchronize()
    torch.testing.assert_close(z, x * 2 + y)


@requires_torch_cuda
def test_threads_with_many_layouts_share_one_kernel():
    # More layouts than are kept, from 16 threads at once, over and over:
    # every result right.
    barrier = threading.Barrier(16)
    errors = []

    def work(t):
        try:
            barrier.wait()
            for r in range(30):
                n = 64 * (1 + (t + r) % 8)
                x = torch.full((n,), float(t), device="cuda")
                y = torch.full((n,), float(r), device="cuda")
                got = scale(x, y)
                torch.cuda.current_stream().synchronize()
                if not torch.equal(got, x * 2 + y):
                    errors.append((t, r, n))
        except Exception as e:  # noqa: BLE001
            errors.append(repr(e))

    threads = [threading.Thread(target=work, args=(t,)) for t in range(16)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
