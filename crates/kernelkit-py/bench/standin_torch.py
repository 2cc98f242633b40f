"""A stand-in ``torch`` module for measuring kernelkit's Python layer
without torch and without a GPU (``overhead.py``).

Tensors are ``torch.Tensor`` instances (the type's module is ``torch``, so
kernelkit takes them for torch tensors) whose methods are C callables
(``itertools.repeat(v).__next__``): ``data_ptr()``, ``stride()``,
``get_device()`` and ``new_empty()`` cost what any C method call costs,
nothing of torch's own work. Their memory is device memory of the stand-in
driver (``tools/fakecuda``, which must be the ``libcuda.so.1`` loaded), on
device 0; ``torch._C._cuda_getCurrentRawStream`` answers the legacy default
stream. Outputs of ``torch.empty``/``new_empty`` reuse one allocation per
shape (kernels do not run on the stand-in driver).

Import it before kernelkit sees a tensor; it installs itself as ``torch``.
"""

import ctypes
import itertools
import sys
import types

torch = types.ModuleType("torch")


class dtype:
    def __init__(self, name):
        self.name = name

    def __str__(self):
        return "torch." + self.name

    __repr__ = __str__


dtype.__module__ = "torch"


class Tensor:
    pass


Tensor.__module__ = "torch"
float32 = dtype("float32")
torch.float32 = float32
torch.dtype = dtype
torch.Tensor = Tensor
_C = types.ModuleType("torch._C")
_C._cuda_getCurrentRawStream = (0).__mul__  # a C callable: 0 * ordinal == 0
torch._C = _C

_cu = ctypes.CDLL("libcuda.so.1")
_cu.cuInit(0)
_ctx = ctypes.c_void_p()
assert _cu.cuDevicePrimaryCtxRetain(ctypes.byref(_ctx), 0) == 0
_POOL = {}


def _alloc(nbytes):
    p = ctypes.c_uint64()
    assert _cu.cuCtxSetCurrent(_ctx) == 0
    assert _cu.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(nbytes)) == 0
    return p.value


def make(shape, ptr=None):
    """A float32 tensor of ``shape`` on cuda:0 (row-major)."""
    shape = tuple(shape)
    n = 1
    for d in shape:
        n *= d
    if ptr is None:
        ptr = _POOL.get(shape) or _POOL.setdefault(shape, _alloc(4 * n))
    strides, acc = [], 1
    for d in reversed(shape):
        strides.append(acc)
        acc *= d
    t = Tensor.__new__(Tensor)
    t.shape = shape
    t.dtype = float32
    t.data_ptr = itertools.repeat(ptr).__next__
    t.stride = itertools.repeat(tuple(reversed(strides))).__next__
    t.get_device = itertools.repeat(0).__next__
    t.new_empty = _new_empty
    return t


def empty(shape, dtype=None, device=None):
    return make(shape)


_new_empty = make  # ``t.new_empty(shape)``: a Python function, as ``empty``
torch.empty = empty
sys.modules["torch"] = torch
sys.modules["torch._C"] = _C
