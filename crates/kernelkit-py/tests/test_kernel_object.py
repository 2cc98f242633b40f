"""The object `metal_kernel` and `cuda_kernel` return: its name, inputs and
outputs, its signature, its errors, and (Python 3.12 and later) that it is
called through vectorcall (`kernelkit/_kernel.py`)."""

import copy
import inspect
import pickle
import sys

import numpy as np
import pytest

import kernelkit as kk
from kernelkit import _kernelkit

BODY = "uint i = thread_position_in_grid.x; out[i] = inp[i] + 1;"
# CPython's type flag for objects called through vectorcall.
HAVE_VECTORCALL = 1 << 11


def make():
    return kk.metal_kernel(name="kernel_object_add", input_names=["inp"], output_names=["out"], source=BODY)


def test_it_names_its_inputs_and_outputs():
    k = make()
    assert isinstance(k, kk.Kernel)
    assert (k.name, k.input_names, k.output_names) == ("kernel_object_add", ["inp"], ["out"])
    assert repr(k) == "<kernelkit.Kernel 'kernel_object_add' (metal_kernel) inputs=[\"inp\"] outputs=[\"out\"]>"
    assert k._rebound_launches == 0


def test_it_is_called_as_mlx_kernels_are():
    k = make()
    x = np.arange(5, dtype=np.float32)
    (y,) = k(inputs=[x], grid=(5, 1, 1), threadgroup=(5, 1, 1), output_shapes=[x.shape], output_dtypes=[x.dtype])
    np.testing.assert_array_equal(y, x + 1)
    out = np.zeros_like(x)
    (z,) = k(inputs=[x], grid=(5, 1, 1), threadgroup=(5, 1, 1), out=[out])
    assert z is out
    np.testing.assert_array_equal(out, x + 1)
    # (Before 3.12 the extension's own object has no signature inspect can
    # read from its `__call__` slot; its `call` method has.)
    names = list(inspect.signature(k if sys.version_info >= (3, 12) else k.call).parameters)
    assert names[:3] == ["inputs", "grid", "threadgroup"] and names[-3:] == ["out", "donate", "allow_overlap"]


def test_the_constructors_signatures_are_mlxs():
    sig = inspect.signature(kk.metal_kernel)
    # MLX's parameters, in MLX's order; then kernelkit's own keyword.
    assert list(sig.parameters) == ["name", "input_names", "output_names", "source", "header",
                                    "ensure_row_contiguous", "atomic_outputs", "compile_options",
                                    "check_bounds"]
    assert sig.parameters["check_bounds"].default is None
    assert sig.parameters["header"].default == "" and sig.parameters["ensure_row_contiguous"].default is True
    sig = inspect.signature(kk.cuda_kernel)
    assert sig.parameters["header"].default == "" and sig.parameters["shared_memory"].default == 0
    assert list(sig.parameters)[-1] == "check_bounds"


def test_wrong_arguments_are_type_errors_that_name_them():
    k = make()
    x = np.arange(5, dtype=np.float32)
    with pytest.raises(TypeError, match="`grid`"):
        k(inputs=[x], threadgroup=(5, 1, 1), out=[x])
    with pytest.raises(TypeError, match="'bogus'"):
        k(inputs=[x], grid=(5, 1, 1), threadgroup=(5, 1, 1), out=[np.zeros_like(x)], bogus=1)
    with pytest.raises(TypeError):
        k([x], (5, 1, 1), (5, 1, 1))  # keywords only, as in MLX


def test_kept_as_a_class_attribute_it_is_no_method():
    class Model:
        kernel = make()

        def forward(self, x):
            return self.kernel(inputs=[x], grid=(x.size, 1, 1), threadgroup=(x.size, 1, 1),
                               output_shapes=[x.shape], output_dtypes=[x.dtype])[0]

    x = np.arange(3, dtype=np.float32)
    assert Model().kernel is Model.kernel
    np.testing.assert_array_equal(Model().forward(x), x + 1)


def test_it_is_not_pickled_and_copies_share_it():
    k = make()
    with pytest.raises(TypeError):
        pickle.dumps(k)
    # A copied model (copy.deepcopy of a torch module, say) shares it.
    assert copy.copy(k) is k and copy.deepcopy({"k": k})["k"] is k
    native = getattr(k, "native", k)
    assert copy.copy(native) is native and copy.deepcopy([native])[0] is native


def test_both_constructors_and_fast_return_it():
    c = kk.cuda_kernel(name="kernel_object_cuda", input_names=["a"], output_names=["b"], source="b[0] = a[0];")
    assert isinstance(c, kk.Kernel) and isinstance(kk.fast.metal_kernel(
        name="kernel_object_fast", input_names=["a"], output_names=["b"], source="b[0] = a[0];"), kk.Kernel)
    assert repr(c).startswith("<kernelkit.Kernel 'kernel_object_cuda' (cuda_kernel)")


@pytest.mark.skipif(sys.version_info < (3, 12), reason="a partial subclass keeps vectorcall from Python 3.12")
def test_calls_go_through_vectorcall():
    k = make()
    assert type(k).__flags__ & HAVE_VECTORCALL
    assert isinstance(k.native, _kernelkit.Kernel) and k.func.__self__ is k.native
    assert k.func.__name__ == "call"
    # The extension's own type has only the tuple-and-dict slot (PyO3).
    assert not _kernelkit.Kernel.__flags__ & HAVE_VECTORCALL
    with pytest.raises(TypeError):
        kk.Kernel("not a kernel")


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="before 3.12 the extension's kernel is returned")
def test_before_312_the_extensions_kernel_is_returned():
    assert type(make()) is _kernelkit.Kernel


def call_outcome(f, *args, **kwargs):
    try:
        return ["ok", [a.tolist() for a in f(*args, **kwargs)]]
    except Exception as e:
        return [type(e).__name__, str(e)]


def entry_of(k):
    """The call entry the 3.12+ `Kernel` calls (made here before 3.12, where
    the package returns the extension's kernel, so that every Python the
    CI runs tests it)."""
    if sys.version_info >= (3, 12):
        return k.func
    return _kernelkit._call_entry(k)


def test_the_call_entry_does_what_the_call_method_does(capsys):
    """The entry takes the calls it can whole and hands the rest to PyO3's
    `call` method: every outcome, result or error, is the method's."""
    k = make()
    entry, method = entry_of(k), getattr(k, "native", k).call
    x = np.arange(4, dtype=np.float32)
    g, t = (4, 1, 1), (4, 1, 1)
    calls = [
        ((), dict(inputs=[x], grid=g, threadgroup=t, output_shapes=[x.shape], output_dtypes=[x.dtype])),
        ((), dict(output_dtypes=[x.dtype], threadgroup=t, output_shapes=[x.shape], grid=g, inputs=[x])),
        ((), dict(inputs=[x], grid=g, threadgroup=t, output_shapes=[x.shape], output_dtypes=[x.dtype], template=None,
                  stream=None, device=None, out=None, verbose=False)),
        ((), dict(inputs=[x], grid=g, threadgroup=t, output_shapes=[x.shape], output_dtypes=[x.dtype], init_value=7.0)),
        ((), dict(inputs=[x], grid=g, threadgroup=t, output_shapes=[x.shape], output_dtypes=[x.dtype], init_value=None)),
        ((), dict(inputs=[x], grid=g, threadgroup=t, output_shapes=[x.shape], output_dtypes=[x.dtype], verbose=True)),
        # Errors: PyO3's words, the same through either.
        (([x],), dict(grid=g, threadgroup=t, output_shapes=[x.shape], output_dtypes=[x.dtype])),
        ((), dict(inputs=[x], grid=g, threadgroup=t, output_shapes=[x.shape], output_dtypes=[x.dtype], colour=1)),
        ((), dict(grid=g, threadgroup=t, output_shapes=[x.shape], output_dtypes=[x.dtype])),
        ((), dict(inputs=[x], grid=g, threadgroup=t, output_shapes=[x.shape], output_dtypes=[x.dtype], verbose=None)),
        ((), dict(inputs=[x], grid=g, threadgroup=t, output_shapes=[x.shape], output_dtypes=[x.dtype], verbose=1)),
        ((), dict(inputs=[x], grid=g, threadgroup=t, output_shapes=[x.shape], output_dtypes=[x.dtype], init_value="a")),
        ((), dict(inputs=None, grid=g, threadgroup=t, output_shapes=[x.shape], output_dtypes=[x.dtype])),
        ((), dict(inputs=[x], grid=(4, 1), threadgroup=t, output_shapes=[x.shape], output_dtypes=[x.dtype])),
        ((), {}),
    ]
    for args, kwargs in calls:
        via_entry = call_outcome(entry, *args, **kwargs)
        printed = capsys.readouterr().out
        assert via_entry == call_outcome(method, *args, **kwargs), (args, kwargs)
        assert printed == capsys.readouterr().out
    assert call_outcome(entry, **calls[0][1]) == ["ok", [[1.0, 2.0, 3.0, 4.0]]]
    assert call_outcome(entry, **calls[3][1])[0] == "ok"
    assert call_outcome(entry, *calls[6][0], **calls[6][1])[0] == "TypeError"


def test_the_call_entry_serves_many_call_sites():
    """More call sites than the entry remembers, each called again: the
    names of each are matched anew when forgotten, never mistaken for
    another site's."""
    k = entry_of(make())
    x = np.arange(3, dtype=np.float32)
    names = ["inputs", "grid", "threadgroup", "output_shapes", "output_dtypes"]
    values = dict(inputs=[x], grid=(3, 1, 1), threadgroup=(3, 1, 1), output_shapes=[x.shape], output_dtypes=[x.dtype])
    import itertools

    sites = []
    for order in itertools.islice(itertools.permutations(names), 20):
        # A call site: a compiled call with its own constant tuple of names.
        src = "lambda k, v: k(" + ", ".join(f"{n}=v[{n!r}]" for n in order) + ")"
        sites.append(eval(src))
    for _ in range(3):
        for site in sites:
            (y,) = site(k, values)
            np.testing.assert_array_equal(y, x + 1)


def test_the_call_entry_under_many_threads():
    """16 threads at a barrier, each calling through call sites of its own
    and shared ones (more than the entry remembers, so sites are matched,
    remembered and forgotten while others call), 20 rounds: every result
    right."""
    import threading

    k = entry_of(make())
    n_threads, rounds = 16, 20
    x = np.arange(8, dtype=np.float32)
    common = dict(grid=(8, 1, 1), threadgroup=(8, 1, 1), output_shapes=[x.shape], output_dtypes=[x.dtype])
    sites = [eval("lambda k, x, c: k(" + ", ".join(
        [f"{n}=c[{n!r}]" for n in list(common)[i % 4:] + list(common)[:i % 4]] + ["inputs=[x]"]) + ")")
        for i in range(12)]
    barrier = threading.Barrier(n_threads)
    failures = []

    def work(t):
        try:
            for r in range(rounds):
                barrier.wait()
                for site in (sites[t % len(sites)], sites[(t + r) % len(sites)]):
                    (y,) = site(k, x + t, common)
                    if not np.array_equal(y, x + t + 1):
                        failures.append((t, r, y))
        except Exception as e:  # reported below, with the thread
            failures.append((t, repr(e)))

    threads = [threading.Thread(target=work, args=(t,)) for t in range(n_threads)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert failures == []


def test_the_call_entry_releases_the_calls_arrays_at_once():
    """The arrays a call kept for its launch are released when it returns,
    as through PyO3's method: an input dropped by the caller is freed then,
    not at some later call."""
    import gc
    import weakref

    k = entry_of(make())
    gc.disable()  # only reference counts free it
    try:
        for _ in range(3):
            x = np.arange(6, dtype=np.float32)
            gone = weakref.ref(x)
            (y,) = k(inputs=[x], grid=(6, 1, 1), threadgroup=(6, 1, 1), output_shapes=[x.shape],
                     output_dtypes=[x.dtype])
            np.testing.assert_array_equal(y, np.arange(6, dtype=np.float32) + 1)
            del x
            assert gone() is None
    finally:
        gc.enable()
