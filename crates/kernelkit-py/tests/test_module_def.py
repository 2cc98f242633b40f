"""The extension module declares that it needs the GIL: its safety
arguments (a tensor's size and stride arrays read in place, the
``TensorImpl`` slot, NumPy buffers held across reads) rely on it. The
declaration is the ``Py_mod_gil`` slot of the module's definition, which a
build for Python 3.13 or later has (an abi3 build for an older Python has
no such slot, and no free-threaded Python can load it): read here through
the C API, as the interpreter reads it."""

import ctypes
import sys

import pytest

import kernelkit._kernelkit as ext

PY_MOD_GIL = 4  # CPython's slot number (Include/moduleobject.h, 3.13)
PY_MOD_GIL_USED = 0  # Py_MOD_GIL_USED is (void *)0; NOT_USED is (void *)1


class Slot(ctypes.Structure):
    _fields_ = [("slot", ctypes.c_int), ("value", ctypes.c_void_p)]


class ModuleDef(ctypes.Structure):
    # PyModuleDef: PyModuleDef_Base (PyObject_HEAD, m_init, m_index,
    # m_copy), then the definition's fields.
    _fields_ = [
        ("ob_refcnt", ctypes.c_ssize_t),
        ("ob_type", ctypes.c_void_p),
        ("m_init", ctypes.c_void_p),
        ("m_index", ctypes.c_ssize_t),
        ("m_copy", ctypes.c_void_p),
        ("m_name", ctypes.c_char_p),
        ("m_doc", ctypes.c_char_p),
        ("m_size", ctypes.c_ssize_t),
        ("m_methods", ctypes.c_void_p),
        ("m_slots", ctypes.POINTER(Slot)),
    ]


def slots():
    get_def = ctypes.pythonapi.PyModule_GetDef
    get_def.restype = ctypes.POINTER(ModuleDef)
    get_def.argtypes = [ctypes.py_object]
    definition = get_def(ext)
    assert definition, "the module has a definition"
    assert definition.contents.m_name == b"_kernelkit"
    found = {}
    table = definition.contents.m_slots
    i = 0
    while table and table[i].slot != 0:
        found[table[i].slot] = table[i].value or 0
        i += 1
    return found


@pytest.mark.skipif(sys.version_info < (3, 13), reason="Py_mod_gil exists from Python 3.13")
@pytest.mark.skipif(hasattr(sys, "_is_gil_enabled") and not sys._is_gil_enabled(),
                    reason="a free-threaded interpreter (it never loads this module)")
def test_the_module_declares_it_needs_the_gil():
    assert slots().get(PY_MOD_GIL) == PY_MOD_GIL_USED


def test_no_slot_declares_the_module_free_threading_safe():
    assert slots().get(PY_MOD_GIL, PY_MOD_GIL_USED) == PY_MOD_GIL_USED
