//! A torch tensor's layout and torch's current CUDA stream read through
//! torch's own C functions, not through Python calls.
//!
//! Five method calls per tensor (`dtype`, `get_device()`, `data_ptr()`,
//! `shape`, `stride()`) cost more than the rest of a warm `out=` call
//! together: each builds Python objects (a `torch.Size`, a tuple, ints) for
//! this crate to take apart again. torch exports, for AOTInductor's
//! compiled models, a stable C interface to tensors (`aoti_torch_get_*` in
//! `libtorch_cpu`, `aoti_torch_get_current_cuda_stream` in
//! `libtorch_cuda`; `torch/csrc/inductor/aoti_torch/c/shim.h`): they take an
//! `AtenTensorHandle`, the address of an `at::Tensor`, which is one pointer
//! to the tensor's `TensorImpl`. A tensor's `_cdata` attribute is that
//! pointer, and a `torch.Tensor`'s object holds it at an offset this crate
//! finds once (`crate::ffi::tensor_impl_slot`). So a read here is one word read (an
//! attribute read for a subclass) and eight C calls that write into this
//! crate's memory.
//!
//! What this relies on, all of it checked before first use:
//! - torch's libraries are already loaded (opened with `RTLD_NOLOAD`: never
//!   a second copy) and export the functions (torch 2.3 and later);
//! - `at::Tensor` is one `TensorImpl` pointer (its `intrusive_ptr`, the
//!   foundation of torch's C++ ABI), so a handle can point at a copy of
//!   `_cdata`;
//! - the reads agree with the methods' on a probe tensor (a strided
//!   `int16` view at an offset) when the module is first set up.
//!
//! Anything else makes [`Shim::read`] answer `None`, and the caller reads the
//! tensor through its methods, which also word the errors (a sparse tensor,
//! a dtype kernelkit lacks, a device of another kind).
//! A tensor whose memory is not its value (a lazily conjugated or negated
//! view) or lies outside its storage is answered `None` too.
//! A test hook turns the shim off (`_testing.torch_shim(False)`), so that
//! tests and benchmarks compare both reads.

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};

use kernelkit::DType;
use libloading::os::unix::{Library, Symbol, RTLD_LAZY, RTLD_LOCAL};
use pyo3::intern;
use pyo3::prelude::*;
use smallvec::SmallVec;

use crate::device::Place;
use crate::ffi::tensor_impl_slot::Slot;

/// A tensor's layout, as a call reads it (here or through its methods,
/// `crate::torch`).
#[derive(Clone, PartialEq)]
pub(crate) struct Tensor {
    /// Element 0's address.
    pub data: u64,
    /// The CPU, or the CUDA device of this ordinal.
    pub place: Place,
    pub dtype: DType,
    pub shape: SmallVec<[usize; 4]>,
    /// In elements.
    pub strides: SmallVec<[isize; 4]>,
}

/// A tensor's layout as torch's functions give it ([`Shim::raw`]): the
/// size and stride arrays are the tensor's own, not copied.
pub(crate) struct Raw<'t> {
    pub data: u64,
    pub place: Place,
    pub dtype: DType,
    pub shape: &'t [i64],
    pub strides: &'t [i64],
}

/// Whether every element of a tensor of `shape` and `strides` (in
/// elements, none negative: torch's), starting `offset` elements into its
/// storage of `bytes` bytes, lies inside that storage. A tensor with no
/// element reads nothing. A storage freed in place (resized to 0, as FSDP
/// frees parameters) or never allocated (a fake tensor's) holds no element.
pub(crate) fn inside_storage(
    shape: &[i64],
    strides: &[i64],
    offset: i64,
    bytes: i64,
    itemsize: usize,
) -> bool {
    if shape.contains(&0) {
        return true;
    }
    let mut last = offset;
    for (&n, &s) in shape.iter().zip(strides) {
        if n < 0 || s < 0 {
            return false;
        }
        let Some(end) = (n - 1).checked_mul(s).and_then(|e| last.checked_add(e)) else {
            return false;
        };
        last = end;
    }
    offset >= 0
        && last
            .checked_add(1)
            .and_then(|n| n.checked_mul(itemsize as i64))
            .is_some_and(|end| end <= bytes)
}

/// `dlopen`'s flag for "only if already loaded" (glibc's value; libloading
/// has no constant for it).
const RTLD_NOLOAD: i32 = 0x4;

/// Dtype codes looked up (c10's `ScalarType`s kernelkit has are 0 to 29;
/// a torch that numbered one past this would have it read by the methods).
const CODES: usize = 48;

/// An `AtenTensorHandle`: the address of an `at::Tensor`.
type Handle = *const u64;
type Get<T> = unsafe extern "C" fn(Handle, *mut T) -> i32;
type Code = unsafe extern "C" fn() -> i32;
type CurrentStream = unsafe extern "C" fn(i32, *mut *mut c_void) -> i32;
/// A question about a tensor that cannot fail (`bool f(const at::Tensor&)`).
type Query = unsafe extern "C" fn(Handle) -> bool;
/// `c10::TensorImpl::requires_grad() const`: its `this` is the `TensorImpl`.
type RequiresGrad = unsafe extern "C" fn(*const c_void) -> bool;
/// `void torch::autograd::impl::bump_version(const at::Tensor&)`.
type Bump = unsafe extern "C" fn(Handle);
type GradMode = unsafe extern "C" fn() -> bool;

/// torch's C++ functions the shim calls beside its C interface (their
/// Itanium-mangled names: `at::native::is_conj(const at::Tensor&)` and so
/// on). None of them throws: `bump_version` only for an inference tensor,
/// which is never handed to it ([`Shim::bump_version`]).
const IS_CONJ: &str = "_ZN2at6native7is_conjERKNS_6TensorE";
const IS_NEG: &str = "_ZN2at6native6is_negERKNS_6TensorE";
const IS_INFERENCE: &str = "_ZN2at6native12is_inferenceERKNS_6TensorE";
const REQUIRES_GRAD: &str = "_ZNK3c1010TensorImpl13requires_gradEv";
const BUMP_VERSION: &str = "_ZN5torch8autograd4impl12bump_versionERKN2at6TensorE";

/// torch's functions, and the codes they answer in.
pub(crate) struct Shim {
    data_ptr: Get<*mut c_void>,
    dim: Get<i64>,
    sizes: Get<*const i64>,
    strides: Get<*const i64>,
    dtype: Get<i32>,
    device_type: Get<i32>,
    device_index: Get<i32>,
    layout: Get<i32>,
    storage_size: Get<i64>,
    storage_offset: Get<i64>,
    is_conj: Query,
    is_neg: Query,
    is_inference: Query,
    requires_grad: RequiresGrad,
    bump_version: Bump,
    grad_mode: GradMode,
    current_stream: Option<CurrentStream>,
    strided: i32,
    cpu: i32,
    cuda: i32,
    /// The kernelkit dtype of each of torch's dtype codes below
    /// [`CODES`], where kernelkit has it.
    dtypes: [Option<DType>; CODES],
    /// Where a `torch.Tensor` keeps its `TensorImpl` address, when found
    /// (`crate::ffi::tensor_impl_slot`); else `_cdata` is read as an attribute.
    slot: Option<Slot>,
    /// The libraries, kept open (they were loaded by torch: this holds a
    /// reference, never a second copy).
    _libraries: (Library, Option<Library>),
}

/// Off for this process ([`set_enabled`], a test hook's).
static OFF: AtomicBool = AtomicBool::new(false);

/// Turns the shim on or off (benchmarks and tests compare both reads).
pub(crate) fn set_enabled(on: bool) {
    OFF.store(!on, Ordering::Relaxed);
}

/// Whether the shim is turned on (it may still be absent).
pub(crate) fn enabled() -> bool {
    !OFF.load(Ordering::Relaxed)
}

/// Copies a function pointer out of `lib`.
///
/// # Safety
/// `T` must be the function's true type.
unsafe fn symbol<T: Copy>(lib: &Library, name: &str) -> Option<T> {
    // SAFETY: the caller names the type; the pointer is copied out, and the
    // library stays open as long as the `Shim` holding the copy.
    let s: Symbol<T> = unsafe { lib.get(name.as_bytes()) }.ok()?;
    Some(*s)
}

impl Shim {
    /// torch's shim from the libraries torch loaded (found beside
    /// `torch/__init__.py`, else by name), when they have it. Not checked
    /// yet: see [`Shim::agrees`].
    pub(crate) fn open(torch: &Bound<'_, PyAny>) -> Option<Shim> {
        let file: String = torch.getattr("__file__").ok()?.extract().ok()?;
        let lib_dir = std::path::Path::new(&file).parent()?.join("lib");
        // Beside torch first (pip's wheels); else by name, which finds the
        // library wherever torch's loader took it from (conda's `lib/`).
        let open = |name: &str| {
            let flags = RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD;
            // SAFETY: RTLD_NOLOAD opens nothing new: only a library torch
            // already loaded (its initialisers have run) is referenced.
            unsafe { Library::open(Some(lib_dir.join(name)), flags) }
                .or_else(|_| unsafe { Library::open(Some(name), flags) })
                .ok()
        };
        let cpu_lib = open("libtorch_cpu.so")?;
        let cuda_lib = open("libtorch_cuda.so");
        // SAFETY: the types are those of torch's `aoti_torch/c/shim.h`:
        // `AOTITorchError f(AtenTensorHandle, T*)` with AOTITorchError an
        // int32_t, `int32_t f()` for the codes, `bool f()` for the grad
        // mode; and, for the C++ functions, the Itanium ABI's: a
        // `const at::Tensor&` is the handle, a `const` method's `this` the
        // `TensorImpl`'s address.
        unsafe {
            let code = |name: &str| symbol::<Code>(&cpu_lib, name).map(|f| f());
            let mut dtypes = [None; CODES];
            for &d in &DType::ALL {
                let c = code(&format!("aoti_torch_dtype_{}", d.name()));
                if let Some(slot) = c.and_then(|c| dtypes.get_mut(usize::try_from(c).ok()?)) {
                    *slot = Some(d);
                }
            }
            Some(Shim {
                data_ptr: symbol(&cpu_lib, "aoti_torch_get_data_ptr")?,
                dim: symbol(&cpu_lib, "aoti_torch_get_dim")?,
                sizes: symbol(&cpu_lib, "aoti_torch_get_sizes")?,
                strides: symbol(&cpu_lib, "aoti_torch_get_strides")?,
                dtype: symbol(&cpu_lib, "aoti_torch_get_dtype")?,
                device_type: symbol(&cpu_lib, "aoti_torch_get_device_type")?,
                device_index: symbol(&cpu_lib, "aoti_torch_get_device_index")?,
                layout: symbol(&cpu_lib, "aoti_torch_get_layout")?,
                storage_size: symbol(&cpu_lib, "aoti_torch_get_storage_size")?,
                storage_offset: symbol(&cpu_lib, "aoti_torch_get_storage_offset")?,
                is_conj: symbol(&cpu_lib, IS_CONJ)?,
                is_neg: symbol(&cpu_lib, IS_NEG)?,
                is_inference: symbol(&cpu_lib, IS_INFERENCE)?,
                requires_grad: symbol(&cpu_lib, REQUIRES_GRAD)?,
                bump_version: symbol(&cpu_lib, BUMP_VERSION)?,
                grad_mode: symbol(&cpu_lib, "aoti_torch_grad_mode_is_enabled")?,
                current_stream: cuda_lib
                    .as_ref()
                    .and_then(|l| symbol(l, "aoti_torch_get_current_cuda_stream")),
                strided: code("aoti_torch_layout_strided")?,
                cpu: code("aoti_torch_device_type_cpu")?,
                cuda: code("aoti_torch_device_type_cuda")?,
                dtypes,
                slot: None,
                _libraries: (cpu_lib, cuda_lib),
            })
        }
    }

    /// Whether the shim reads `probe` (a tensor) as its methods do.
    pub(crate) fn agrees(&self, probe: &Bound<'_, PyAny>, by_methods: &Tensor) -> bool {
        self.read(probe).as_ref() == Some(by_methods)
    }

    /// Reads `torch.Tensor`s' `TensorImpl` addresses from `slot` (checked
    /// by [`Shim::agrees`] like the rest of the shim).
    pub(crate) fn with_slot(self, slot: Option<Slot>) -> Shim {
        Shim { slot, ..self }
    }

    /// Whether `torch.Tensor`s are read without their `_cdata` attribute.
    pub(crate) fn has_slot(&self) -> bool {
        self.slot.is_some()
    }

    /// The `TensorImpl` address of `t` (a tensor).
    #[inline]
    fn impl_of(&self, t: &Bound<'_, PyAny>) -> Option<u64> {
        if let Some(address) = self.slot.and_then(|s| s.read(t)) {
            return Some(address);
        }
        t.getattr(intern!(t.py(), "_cdata")).ok()?.extract().ok()
    }

    /// `t`'s layout, or `None` for anything the methods must read (and
    /// word the error for).
    pub(crate) fn read(&self, t: &Bound<'_, PyAny>) -> Option<Tensor> {
        // SAFETY: the arrays are copied out before anything else runs.
        let raw = unsafe { self.raw(t) }?;
        let mut shape = SmallVec::with_capacity(raw.shape.len());
        for &s in raw.shape {
            shape.push(usize::try_from(s).ok()?);
        }
        let mut strides = SmallVec::with_capacity(raw.strides.len());
        for &s in raw.strides {
            strides.push(isize::try_from(s).ok()?);
        }
        Some(Tensor {
            data: raw.data,
            place: raw.place,
            dtype: raw.dtype,
            shape,
            strides,
        })
    }

    /// `t`'s layout as torch's functions give it, nothing copied; `None`
    /// where [`Shim::read`] answers `None`.
    ///
    /// # Safety
    /// The size and stride arrays are the tensor's own: the caller must be
    /// done with them before any Python code can run (which could resize
    /// the tensor in place), holding `t` and the GIL meanwhile.
    #[inline]
    pub(crate) unsafe fn raw<'t>(&self, t: &'t Bound<'_, PyAny>) -> Option<Raw<'t>> {
        // SAFETY: the caller's contract.
        unsafe { self.layout_at(self.impl_of(t)?) }
    }

    /// [`Shim::raw`] for a tensor whose `TensorImpl` address is read from
    /// its object's memory ([`Slot`]); `None` for any other (whose
    /// `_cdata` attribute could run Python code).
    ///
    /// # Safety
    /// As [`Shim::raw`]'s.
    #[inline]
    pub(crate) unsafe fn raw_in_place<'t>(&self, t: &'t Bound<'_, PyAny>) -> Option<Raw<'t>> {
        // SAFETY: the caller's contract.
        unsafe { self.layout_at(self.slot?.read(t)?) }
    }

    /// The layout of the tensor whose `TensorImpl` is at `tensor_impl`.
    ///
    /// # Safety
    /// `tensor_impl` must be a live tensor's, and the arrays are used as
    /// [`Shim::raw`]'s contract says.
    #[inline]
    unsafe fn layout_at<'t>(&self, tensor_impl: u64) -> Option<Raw<'t>> {
        let h: Handle = &tensor_impl;
        let ok = |rc: i32| (rc == 0).then_some(());
        // SAFETY: `h` points at a copy of the tensor's `at::Tensor` (one
        // `TensorImpl` pointer, see the module's doc), alive while the
        // tensor is, which the caller holds; each function only reads
        // through it and writes its answer into the local it is given. The
        // size and stride arrays are the tensor's own, `dim` long, used as
        // the caller's contract says.
        unsafe {
            let mut layout = 0;
            ok((self.layout)(h, &mut layout))?;
            if layout != self.strided {
                return None;
            }
            let mut code = 0;
            ok((self.dtype)(h, &mut code))?;
            let dtype = (*self.dtypes.get(usize::try_from(code).ok()?)?)?;
            let (mut kind, mut index) = (0, 0);
            ok((self.device_type)(h, &mut kind))?;
            ok((self.device_index)(h, &mut index))?;
            let place = if kind == self.cuda {
                Place::Cuda(u32::try_from(index).ok()?)
            } else if kind == self.cpu {
                Place::Cpu
            } else {
                return None;
            };
            let mut dim = 0;
            ok((self.dim)(h, &mut dim))?;
            let dim = usize::try_from(dim).ok()?;
            let (mut sizes, mut strides) = (std::ptr::null(), std::ptr::null());
            ok((self.sizes)(h, &mut sizes))?;
            ok((self.strides)(h, &mut strides))?;
            let mut data = std::ptr::null_mut();
            ok((self.data_ptr)(h, &mut data))?;
            // A lazily conjugated or negated view: its memory is not its
            // value (the methods' read resolves or refuses it).
            if (self.is_conj)(h) || (self.is_neg)(h) {
                return None;
            }
            let (shape, strides) = if dim == 0 {
                (&[][..], &[][..])
            } else if sizes.is_null() || strides.is_null() {
                return None;
            } else {
                (
                    std::slice::from_raw_parts(sizes, dim),
                    std::slice::from_raw_parts(strides, dim),
                )
            };
            let (mut offset, mut bytes) = (0, 0);
            ok((self.storage_offset)(h, &mut offset))?;
            ok((self.storage_size)(h, &mut bytes))?;
            if !inside_storage(shape, strides, offset, bytes, dtype.size()) {
                return None;
            }
            Some(Raw {
                data: data as u64,
                place,
                dtype,
                shape,
                strides,
            })
        }
    }

    /// Whether `t` (a tensor) may be written by a call: not while it
    /// requires grad with grad mode on, as torch's `out=` functions refuse
    /// (autograd cannot see the write). `None` where the shim cannot read it.
    pub(crate) fn may_write(&self, t: &Bound<'_, PyAny>) -> Option<bool> {
        let tensor_impl = self.impl_of(t)?;
        // SAFETY: `requires_grad` reads the live `TensorImpl` (its
        // `this`), `grad_mode` a thread-local flag; neither throws.
        Some(unsafe { !((self.grad_mode)() && (self.requires_grad)(tensor_impl as *const c_void)) })
    }

    /// Counts a write into `t` (a tensor) in its version counter, as
    /// torch's in-place functions do, so that autograd refuses a backward
    /// through a graph that saved the old values. An inference tensor has
    /// no counter and is left as it is. `false` where the shim cannot read
    /// `t`.
    pub(crate) fn bump_version(&self, t: &Bound<'_, PyAny>) -> bool {
        let Some(tensor_impl) = self.impl_of(t) else {
            return false;
        };
        let h: Handle = &tensor_impl;
        // SAFETY: `h` points at a copy of the live tensor's `at::Tensor`
        // (see `layout_at`); `bump_version` throws only for an inference
        // tensor, which is asked first and skipped.
        unsafe {
            if !(self.is_inference)(h) {
                (self.bump_version)(h);
            }
        }
        true
    }

    /// The address of element 0 of `t` (a `torch.Tensor`).
    pub(crate) fn data_ptr(&self, t: &Bound<'_, PyAny>) -> Option<u64> {
        let tensor_impl = self.impl_of(t)?;
        let mut data = std::ptr::null_mut();
        // SAFETY: as in `read`.
        let rc = unsafe { (self.data_ptr)(&tensor_impl, &mut data) };
        (rc == 0).then_some(data as u64)
    }

    /// torch's current stream on CUDA device `ordinal` (what
    /// `torch.cuda.current_stream(ordinal).cuda_stream` is).
    pub(crate) fn current_stream(&self, ordinal: u32) -> Option<u64> {
        let f = self.current_stream?;
        let mut stream = std::ptr::null_mut();
        // SAFETY: `int32_t f(int32_t device_index, void** ret_stream)`,
        // writing one pointer into the local.
        let rc = unsafe { f(i32::try_from(ordinal).ok()?, &mut stream) };
        (rc == 0).then_some(stream as u64)
    }
}
