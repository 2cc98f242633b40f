"""torch tensors that are not plain memory: every kind of view torch makes,
compared with torch's own result; lazily conjugated and negated views
(resolved as inputs, refused as outputs); tensors whose storage holds no
data; devices other than the CPU and CUDA; subclasses; and autograd's
version counter of tensors written through ``out=``. CPU tensors run here;
CUDA ones where torch sees a GPU. Skipped, with the reason, where torch is
not installed (CI: the stand-in torch tests cover the package without it)."""

import subprocess
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed here (the GPU machine has it)")

import kernelkit as kk  # noqa: E402
import kernelkit._testing  # noqa: E402,F401  (the test hooks, as kk._testing)

DEVICES = [
    pytest.param("cpu", id="cpu"),
    pytest.param(
        "cuda",
        id="cuda",
        marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="torch sees no CUDA device"),
    ),
]

# A copy that follows the input's strides (views are read in place) and
# writes a row-contiguous output; the grid may be larger than the tensor.
STRIDED_COPY = kk.metal_kernel(
    name="views_strided_copy",
    input_names=["inp"],
    output_names=["out"],
    ensure_row_contiguous=False,
    source="""
        uint i = thread_position_in_grid.x;
        int64_t total = 1;
        for (int d = 0; d < inp_ndim; ++d) total *= inp_shape[d];
        if (int64_t(i) >= total) return;
        uint rest = i;
        int64_t at = 0;
        for (int d = inp_ndim - 1; d >= 0; --d) {
            at += int64_t(rest % inp_shape[d]) * inp_strides[d];
            rest /= inp_shape[d];
        }
        out[i] = inp[at];
    """,
)

# The same copy with MLX's default: inputs made row-contiguous first.
COPY = kk.metal_kernel(
    name="views_copy",
    input_names=["inp"],
    output_names=["out"],
    source="""
        uint i = thread_position_in_grid.x;
        if (i < N) out[i] = inp[i];
    """,
)


# 0-d inputs are scalars in a kernel's body.
SCALAR_COPY = kk.metal_kernel(
    name="views_scalar_copy",
    input_names=["inp"],
    output_names=["out"],
    source="out[0] = inp;",
)


def views(device):
    """(name, view) for every kind of view torch makes."""
    base = torch.arange(60, dtype=torch.float32, device=device).reshape(3, 4, 5)
    flat = torch.arange(40, dtype=torch.float32, device=device)
    c = torch.complex(
        torch.arange(12, dtype=torch.float32, device=device),
        torch.arange(12, dtype=torch.float32, device=device) * -0.5 + 1,
    ).reshape(3, 4)
    return [
        ("contiguous", base),
        ("slice", base[1:, ::2, 1:4]),
        ("step", flat[3::3]),
        ("t", base[0].t()),
        ("transpose", base.transpose(0, 2)),
        ("permute", base.permute(2, 0, 1)),
        ("expand", flat[:5].expand(4, 5)),
        ("broadcast_0_stride", torch.tensor([7.0], device=device).expand(6)),
        ("as_strided", flat.as_strided((3, 4), (7, 2), 5)),
        ("storage_offset", flat[7:19]),
        ("diagonal", base[0, :, :4].diagonal()),
        ("0-d", base[1, 2, 3]),
        ("0-d_scalar", torch.tensor(4.5, device=device)),
        ("zero_size", base[:, :0]),
        ("zero_size_offset", flat[10:10]),
        ("unfold", flat.unfold(0, 4, 3)),
        ("complex", c),
        ("complex_t", c.t()),
        ("conj", c.conj()),
        ("conj_slice", c.conj()[1:, ::2]),
        ("mH", c.mH),
        ("adjoint", c.adjoint()),
        ("conj_imag_neg", c.conj().imag),
        ("conj_real", c.conj().real),
        ("imag", c.imag),
        ("neg_view", torch._neg_view(base[1])),
        ("neg_view_slice", torch._neg_view(flat)[2:9:2]),
    ]


CASES = [name for name, _ in views("cpu")]


def expected(view):
    return view.resolve_conj().resolve_neg().clone()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kernel", ["strided", "row_contiguous"])
@pytest.mark.parametrize("case", CASES)
def test_every_kind_of_view_gives_torchs_result(device, kernel, case):
    view = dict(views(device))[case]
    want = expected(view)
    n = view.numel()
    if view.dim() == 0:
        kw = dict(inputs=[view], grid=(1, 1, 1), threadgroup=(1, 1, 1), output_shapes=[(1,)],
                  output_dtypes=[view.dtype])
        for _ in range(2):
            (got,) = SCALAR_COPY(**kw)
            assert torch.equal(got.reshape(()), want) and torch.equal(view, want)
        return
    if n == 0:
        # A zero-size input is read (no element); kernelkit makes no
        # zero-size outputs, which is its typed error.
        fill = torch.full((1,), 3.0, device=device).to(view.dtype)
        for _ in range(2):
            (got,) = STRIDED_COPY(inputs=[view], grid=(1, 1, 1), threadgroup=(1, 1, 1), out=[fill])
            assert got is fill and fill.eq(3).all()
        with pytest.raises(kk.CallError, match="at least 1"):
            STRIDED_COPY(inputs=[view], grid=(1, 1, 1), threadgroup=(1, 1, 1),
                         out=[torch.empty(view.shape, dtype=view.dtype, device=device)])
        return
    else:
        args = dict(
            inputs=[view],
            grid=(n, 1, 1),
            threadgroup=(min(n, 64), 1, 1),
            output_shapes=[view.shape],
            output_dtypes=[view.dtype],
        )
    if kernel == "strided":
        (got,) = STRIDED_COPY(**args)
    else:
        (got,) = COPY(template=[("N", max(n, 1))], **args)
    assert isinstance(got, torch.Tensor) and got.shape == view.shape and got.dtype == view.dtype
    assert not got.is_conj() and not got.is_neg()
    assert torch.equal(got, want), f"{case}: {got} != {want}"
    # The input is left as it was (its bits too).
    assert torch.equal(view, want)
    # Twice: the second call may take the launch kept for the layout.
    (again,) = (STRIDED_COPY if kernel == "strided" else COPY)(
        **({} if kernel == "strided" else {"template": [("N", max(n, 1))]}), **args
    )
    assert torch.equal(again, want)


@pytest.mark.parametrize("device", DEVICES)
def test_out_into_views_writes_through_them(device):
    src = torch.arange(12, dtype=torch.float32, device=device)
    big = torch.zeros(40, dtype=torch.float32, device=device)
    out = big[7:19]  # row-contiguous, at a storage offset
    for _ in range(2):
        (got,) = COPY(inputs=[src], grid=(12, 1, 1), threadgroup=(12, 1, 1), template=[("N", 12)], out=[out])
        assert got is out
        assert torch.equal(big[7:19], src) and big[:7].eq(0).all() and big[19:].eq(0).all()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("make", ["conj", "mH", "adjoint", "neg"])
def test_conjugate_and_negative_views_are_refused_as_outputs(device, make):
    c = torch.zeros(4, 4, dtype=torch.complex64, device=device)
    src = torch.ones(4, 4, dtype=torch.complex64, device=device)
    if make == "neg":
        c = torch.zeros(4, 4, dtype=torch.float32, device=device)
        src = torch.ones(4, 4, dtype=torch.float32, device=device)
        out = torch._neg_view(c)
    else:
        out = {"conj": c.conj(), "mH": c.mH, "adjoint": c.adjoint()}[make]
    kw = dict(grid=(16, 1, 1), threadgroup=(16, 1, 1), template=[("N", 16)])
    for _ in range(2):
        with pytest.raises(kk.ArgumentTypeError, match="lazily (conjugated|negated) view"):
            COPY(inputs=[src], out=[out], **kw)
        assert c.eq(0).all(), "nothing was written"
    # The same tensor without the bit is written (and a kept launch for
    # its layout does not take the view afterwards).
    plain = c if make == "neg" else c
    COPY(inputs=[src], out=[plain], **kw)
    assert torch.equal(plain, src)
    with pytest.raises(kk.ArgumentTypeError, match="lazily"):
        COPY(inputs=[src], out=[out], **kw)


@pytest.mark.parametrize("device", DEVICES)
def test_a_storage_resized_to_zero_is_a_typed_error(device):
    x = torch.arange(8, dtype=torch.float32, device=device)
    (ok,) = COPY(inputs=[x[2:]], grid=(6, 1, 1), threadgroup=(6, 1, 1), template=[("N", 6)],
                 output_shapes=[(6,)], output_dtypes=[torch.float32])
    assert torch.equal(ok, x[2:])
    view = x[2:]
    x.untyped_storage().resize_(0)  # as FSDP frees a parameter
    with pytest.raises(kk.ArgumentTypeError, match="not in its storage"):
        COPY(inputs=[view], grid=(6, 1, 1), threadgroup=(6, 1, 1), template=[("N", 6)],
             output_shapes=[(6,)], output_dtypes=[torch.float32])
    out = torch.empty(8, device=device)
    out.untyped_storage().resize_(0)
    with pytest.raises(kk.ArgumentTypeError, match="not in its storage"):
        COPY(inputs=[torch.ones(8, device=device)], grid=(8, 1, 1), threadgroup=(8, 1, 1),
             template=[("N", 8)], out=[out])


def test_fake_tensors_are_refused_by_type():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        fake = torch.empty(8)
    with pytest.raises(kk.ArgumentTypeError, match="FakeTensor"):
        COPY(inputs=[fake], grid=(8, 1, 1), threadgroup=(8, 1, 1), template=[("N", 8)],
             output_shapes=[(8,)], output_dtypes=[torch.float32])


def test_meta_tensors_are_refused_naming_the_device():
    meta = torch.empty(8, device="meta")
    with pytest.raises(kk.ArgumentTypeError, match="meta"):
        COPY(inputs=[meta], grid=(8, 1, 1), threadgroup=(8, 1, 1), template=[("N", 8)],
             output_shapes=[(8,)], output_dtypes=[torch.float32])


class OtherDevice(torch.Tensor):
    """A CPU tensor that says it lives on another device with an index, as
    an `mps:0`, `xpu:0` or privateuse1 tensor does."""

    @property
    def device(self):
        return torch.device("xpu", 0)

    def get_device(self):
        return 0


def test_devices_other_than_cpu_and_cuda_are_a_typed_error():
    # The methods' read (torch's C functions read the CPU tensor beneath).
    shim = kk._testing.torch_shim()
    kk._testing.torch_shim(False)
    try:
        t = torch.ones(8).as_subclass(OtherDevice)
        with pytest.raises(kk.ArgumentTypeError, match="xpu:0"):
            COPY(inputs=[t], grid=(8, 1, 1), threadgroup=(8, 1, 1), template=[("N", 8)],
                 output_shapes=[(8,)], output_dtypes=[torch.float32])
    finally:
        kk._testing.torch_shim(shim)


def test_a_subclass_seen_before_any_plain_tensor_is_a_torch_tensor():
    # A fresh interpreter: kernelkit has seen no tensor yet.
    script = textwrap.dedent(
        """
        import torch, kernelkit as kk

        class Mine(torch.Tensor):
            pass

        k = kk.metal_kernel(name="first_subclass", input_names=["inp"], output_names=["out"],
                            source="uint i = thread_position_in_grid.x; out[i] = inp[i] + 1;")
        x = torch.arange(8, dtype=torch.float32).as_subclass(Mine)
        kw = dict(grid=(8, 1, 1), threadgroup=(8, 1, 1), output_shapes=[(8,)], output_dtypes=[torch.float32])
        (first,) = k(inputs=[x], **kw)
        (plain,) = k(inputs=[torch.arange(8, dtype=torch.float32)], **kw)
        (second,) = k(inputs=[x], **kw)
        for got in (first, plain, second):
            assert isinstance(got, torch.Tensor), type(got)
            assert torch.equal(got.as_subclass(torch.Tensor), torch.arange(8, dtype=torch.float32) + 1)
        print("ok")
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


@pytest.fixture(params=["shim", "methods"])
def read(request):
    """Tensors read through torch's C functions, or through their methods."""
    before = kk._testing.torch_shim()
    kk._testing.torch_shim(request.param == "shim")
    yield request.param
    kk._testing.torch_shim(before)


@pytest.mark.parametrize("device", DEVICES)
def test_out_bumps_the_version_so_autograd_sees_the_write(device, read):
    w = torch.tensor(2.0, device=device, requires_grad=True)
    x = torch.tensor([5.0], device=device)
    y = (w * x).sum()
    before = x._version
    src = torch.tensor([10.0], device=device)
    for turn in range(3):  # the last calls take the launch kept for the layout
        COPY(inputs=[src], grid=(1, 1, 1), threadgroup=(1, 1, 1), template=[("N", 1)], out=[x])
        assert x._version == before + turn + 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


@pytest.mark.parametrize("device", DEVICES)
def test_out_into_a_tensor_that_requires_grad_is_refused_as_torch_does(device, read):
    leaf = torch.zeros(4, device=device, requires_grad=True)
    src = torch.ones(4, device=device)
    kw = dict(grid=(4, 1, 1), threadgroup=(4, 1, 1), template=[("N", 4)])
    for _ in range(2):
        with pytest.raises(kk.CallError, match="requires grad"):
            COPY(inputs=[src], out=[leaf], **kw)
    assert leaf.detach().eq(0).all() and leaf._version == 0
    # Under no_grad (as optimisers write parameters) it is written, counted.
    with torch.no_grad():
        for turn in range(2):
            COPY(inputs=[src], out=[leaf], **kw)
            assert leaf._version == turn + 1
    assert leaf.detach().eq(1).all()


@pytest.mark.parametrize("device", DEVICES)
def test_inference_tensors_are_written_as_before(device, read):
    with torch.inference_mode():
        out = torch.zeros(4, device=device)
    src = torch.ones(4, device=device)
    for _ in range(2):
        COPY(inputs=[src], grid=(4, 1, 1), threadgroup=(4, 1, 1), template=[("N", 4)], out=[out])
    assert out.eq(1).all()
    with torch.inference_mode():
        out2 = torch.zeros(4, device=device)
        COPY(inputs=[src], grid=(4, 1, 1), threadgroup=(4, 1, 1), template=[("N", 4)], out=[out2])
        assert out2.eq(1).all()


@pytest.mark.parametrize("device", DEVICES)
def test_mixed_out_with_a_big_endian_numpy_array_is_refused(device):
    np = pytest.importorskip("numpy")
    two = kk.metal_kernel(
        name="views_two_outputs",
        input_names=["inp"],
        output_names=["a", "b"],
        source="uint i = thread_position_in_grid.x; a[i] = inp[i]; b[i] = inp[i] * 2;",
    )
    src = torch.arange(4, dtype=torch.float32, device=device)
    t = torch.zeros(4, device=device)
    kw = dict(inputs=[src], grid=(4, 1, 1), threadgroup=(4, 1, 1))
    big = np.zeros(4, dtype=">f4")
    ro = np.zeros(4, dtype=np.float32)
    ro.flags.writeable = False
    good = np.zeros(4, dtype=np.float32)
    if device == "cuda":
        # Host memory beside a GPU's tensor: refused, whatever its layout.
        for b in (big, ro, good):
            with pytest.raises(kk.CallError, match="on cpu"):
                two(out=[t, b], **kw)
            assert (b == 0).all()
        return
    with pytest.raises(kk.CallError, match="byte order"):
        two(out=[t, big], **kw)
    assert (big == 0).all()
    with pytest.raises(kk.CallError, match="read-only"):
        two(out=[t, ro], **kw)
    (a, b) = two(out=[t, good], **kw)
    assert b is good and (good == np.arange(4) * 2).all() and torch.equal(t, src)
