"""Type stubs of :mod:`kernelkit.torch`: kernelkit kernels as PyTorch operators."""

from typing import Any, Callable, List, Mapping, Optional, Sequence, Tuple, Union

import torch

from . import Kernel

_Tensor = torch.Tensor
_Dims = Tuple[int, int, int]
_Template = Union[Sequence[Tuple[str, Any]], Mapping[str, Any], None]

def custom_op(
    name: str,
    kernel: Kernel,
    *,
    grid: Union[_Dims, Callable[..., _Dims]],
    output_shapes: Union[Sequence[Sequence[int]], Callable[..., Sequence[Sequence[int]]], None] = ...,
    output_dtypes: Union[Sequence[torch.dtype], Callable[..., Sequence[torch.dtype]], None] = ...,
    template: Union[_Template, Callable[..., _Template]] = ...,
    threadgroup: Union[_Dims, Callable[..., _Dims]] = ...,
    init_value: Optional[float] = ...,
    backward: Optional[
        Callable[
            [Tuple[_Tensor, ...], Tuple[_Tensor, ...], Tuple[_Tensor, ...]],
            Sequence[Optional[_Tensor]],
        ]
    ] = ...,
    donate: Optional[Mapping[str, str]] = ...,
) -> KernelOp: ...

class KernelOp:
    name: str
    kernel: Kernel
    input_names: List[str]
    output_names: List[str]
    @property
    def op(self) -> Any: ...
    def __call__(self, *tensors: _Tensor) -> Union[_Tensor, Tuple[_Tensor, ...]]: ...
