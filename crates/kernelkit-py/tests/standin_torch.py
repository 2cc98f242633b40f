"""A stand-in ``torch`` module for measuring kernelkit's Python layer
without torch and without a GPU (``overhead.py``).

Tensors are ``torch.Tensor`` instances (the type's module is ``torch``, so
kernelkit takes them for torch tensors) read the two ways kernelkit reads
real ones:

- through torch's C functions, when the stand-in ``libtorch_cpu.so`` and
  ``libtorch_cuda.so`` are built (``tools/fakecuda/build.sh`` puts them in
  ``target/fakecuda/torch/lib``; ``faketorch.c``). As in torch, each tensor
  object holds the address of its implementation inline (here a ctypes
  integer's value; torch's ``THPVariable`` holds its ``at::Tensor``), which
  ``_cdata`` also gives, so kernelkit finds and reads that word as it does
  on torch. The test hook ``kernelkit._testing.torch_shim(False)`` turns
  these reads off;
- through their methods otherwise: ``data_ptr()``, ``stride()`` and
  ``get_device()`` are C callables (``itertools.repeat(v).__next__``), so
  they cost what any C method call costs, nothing of torch's own work.

CUDA tensors' memory is device memory of the stand-in driver
(``tools/fakecuda``, which must be the ``libcuda.so.1`` loaded), on device
0; torch's current stream is the legacy default stream. ``torch.empty`` (on
the CPU unless ``device=`` says otherwise, as torch's), ``empty_like`` and
``new_empty`` are Python functions, and a CUDA output is one tensor per
shape, handed out again (kernels do not run on the stand-in driver).
``as_strided`` and indexing one row exist for the probes kernelkit checks
its reads with.

Import it before kernelkit sees a tensor; it installs itself as ``torch``.
"""

import ctypes
import itertools
import os
import sys
import types

torch = types.ModuleType("torch")


class dtype:
    def __init__(self, name, itemsize, code):
        self.name, self.itemsize, self.code = name, itemsize, code

    def __str__(self):
        return "torch." + self.name

    __repr__ = __str__


class device:
    def __init__(self, type, index=None):
        self.type, self.index = type, index

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"


dtype.__module__ = device.__module__ = "torch"
# c10's ScalarType codes (those of faketorch.c).
float32 = dtype("float32", 4, 6)
int16 = dtype("int16", 2, 2)
torch.float32, torch.int16 = float32, int16
torch.dtype, torch.device = dtype, device

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
LIB = os.path.join(ROOT, "target", "fakecuda", "torch", "lib")
_shim = None
if os.path.exists(os.path.join(LIB, "libtorch_cuda.so")):
    _shim = ctypes.CDLL(os.path.join(LIB, "libtorch_cpu.so"))
    ctypes.CDLL(os.path.join(LIB, "libtorch_cuda.so"))
    _shim.faketorch_new.restype = ctypes.c_void_p
    _shim.faketorch_new.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.POINTER(ctypes.c_int64),
                                    ctypes.POINTER(ctypes.c_int64), ctypes.c_int32, ctypes.c_int32, ctypes.c_int32]
    # kernelkit opens torch's libraries beside torch/__init__.py.
    torch.__file__ = os.path.join(os.path.dirname(LIB), "__init__.py")


class Tensor(ctypes.c_uint64):
    """The value: the tensor's implementation's address (0 without the
    stand-in libraries)."""

    @property
    def _cdata(self):
        return self.value

    def as_strided(self, size, stride, storage_offset=0):
        return make(size, self._base + storage_offset * self.dtype.itemsize, self.dtype, self._where, stride)

    def __getitem__(self, i):
        s = self.stride()
        return make(self.shape[1:], self._base + i * s[0] * self.dtype.itemsize, self.dtype, self._where, s[1:])


Tensor.__module__ = "torch"
torch.Tensor = Tensor
_C = types.ModuleType("torch._C")
_C._cuda_getCurrentRawStream = (0).__mul__  # a C callable: 0 * ordinal == 0
torch._C = _C

_cu = ctypes.CDLL("libcuda.so.1")
_cu.cuInit(0)
_ctx = ctypes.c_void_p()
assert _cu.cuDevicePrimaryCtxRetain(ctypes.byref(_ctx), 0) == 0
_POOL = {}
_HOST = []  # CPU tensors' memory, kept


def _alloc(nbytes):
    p = ctypes.c_uint64()
    assert _cu.cuCtxSetCurrent(_ctx) == 0
    assert _cu.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(nbytes)) == 0
    return p.value


def make(shape, ptr=None, dtype=float32, where=0, strides=None):
    """A tensor of ``shape`` and ``dtype`` at ``ptr`` (new memory when
    ``None``) on cuda:``where``, or on the CPU when ``where`` is ``"cpu"``;
    row-major unless ``strides`` are given."""
    shape = tuple(shape)
    n = 1
    for d in shape:
        n *= d
    if ptr is None and where == "cpu":
        _HOST.append(ctypes.create_string_buffer(max(n, 1) * dtype.itemsize))
        ptr = ctypes.addressof(_HOST[-1])
    elif ptr is None:
        key = (shape, dtype.itemsize)
        ptr = _POOL.get(key) or _POOL.setdefault(key, _alloc(max(n, 1) * dtype.itemsize))
    if strides is None:
        strides, acc = [], 1
        for d in reversed(shape):
            strides.append(acc)
            acc *= d
        strides.reverse()
    strides = tuple(strides)
    cpu = where == "cpu"
    impl = 0
    if _shim is not None:
        dims = ctypes.c_int64 * max(len(shape), 1)
        impl = _shim.faketorch_new(ptr, len(shape), dims(*shape), dims(*strides), dtype.code,
                                   0 if cpu else 1, -1 if cpu else where)
    t = Tensor(impl)
    t._base, t._where = ptr, where
    t.shape = shape
    t.dtype = dtype
    t.device = device("cpu") if cpu else device("cuda", where)
    t.data_ptr = itertools.repeat(ptr).__next__
    t.stride = itertools.repeat(strides).__next__
    t.get_device = itertools.repeat(-1 if cpu else where).__next__
    t.new_empty = _new_empty(t)
    return t


_MADE = {}


def _made(shape, dtype, where):
    """A new tensor, as torch's allocating calls return; a CUDA one is made
    once per shape, dtype and device and handed out again (its cost is
    then a lookup, not torch's work)."""
    shape = tuple(shape)
    if where == "cpu":
        return make(shape, None, dtype, where)
    key = (shape, dtype.name, where)
    return _MADE.get(key) or _MADE.setdefault(key, make(shape, None, dtype, where))


def _new_empty(t):
    """``t.new_empty(shape)``: a Python function, as ``empty``."""
    return lambda shape: _made(shape, t.dtype, t._where)


def empty(shape, dtype=None, device=None):
    shape = (shape,) if isinstance(shape, int) else shape
    return _made(shape, dtype or float32, "cpu" if device in (None, "cpu") else int(device))


def empty_like(t):
    return _made(t.shape, t.dtype, t._where)


torch.empty, torch.empty_like = empty, empty_like
sys.modules["torch"] = torch
sys.modules["torch._C"] = _C
