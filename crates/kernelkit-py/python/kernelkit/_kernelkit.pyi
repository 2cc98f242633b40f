"""Type stubs of the extension module `kernelkit._kernelkit` (re-exported by
`kernelkit`)."""

import os
from types import ModuleType
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

__version__: str

#: Anything that names a dtype: a NumPy dtype or scalar type, a
#: ``torch.dtype``, an MLX dtype, or a name such as ``"float32"``.
DTypeLike = Any
#: An array: a NumPy array, a torch tensor, a CuPy array, or any object with
#: ``__dlpack__`` or ``__cuda_array_interface__`` (typed loosely: none of
#: those libraries is a dependency).
ArrayLike = Any
#: An array or a Python/NumPy scalar (a 0-d input).
InputLike = Union[np.ndarray, np.generic, bool, int, float, complex, ArrayLike]
#: A stream: a kernelkit ``Stream``, a device (its default stream), or a
#: framework's (``torch.cuda.Stream``, ``cupy.cuda.Stream``).
StreamLike = Any
#: A template value: ``bool`` and ``int`` are distinct kinds, as in MLX.
TemplateValue = Union[bool, int, DTypeLike]
#: A device, or its name: ``"cpu"``, ``"cuda"``, ``"cuda:N"``, ``"gpu"``.
DeviceLike = Union["Device", str]

class Device:
    """A device, opened on first use: ``Device("cpu")``, ``Device("cuda")``,
    ``Device("cuda:1")`` or ``Device("cuda", 1)``. Equal to another
    ``Device`` or to a name of the same device."""

    def __init__(self, kind: str, index: Optional[int] = None) -> None: ...
    @property
    def type(self) -> str:
        """``"cpu"`` or ``"cuda"``."""
    @property
    def index(self) -> int:
        """The ordinal (0 for the CPU)."""
    def description(self) -> str:
        """Model, cores, compiler; opens the device."""
    def cache_stats(self) -> Dict[str, int]:
        """The kernel cache's counters (see ``cache_stats``)."""
    def synchronize(self) -> None:
        """Waits for the work queued on the device's default stream."""
    def __eq__(self, other: object) -> bool: ...
    def __hash__(self) -> int: ...

class Stream:
    """An ordered queue of work on one device; make one with ``new_stream``."""

    @property
    def device(self) -> Device: ...
    def synchronize(self) -> None:
        """Waits until all work submitted to this stream so far has finished."""
    def __eq__(self, other: object) -> bool: ...
    def __hash__(self) -> int: ...

class Array:
    """An output kernelkit allocated, returned for arrays that came through
    DLPack when their library has no ``from_dlpack``. No copy is made until
    another library takes it (``np.from_dlpack(a)``, ``torch.from_dlpack(a)``)."""

    @property
    def shape(self) -> Tuple[int, ...]: ...
    @property
    def dtype(self) -> str:
        """The dtype's name, e.g. ``"float32"``."""
    @property
    def device(self) -> str:
        """``"cpu"`` or ``"cuda:N"``."""
    def __dlpack_device__(self) -> Tuple[int, int]: ...
    def __dlpack__(
        self,
        *,
        stream: Optional[int] = None,
        max_version: Optional[Tuple[int, int]] = None,
        dl_device: Optional[Tuple[int, int]] = None,
        copy: Optional[bool] = None,
    ) -> Any:
        """A DLPack capsule (no copy); the consumer's ``stream`` (the legacy
        default stream for ``None``, nothing for ``-1``) waits for the
        array's stream with an event."""
    @property
    def __cuda_array_interface__(self) -> Dict[str, Any]:
        """CUDA's array interface (version 3) of a CUDA array, its ``stream``
        the one that writes it; ``AttributeError`` on the CPU."""
    def __array__(self, dtype: Any = None, copy: Optional[bool] = None) -> np.ndarray:
        """A NumPy copy (waits for the array's stream)."""

class Kernel:
    """A custom kernel made by ``metal_kernel`` or ``cuda_kernel``."""

    @property
    def name(self) -> str: ...
    @property
    def input_names(self) -> List[str]: ...
    @property
    def output_names(self) -> List[str]: ...
    def __call__(
        self,
        *,
        inputs: Sequence[InputLike],
        grid: Tuple[int, int, int],
        threadgroup: Tuple[int, int, int],
        output_shapes: Optional[Sequence[Sequence[int]]] = None,
        output_dtypes: Optional[Sequence[DTypeLike]] = None,
        template: Optional[
            Union[Sequence[Tuple[str, TemplateValue]], Mapping[str, TemplateValue]]
        ] = None,
        init_value: Optional[float] = None,
        verbose: bool = False,
        stream: Optional[Union[Stream, DeviceLike, StreamLike]] = None,
        device: Optional[DeviceLike] = None,
        out: Optional[Sequence[ArrayLike]] = None,
        donate: Optional[Mapping[str, str]] = None,
        allow_overlap: bool = False,
    ) -> List[Any]:
        """Runs the kernel and returns its outputs, in the order of
        ``output_names``, as arrays of the inputs' kind: NumPy arrays for
        NumPy inputs, torch tensors (``torch.empty`` on the inputs' device)
        for torch tensors, CuPy arrays for CuPy arrays, and for other
        DLPack arrays their library's ``from_dlpack`` of a ``kernelkit.Array``
        (or the ``kernelkit.Array``). With ``out=``, the outputs are written
        into those arrays, which are returned (``output_shapes`` and
        ``output_dtypes`` may then be left out). No copies, except NumPy
        arrays given to a GPU.

        ``donate={"out": "inp"}`` makes output ``out`` input ``inp``'s own
        buffer (an in-place kernel): checked to be the same shape and dtype
        as ``output_shapes``/``output_dtypes`` say where given, nothing is
        allocated, and the input array itself is returned in ``out``'s
        place (torch: its version counter bumped). The other outputs, if
        any, need ``out=`` (where the donated one's place holds the input
        itself or ``None``). ``allow_overlap=True`` lets ``out=`` arrays
        share memory with the inputs (refused otherwise).

        ``grid`` counts threads, as in MLX (Metal's ``dispatchThreads``);
        ``threadgroup`` is clamped to it. ``init_value`` fills the outputs
        first. ``verbose`` prints the generated source. The call runs on
        ``stream`` when given; else on ``device``, else where the first
        array lives (the kernel's default device for NumPy arrays: the CPU,
        or ``cuda:0`` for a ``cuda_kernel``), on torch's current stream of
        that device for torch tensors, CuPy's current stream for CuPy
        arrays, and the device's default kernelkit stream otherwise. The GIL
        is released while the kernel is compiled, loaded and run.
        """
    call = __call__
    """The same as calling the kernel, through vectorcall (what
    ``kernelkit.Kernel`` calls on Python 3.12 and later)."""
    @property
    def _rebound_launches(self) -> int: ...
    def __copy__(self) -> "Kernel": ...
    def __deepcopy__(self, memo: Any) -> "Kernel": ...

def metal_kernel(
    name: str,
    input_names: Sequence[str],
    output_names: Sequence[str],
    source: str,
    header: str = "",
    ensure_row_contiguous: bool = True,
    atomic_outputs: bool = False,
    compile_options: Optional[Mapping[str, str]] = None,
    check_bounds: Optional[bool] = None,
) -> Kernel:
    """A custom kernel from the body of a function (MLX's
    ``mx.fast.metal_kernel``). The body reads ``NAME[i]`` for each input and
    output, may use ``NAME_shape``, ``NAME_strides``, ``NAME_ndim`` and the
    Metal position names (``thread_position_in_grid``, ...). Names are
    checked here (``BuildError``); the body is compiled on first call, once
    per variant and device. ``compile_options`` accepts MLX's
    ``{"math_mode": "safe" | "relaxed" | "fast"}``: ``safe`` (the default)
    keeps IEEE 754 special values, ``relaxed`` allows unsafe optimizations
    but keeps infinities and NaNs, ``fast`` assumes finite values too (and
    defines ``__FAST_MATH__`` for the body on every device).
    ``check_bounds=True`` (kernelkit's; default: ``KERNELKIT_CHECK_BOUNDS``)
    runs the body with bounds checks: a call that reads or writes outside an
    argument raises ``OutOfBoundsError`` naming it (a debugging mode: calls
    wait for their kernel)."""

def cuda_kernel(
    name: str,
    input_names: Sequence[str],
    output_names: Sequence[str],
    source: str,
    header: str = "",
    ensure_row_contiguous: bool = True,
    shared_memory: int = 0,
    check_bounds: Optional[bool] = None,
) -> Kernel:
    """A custom kernel whose body is CUDA C++ (MLX's ``mx.fast.cuda_kernel``);
    ``shared_memory`` is the dynamic shared memory per block, in bytes. Its
    calls run on ``cuda:0`` unless ``device=`` or ``stream=`` says.
    ``check_bounds`` as for ``metal_kernel``."""

def new_stream(device: DeviceLike) -> Stream:
    """A new stream on ``device``."""

def clear_streams() -> None:
    """Finishes the work of every stream this thread made with ``new_stream``
    and retires them (MLX's ``clear_streams``)."""

def cache_stats(device: DeviceLike) -> Dict[str, int]:
    """What the kernel cache and artifact store of ``device`` have done:
    ``hits``, ``misses``, ``compiles`` (one per distinct variant, however
    many threads asked), ``failures``, ``compile_ns``, ``disk_hits``,
    ``disk_misses``, ``disk_writes``, ``disk_errors``, ``loaded_modules``."""

cpu: Device
gpu: Device

def _worker_command() -> Optional[List[str]]:
    """The command line of the package's CUDA compile worker (this
    interpreter serving kernelkit's worker loop), or ``None``."""

def _compile_worker() -> int:
    """Serves CUDA compile jobs on stdin/stdout; run by worker processes."""

class _JaxKernel:
    """A kernel as ``kernelkit.jax`` holds it (see ``kernelkit/jax.py``)."""

    identity: str
    spec: str
    name: str
    input_names: List[str]
    output_names: List[str]
    def compile(self, template: str, input_dtypes: List[str], input_shapes: List[List[int]],
                output_dtypes: List[str], platform: str) -> None:
        """Compiles the variant of a traced call on ``platform``'s device."""

def _jax_kernel(language: str, name: str, input_names: List[str], output_names: List[str],
                source: str, header: str, ensure_row_contiguous: bool, atomic_outputs: bool,
                math_mode: str, shared_memory: int, batched: bool) -> _JaxKernel:
    """The kernel of ``kernelkit.jax.metal_kernel`` / ``cuda_kernel``."""

def _jax_targets(major: int, minor: int) -> Dict[str, Dict[str, Any]]:
    """Per platform, the XLA FFI handler's capsules to register."""

#: The test hooks (``torch_shim``, ``torch_cdata_slot``, ``torch_layout``,
#: ``cdata_slot_check``), for the package's tests and benchmarks:
#: ``kernelkit._testing`` re-exports them.
_testing: ModuleType

def _record_start(path: str) -> None: ...
def _record_stop() -> Optional[str]: ...
def set_jit(policy: str) -> None:
    """Sets the process's JIT policy: "allow", "warn" or "forbid"."""
def jit_policy() -> str:
    """The process's JIT policy: "allow", "warn" or "forbid"."""
def precompile(
    manifest: Union[str, "os.PathLike[str]"],
    out: Union[str, "os.PathLike[str]"],
    signing_key: Union[str, "os.PathLike[str]"],
    arch: List[str] = ...,
    ptx: bool = True,
    cpu: List[str] = ...,
    workers: Optional[int] = None,
) -> Dict[str, Any]:
    """Compiles every variant of a recorded manifest for the CUDA
    architectures `arch` (NVRTC only, no GPU), their PTX, and the CPU levels
    `cpu`, into one signed bundle `out`."""
def import_bundle(
    path: Union[str, "os.PathLike[str]"],
    trusted_keys: Optional[Union[str, "os.PathLike[str]"]] = None,
) -> Dict[str, int]:
    """Imports a signed bundle into this process's artifact store for this
    machine's devices."""
def keygen(out: Union[str, "os.PathLike[str]"], comment: str = "") -> str:
    """Makes an Ed25519 key pair for signing bundles (`out`, `out.pub`);
    returns the public key's line."""

class _Tuned:
    """The tuned kernel ``kernelkit.autotune`` returns (from Python 3.12
    wrapped in ``Autotuned``, a ``functools.partial`` over ``_tuned_entry``):
    called with the kernel's signature, it finds the configuration chosen
    for the call's tuning key (timing the configurations once per key
    unless a cache tier has the record) and runs the kernel's call with its
    threadgroup, grid and template values."""

    def __init__(
        self,
        kernel: Any,
        native: Kernel,
        configs: List[Tuple[Dict[str, Any], Tuple[int, int, int], List[Tuple[str, Any]], Optional[Tuple[int, int, int]]]],
        grid: Optional[Any] = None,
        key: Optional[Any] = None,
    ) -> None: ...
    def call(self, *, inputs: Sequence[Any], grid: Optional[Any] = None, **kwargs: Any) -> List[Any]: ...
    def __call__(self, *, inputs: Sequence[Any], grid: Optional[Any] = None, **kwargs: Any) -> List[Any]: ...
    def best(self, *, inputs: Sequence[Any], **kwargs: Any) -> Dict[str, Any]: ...
    @property
    def configs(self) -> List[Dict[str, Any]]: ...
    @property
    def kernel(self) -> Any: ...
    @property
    def native(self) -> Kernel: ...
    @property
    def name(self) -> str: ...
    @property
    def input_names(self) -> List[str]: ...
    @property
    def output_names(self) -> List[str]: ...
    def config_ids(self) -> List[str]: ...

def _tuned_entry(tuned: _Tuned) -> Any:
    """``tuned``'s call as a function CPython calls through vectorcall."""
