"""The extension module declares that it needs the GIL: its safety
arguments (a tensor's size and stride arrays read in place, the
``TensorImpl`` slot, NumPy buffers held across reads) rely on it. The
declaration is the ``Py_mod_gil`` slot of the module's definition, which a
build for Python 3.13 or later has (an abi3 build for an older Python has
no such slot, and no free-threaded Python can load it): read here through
the C API, as the interpreter reads it.

Also a script, for a build of the extension file alone (no NumPy, no
pytest): ``python3.13 test_module_def.py path/to/_kernelkit.*.so``
(``scripts/test.sh`` runs it on a build for Python 3.13)."""

import ctypes
import sys

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


def slots(module):
    """The slots of `module`'s definition, by number."""
    get_def = ctypes.pythonapi.PyModule_GetDef
    get_def.restype = ctypes.POINTER(ModuleDef)
    get_def.argtypes = [ctypes.py_object]
    definition = get_def(module)
    assert definition, "the module has a definition"
    assert definition.contents.m_name == b"_kernelkit"
    found = {}
    table = definition.contents.m_slots
    i = 0
    while table and table[i].slot != 0:
        found[table[i].slot] = table[i].value or 0
        i += 1
    return found


def load(path):
    """The extension module in the file `path`, loaded on its own."""
    import importlib.machinery
    import importlib.util

    loader = importlib.machinery.ExtensionFileLoader("kernelkit._kernelkit", path)
    spec = importlib.util.spec_from_file_location("kernelkit._kernelkit", path, loader=loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


if __name__ == "__main__":
    if sys.version_info < (3, 13):
        sys.exit("Py_mod_gil exists from Python 3.13")
    gil = slots(load(sys.argv[1])).get(PY_MOD_GIL)
    assert gil == PY_MOD_GIL_USED, f"Py_mod_gil is {gil}, not Py_MOD_GIL_USED"
    print("the module's definition declares Py_mod_gil = Py_MOD_GIL_USED")
else:
    import pytest

    import kernelkit._kernelkit as ext

    @pytest.mark.skipif(sys.version_info < (3, 13), reason="Py_mod_gil exists from Python 3.13")
    def test_the_module_declares_it_needs_the_gil():
        assert slots(ext).get(PY_MOD_GIL) == PY_MOD_GIL_USED

    def test_no_slot_declares_the_module_free_threading_safe():
        assert slots(ext).get(PY_MOD_GIL, PY_MOD_GIL_USED) == PY_MOD_GIL_USED
