"""The extension's test hooks (``kernelkit._kernelkit._testing``), for the
package's tests and benchmarks: not the package's interface, and free to
change with it.

- ``torch_shim(on=None)``: turns the reads of torch tensors through torch's C
  functions on or off when ``on`` is given; returns whether tensors are read
  through them (the other read is through the tensor's methods).
- ``torch_cdata_slot()``: whether a ``torch.Tensor``'s ``TensorImpl`` address
  is read from its object's memory.
- ``torch_layout(t)``: ``(data_ptr, device, dtype, shape, strides)`` of a
  tensor, as a call reads it.
- ``call_routes()``: counts, since the process started, of the routes calls
  took: ``entry`` (the vectorcall entry took the keywords itself), ``method``
  (PyO3's parsing), ``repeat`` (the one-pass torch route launched it),
  ``torch_kept``/``torch_new`` (the torch route, a kept launch or a new
  layout), ``general`` (the general path), and ``parsed`` (arguments not
  found in their memo, parsed anew). A warm call on the fast path adds to
  ``entry`` (and, for torch, ``repeat``) and never to ``parsed``.
- ``cdata_slot_check(types, probes, objects)``: the ``TensorImpl`` slot's
  search, on objects that hold a known word.
"""

from ._kernelkit import _testing as _hooks

torch_shim = _hooks.torch_shim
torch_cdata_slot = _hooks.torch_cdata_slot
torch_layout = _hooks.torch_layout
cdata_slot_check = _hooks.cdata_slot_check
call_routes = _hooks.call_routes

__all__ = ["call_routes", "cdata_slot_check", "torch_cdata_slot", "torch_layout", "torch_shim"]
