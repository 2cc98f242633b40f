"""Errors: the exception hierarchy, the library's messages, and no input
that crashes the interpreter."""

import random
import subprocess
import sys

import numpy as np
import pytest

import kernelkit as kk

SRC = "uint i = thread_position_in_grid.x; out[i] = inp[i];"


def kernel(**kw):
    args = dict(name="plain", input_names=["inp"], output_names=["out"], source=SRC)
    args.update(kw)
    return kk.metal_kernel(**args)


def run(k, **kw):
    x = np.arange(8, dtype=np.float32)
    args = dict(inputs=[x], grid=(8, 1, 1), threadgroup=(8, 1, 1), output_shapes=[x.shape],
                output_dtypes=[x.dtype])
    args.update(kw)
    return k(**args)


def test_hierarchy_follows_python_conventions():
    assert issubclass(kk.BuildError, (kk.KernelError, ValueError))
    assert issubclass(kk.CallError, ValueError) and issubclass(kk.CallError, kk.KernelError)
    assert issubclass(kk.ArrayError, ValueError)
    assert issubclass(kk.ArgumentTypeError, TypeError) and issubclass(kk.ArgumentTypeError, kk.KernelError)
    assert issubclass(kk.CompileError, kk.KernelError) and issubclass(kk.CompileError, RuntimeError)
    assert issubclass(kk.DeviceError, kk.KernelError) and issubclass(kk.DeviceError, RuntimeError)
    assert kk.CallError.__module__ == "kernelkit"


@pytest.mark.parametrize(
    "spec, message",
    [
        (dict(name="bad name"), "kernel `bad name`: kernel name `bad name` is not usable"),
        (dict(input_names=["in put"]), "input name `in put` is not usable"),
        (dict(input_names=["x", "x"]), "collides"),
        (dict(output_names=[]), "kernel `plain`: at least one output name is required"),
        (dict(input_names=["float"]), "is not usable"),
        (dict(source="a\0b"), "the source contains a NUL byte at offset 1"),
        (dict(header="\0"), "the header contains a NUL byte"),
    ],
)
def test_build_errors_carry_the_library_message(spec, message):
    with pytest.raises(kk.BuildError) as e:
        kernel(**spec)
    assert message in str(e.value)


def test_call_errors_carry_the_library_message():
    k = kernel()
    x = np.arange(8, dtype=np.float32)
    cases = [
        (dict(inputs=[x, x]), "kernel `plain`: expected 1 input(s) (`inp`), got 2"),
        (dict(output_shapes=[(8,), (8,)], output_dtypes=[np.float32] * 2),
         "kernel `plain`: expected 1 output(s) (`out`), got 2"),
        (dict(output_shapes=[(0,)]), "output `out` has shape [0]: extents must be at least 1"),
        (dict(output_shapes=[(-4,)]), "extents must not be negative"),
        (dict(output_shapes=[(2**62, 2**62)]), "its size overflows"),
        (dict(grid=(0, 1, 1)), "kernel `plain`: grid [0, 1, 1] on cpu: every extent must be at least 1"),
        (dict(grid=(2**40, 1, 1)), "grid [1099511627776, 1, 1] on cpu"),
        (dict(grid=(2**20, 2**20, 2**20)), "overflows 32 bits"),
        (dict(threadgroup=(0, 1, 1)), "threadgroup [0, 1, 1]"),
        (dict(threadgroup=(4096, 4096, 1)), "threads per threadgroup"),
        (dict(grid=(-1, 1, 1)), "grid (-1, 1, 1): every extent must be at least 1"),
        (dict(grid=(1, 1)), "grid must have 3 extents"),
        (dict(template=[("inp", 1)]), "template argument `inp` has the name of input `inp`"),
        (dict(template=[("A", 1), ("A", 2)]), "is given twice"),
        (dict(template=[("bad name", 1)]), "template argument `bad name` is not usable"),
        (dict(template=[("N", 2**31)]), "does not fit a 32-bit int"),
        (dict(init_value=1.5, output_dtypes=[np.int32]), "init_value 1.5 does not fit output `out` of dtype int32"),
        (dict(output_shapes=[(8,)], output_dtypes=[np.float32, np.float32]), "1 output_shapes but 2 output_dtypes"),
    ]
    wrong = []
    for args, message in cases:
        with pytest.raises(kk.CallError) as e:
            run(k, **args)
        if message not in str(e.value):
            wrong.append((message, str(e.value)))
    assert not wrong


def test_type_errors():
    k = kernel()
    x = np.arange(8, dtype=np.float32)
    cases = [
        dict(template=[("T", 1.5)]),
        dict(template=[("T", "floot32")]),
        dict(template=[(1, 2)]),
        dict(template=[("T",)]),
        dict(template=3),
        dict(output_dtypes=["floot32"]),
        dict(output_dtypes=[float]),
        dict(output_shapes=[(8.0,)]),
        dict(output_shapes=["8"]),
        dict(grid=(1.0, 1, 1)),
        dict(grid=(True, 1, 1)),
        dict(grid=5),
        dict(inputs=x),
        dict(output_shapes=None),
        dict(out=[[0.0] * 8]),
        dict(init_value="x"),
        dict(verbose=1),
        dict(verbose="yes"),
    ]
    for args in cases:
        with pytest.raises(TypeError) as e:
            run(k, **args)
        assert isinstance(e.value, kk.ArgumentTypeError), (args, e.value)
        assert "kernel `plain`" in str(e.value)
    # Python's own argument checks stay TypeErrors.
    with pytest.raises(TypeError):
        k([x], (1, 1, 1), (1, 1, 1))
    with pytest.raises(TypeError):
        kk.metal_kernel(name="n", input_names="inp", output_names=["o"], source=SRC)


def test_compile_errors_keep_the_log_and_the_source():
    k = kernel(name="broken_body", source="out[0] = inp[0] +;")
    with pytest.raises(kk.CompileError) as e:
        run(k)
    err = e.value
    assert str(err).startswith("kernel `broken_body`:")
    assert "[body line 1]" in err.log
    assert "out[0] = inp[0] +;" in err.source
    # A failed compile is not cached: it fails again, with the same message.
    with pytest.raises(kk.CompileError) as again:
        run(k)
    assert str(again.value) == str(err)


def test_device_errors():
    with pytest.raises(kk.CallError):
        kk.Device("tpu")
    try:
        kk.Device("cuda:7").description()
    except kk.DeviceError as e:
        assert "cuda:7" in str(e)


def test_cpu_refuses_what_it_cannot_run_with_a_call_error():
    # Metal textures: no portable backend has them.
    k = kernel(name="needs_texture", source="texture2d<float> t; out[0] = inp[0];")
    with pytest.raises(kk.CallError, match="texture2d"):
        run(k, device="cpu")
    # CUDA C++ words in a Metal body run on a CUDA device only.
    k = kernel(name="needs_cuda", source="__syncthreads(); out[0] = inp[0];")
    with pytest.raises(kk.CallError, match="__syncthreads"):
        run(k, device="cpu")


def test_cpu_runs_barrier_bodies():
    # Since the Metal compatibility layer, the CPU runs a threadgroup's
    # threads as fibers: a barrier body runs, and sees the whole group.
    k = kernel(name="group_sum", source=(
        "threadgroup float acc[8];\n"
        "uint i = thread_position_in_threadgroup.x;\n"
        "acc[i] = inp[i];\n"
        "threadgroup_barrier(mem_flags::mem_threadgroup);\n"
        "float s = 0;\n"
        "for (uint j = 0; j < 8; ++j) s += acc[j];\n"
        "out[i] = s;"))
    (out,) = run(k, device="cpu")
    assert list(out) == [28.0] * 8


def random_value(rng):
    choices = [
        lambda: rng.randint(-(2**70), 2**70),
        lambda: rng.choice([0, 1, -1, 2**31, 2**32, 2**63, 2**64]),
        lambda: rng.random() * 1e6 - 5e5,
        lambda: rng.choice([None, True, False, "", "x", "float32", "cuda:99", "\0", "a b"]),
        lambda: tuple(rng.randint(-3, 2**33) for _ in range(rng.randint(0, 4))),
        lambda: [rng.randint(-2, 9) for _ in range(rng.randint(0, 4))],
        lambda: np.zeros(rng.randint(0, 5), dtype=rng.choice(["f4", "i8", "c16", "U3", "O", "f2"])),
        lambda: rng.choice([np.float32, np.complex128, np.dtype("V3"), object(), {}, {"a": 1}]),
        lambda: [(rng.choice(["T", "N", "", "inp", "x y", 3]), random_value(rng))],
        lambda: [np.ones((2, 3), np.float32)[:, ::2], 1.0, True],
    ]
    return rng.choice(choices)()


def test_random_bad_calls_raise_errors_never_crash():
    # Valid calls with one or two arguments replaced by random values. Every
    # outcome must be a result or an exception of an expected kind.
    rng = random.Random(16)
    k = kernel(name="fuzzed")
    x = np.arange(8, dtype=np.float32)
    base = dict(inputs=[x], grid=(8, 1, 1), threadgroup=(8, 1, 1), output_shapes=[x.shape],
                output_dtypes=[x.dtype], template=None, init_value=None, stream=None, device=None,
                out=None)
    allowed = (kk.KernelError, TypeError, ValueError, OverflowError)
    outcomes = {"ok": 0, "error": 0}
    for _ in range(600):
        args = dict(base)
        for key in rng.sample(sorted(base), rng.randint(1, 2)):
            args[key] = random_value(rng)
        if args["device"] is not None and "cuda" in str(args["device"]):
            args["device"] = None  # opening CUDA is tested elsewhere
        try:
            k(**args)
            outcomes["ok"] += 1
        except allowed:
            outcomes["error"] += 1
    assert outcomes["error"] > 0


def test_random_bad_specs_raise_errors_never_crash():
    rng = random.Random(61)
    names = ["inp", "out", "", "a b", "float", "kk_x", "__x", "x" * 300, "\0", "é", "thread_position_in_grid",
             "inp_shape", 3, None]
    for _ in range(300):
        spec = dict(
            name=rng.choice(names + ["k"] * 5),
            input_names=[rng.choice(names + ["a", "b"]) for _ in range(rng.randint(0, 3))],
            output_names=[rng.choice(names + ["o", "p"]) for _ in range(rng.randint(0, 2))],
            source=rng.choice([SRC, "", "\0", "}", "o[0] = a[0];"]),
        )
        try:
            kk.metal_kernel(**spec)
        except (kk.KernelError, TypeError):
            pass


def test_a_crashing_interpreter_would_be_seen():
    # The fuzz tests above run in this process; a crash kills pytest. This
    # checks the same calls under a fresh interpreter end with exit code 0.
    script = (
        "import numpy as np, kernelkit as kk\n"
        "k = kk.metal_kernel(name='k', input_names=['a'], output_names=['o'], source='o[0]=a[0];')\n"
        "for bad in [dict(grid=(2**64, 1, 1)), dict(output_shapes=[(2**63,)]), dict(inputs=[2**100])]:\n"
        "    args = dict(inputs=[np.ones(1, np.float32)], grid=(1, 1, 1), threadgroup=(1, 1, 1),\n"
        "                output_shapes=[(1,)], output_dtypes=['float32'])\n"
        "    args.update(bad)\n"
        "    try:\n"
        "        k(**args)\n"
        "    except (kk.KernelError, OverflowError):\n"
        "        pass\n"
        "print('survived')\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "survived" in done.stdout, done.stderr


@pytest.mark.parametrize("left_out, named", [
    (["grid"], "`grid`"),
    (["threadgroup"], "`threadgroup`"),
    (["inputs"], "`inputs`"),
    (["grid", "threadgroup"], "arguments `grid`, `threadgroup`"),
])
@pytest.mark.parametrize("how", ["absent", "None"])
def test_a_missing_required_argument_names_the_kernel(left_out, named, how):
    # Absent or `None`, through every way of calling (on 3.12+ the package's
    # Kernel, its call entry's fallback and the extension's own call): an
    # ArgumentTypeError, a TypeError, naming the kernel and each argument.
    k = kernel()
    x = np.arange(8, dtype=np.float32)
    args = dict(inputs=[x], grid=(8, 1, 1), threadgroup=(8, 1, 1), output_shapes=[x.shape],
                output_dtypes=[x.dtype])
    for name in left_out:
        if how == "absent":
            del args[name]
        else:
            args[name] = None
    calls = [k] + ([k.native, k.native.call] if hasattr(k, "native") else [])
    for call in calls:
        with pytest.raises(kk.ArgumentTypeError) as e:
            call(**args)
        assert isinstance(e.value, TypeError)
        message = str(e.value)
        assert message.startswith("kernel `plain`: missing the required keyword argument"), message
        assert named in message, message
    # The same call with everything given runs.
    assert run(k)[0].shape == (8,)


@pytest.mark.parametrize("make", [kk.metal_kernel, kk.cuda_kernel], ids=["metal_kernel", "cuda_kernel"])
@pytest.mark.parametrize("changed, message", [
    (dict(input_names=[1]), "kernel `spec`: input_names[0] must be a str, got int 1"),
    (dict(input_names=["inp", None]), "kernel `spec`: input_names[1] must be a str, got NoneType None"),
    (dict(input_names="inp"), "kernel `spec`: input_names must be a list of str, got str 'inp'"),
    (dict(output_names=5), "kernel `spec`: output_names must be a list of str, got int 5"),
    (dict(source=None), "kernel `spec`: source must be a str, got NoneType None"),
    (dict(source=b"x"), "kernel `spec`: source must be a str, got bytes b'x'"),
    (dict(header=3), "kernel `spec`: header must be a str, got int 3"),
    (dict(ensure_row_contiguous="yes"), "kernel `spec`: ensure_row_contiguous must be a bool, got str 'yes'"),
])
def test_a_spec_argument_of_the_wrong_type_names_the_kernel_and_the_argument(make, changed, message):
    args = dict(name="spec", input_names=["inp"], output_names=["out"], source=SRC)
    args.update(changed)
    with pytest.raises(kk.ArgumentTypeError) as e:
        make(**args)
    assert isinstance(e.value, TypeError)
    assert str(e.value) == message


def test_the_other_constructor_arguments_are_checked_the_same_way():
    args = dict(input_names=["inp"], output_names=["out"], source=SRC)
    with pytest.raises(kk.ArgumentTypeError, match=r"^metal_kernel: the kernel's name must be a str, got int 3$"):
        kk.metal_kernel(name=3, **args)
    with pytest.raises(kk.ArgumentTypeError, match=r"^kernel `spec`: atomic_outputs must be a bool, got int 1$"):
        kk.metal_kernel(name="spec", atomic_outputs=1, **args)
    with pytest.raises(kk.ArgumentTypeError,
                       match=r"^kernel `spec`: shared_memory must be an int of bytes, got bool True$"):
        kk.cuda_kernel(name="spec", shared_memory=True, **args)
    # The right type out of range is a value error.
    with pytest.raises(kk.BuildError,
                       match=r"^kernel `spec`: shared_memory must be from 0 to 4294967295 bytes, got -1$"):
        kk.cuda_kernel(name="spec", shared_memory=-1, **args)
    # Any iterable of strs names the inputs, as MLX's sequences do; None is
    # each optional argument's default.
    k = kk.metal_kernel(name="spec", input_names=("inp",), output_names=(n for n in ["out"]), source=SRC,
                        header=None, ensure_row_contiguous=None, atomic_outputs=None)
    assert (k.input_names, k.output_names) == (["inp"], ["out"])
    assert kk.cuda_kernel(name="spec", shared_memory=np.int64(64), **args).name == "spec"


def test_a_stream_that_names_no_device_says_it_was_the_stream():
    with pytest.raises(kk.CallError, match=r"^kernel `plain`: stream= \(a stream or a device\): device `s` is not one"):
        run(kernel(), stream="s")
