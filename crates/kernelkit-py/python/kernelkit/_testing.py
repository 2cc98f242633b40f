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
- ``cdata_slot_check(types, probes, objects)``: the ``TensorImpl`` slot's
  search, on objects that hold a known word.
"""

from ._kernelkit import _testing as _hooks

torch_shim = _hooks.torch_shim
torch_cdata_slot = _hooks.torch_cdata_slot
torch_layout = _hooks.torch_layout
cdata_slot_check = _hooks.cdata_slot_check

__all__ = ["cdata_slot_check", "torch_cdata_slot", "torch_layout", "torch_shim"]
