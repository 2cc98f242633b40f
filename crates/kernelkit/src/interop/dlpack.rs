//! DLPack: arrays shared with PyTorch, CuPy, JAX, NumPy and every other
//! library that speaks it, without copies, in both directions.
//!
//! A small hand-written binding of `dlpack.h` (v1.1) rather than the
//! `dlpark` crate: the ABI is five `repr(C)` structs and two function
//! pointer types that have not changed since 1.0, the binding is checked
//! against the header's layout by tests, and it adds no dependency (and no
//! PyO3 version) to the library; the Python package hands these pointers
//! to its capsules itself.
//!
//! - Import: [`import`] (`DLManagedTensor`, the legacy struct) and
//!   [`import_versioned`] (`DLManagedTensorVersioned`, whose read-only
//!   flag makes a read-only array). The array owns the tensor: its deleter
//!   is called exactly once, when kernelkit's last array of it goes. Every
//!   dtype kernelkit has (bool, bfloat16 and complex64 included), strides
//!   (negative and zero too) and byte offsets are honoured; CPU memory
//!   (`kDLCPU`, and pinned or managed CUDA memory) on a CPU device, CUDA
//!   memory on the CUDA device of its ordinal.
//! - Export: [`export`] and [`export_versioned`] give a tensor that keeps a
//!   clone of the array (so its memory) until the consumer calls the
//!   deleter. Arrays that only borrow their memory ([`super::scope`])
//!   cannot be exported: a consumer could keep the pointer past the borrow.
//!
//! Streams are the caller's: an imported array is produced by the stream
//! given (the one the producer was asked to order its work before, in the
//! Python protocol's `__dlpack__(stream=...)`); an exported array's data
//! are ready once its producer stream's work is (`Array::wait`).

use std::ffi::c_void;

use crate::array::Array;
use crate::device::{Device, DeviceKind, Stream};
use crate::dtype::DType;
use crate::error::{ArrayError, Result};

use super::{foreign_array, ForeignLayout, ForeignOwner};

/// `DLDeviceType` values kernelkit reads or writes.
pub mod device_type {
    /// `kDLCPU`: host memory.
    pub const CPU: i32 = 1;
    /// `kDLCUDA`: CUDA device memory.
    pub const CUDA: i32 = 2;
    /// `kDLCUDAHost`: pinned host memory (`cudaMallocHost`).
    pub const CUDA_HOST: i32 = 3;
    /// `kDLCUDAManaged`: CUDA managed (unified) memory.
    pub const CUDA_MANAGED: i32 = 13;
}

/// `DLDataTypeCode` values.
pub mod type_code {
    /// `kDLInt`.
    pub const INT: u8 = 0;
    /// `kDLUInt`.
    pub const UINT: u8 = 1;
    /// `kDLFloat`.
    pub const FLOAT: u8 = 2;
    /// `kDLBfloat`.
    pub const BFLOAT: u8 = 4;
    /// `kDLComplex`.
    pub const COMPLEX: u8 = 5;
    /// `kDLBool`.
    pub const BOOL: u8 = 6;
}

/// `DLPACK_FLAG_BITMASK_READ_ONLY`: the consumer must not write.
pub const FLAG_READ_ONLY: u64 = 1;
/// `DLPACK_FLAG_BITMASK_IS_COPIED`: the producer copied the data.
pub const FLAG_IS_COPIED: u64 = 2;
/// The DLPack version this binding implements.
pub const VERSION: DLPackVersion = DLPackVersion { major: 1, minor: 1 };

/// `DLDevice`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DLDevice {
    /// A [`device_type`] value.
    pub device_type: i32,
    /// The device's ordinal.
    pub device_id: i32,
}

/// `DLDataType`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DLDataType {
    /// A [`type_code`] value.
    pub code: u8,
    /// Bits per lane.
    pub bits: u8,
    /// Lanes (1 for scalars; kernelkit takes no vector types).
    pub lanes: u16,
}

/// `DLTensor`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DLTensor {
    /// The allocation (see `byte_offset`).
    pub data: *mut c_void,
    /// Where it lives.
    pub device: DLDevice,
    /// Axes.
    pub ndim: i32,
    /// Element type.
    pub dtype: DLDataType,
    /// `ndim` extents.
    pub shape: *mut i64,
    /// `ndim` strides in elements, or null for row-major.
    pub strides: *mut i64,
    /// Bytes from `data` to element 0.
    pub byte_offset: u64,
}

/// `DLManagedTensor` (the legacy, unversioned struct).
#[repr(C)]
#[derive(Debug)]
pub struct DLManagedTensor {
    /// The tensor.
    pub dl_tensor: DLTensor,
    /// The producer's context.
    pub manager_ctx: *mut c_void,
    /// Frees the tensor; called once by its consumer.
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

/// `DLPackVersion`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DLPackVersion {
    /// Major version (1).
    pub major: u32,
    /// Minor version.
    pub minor: u32,
}

/// `DLManagedTensorVersioned`.
#[repr(C)]
#[derive(Debug)]
pub struct DLManagedTensorVersioned {
    /// The version the producer wrote.
    pub version: DLPackVersion,
    /// The producer's context.
    pub manager_ctx: *mut c_void,
    /// Frees the tensor; called once by its consumer.
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>,
    /// [`FLAG_READ_ONLY`], [`FLAG_IS_COPIED`].
    pub flags: u64,
    /// The tensor.
    pub dl_tensor: DLTensor,
}

/// The kernelkit dtype of a DLPack one.
pub fn dtype_of(t: DLDataType) -> Option<DType> {
    use type_code::*;
    if t.lanes != 1 {
        return None;
    }
    Some(match (t.code, t.bits) {
        (BOOL, 8) => DType::Bool,
        (UINT, 8) => DType::U8,
        (UINT, 16) => DType::U16,
        (UINT, 32) => DType::U32,
        (UINT, 64) => DType::U64,
        (INT, 8) => DType::I8,
        (INT, 16) => DType::I16,
        (INT, 32) => DType::I32,
        (INT, 64) => DType::I64,
        (FLOAT, 16) => DType::F16,
        (BFLOAT, 16) => DType::BF16,
        (FLOAT, 32) => DType::F32,
        (FLOAT, 64) => DType::F64,
        (COMPLEX, 64) => DType::Complex64,
        _ => return None,
    })
}

/// The DLPack dtype of a kernelkit one (every kernelkit dtype has one).
pub fn dl_dtype(dtype: DType) -> DLDataType {
    use type_code::*;
    let code = match dtype {
        DType::Bool => BOOL,
        DType::U8 | DType::U16 | DType::U32 | DType::U64 => UINT,
        DType::I8 | DType::I16 | DType::I32 | DType::I64 => INT,
        DType::BF16 => BFLOAT,
        DType::F16 | DType::F32 | DType::F64 => FLOAT,
        DType::Complex64 => COMPLEX,
    };
    DLDataType {
        code,
        bits: (dtype.size() * 8) as u8,
        lanes: 1,
    }
}

fn refuse(message: String) -> crate::Error {
    ArrayError::Foreign(format!("DLPack: {message}")).into()
}

/// Checks that memory of `dev` can be an array of `device`.
fn check_device(dev: DLDevice, device: &Device) -> Result<()> {
    use device_type::*;
    let host = matches!(device.kind(), DeviceKind::Cpu | DeviceKind::Null);
    let ok = match dev.device_type {
        CPU | CUDA_HOST => host,
        CUDA => {
            device.kind() == DeviceKind::Cuda && device.id().ordinal as i64 == dev.device_id as i64
        }
        CUDA_MANAGED => {
            host || (device.kind() == DeviceKind::Cuda
                && device.id().ordinal as i64 == dev.device_id as i64)
        }
        _ => false,
    };
    if ok {
        return Ok(());
    }
    Err(refuse(format!(
        "the tensor is on DLPack device type {} id {}, which is not {}",
        dev.device_type,
        dev.device_id,
        device.label()
    )))
}

/// An array over `t` (checked), kept by `owner`.
///
/// # Safety
///
/// As [`import`]: `t` is a live, valid tensor.
unsafe fn import_tensor(
    device: &Device,
    t: &DLTensor,
    read_only: bool,
    stream: Option<&Stream>,
    owner: ForeignOwner,
) -> Result<Array> {
    check_device(t.device, device)?;
    let dtype = dtype_of(t.dtype).ok_or_else(|| {
        refuse(format!(
            "dtype code {} with {} bits and {} lanes has no kernelkit dtype",
            t.dtype.code, t.dtype.bits, t.dtype.lanes
        ))
    })?;
    let ndim = usize::try_from(t.ndim)
        .ok()
        .filter(|&n| n <= 64)
        .ok_or_else(|| refuse(format!("{} axes (at most 64)", t.ndim)))?;
    if ndim > 0 && t.shape.is_null() {
        return Err(refuse("a null shape".into()));
    }
    let raw_shape: &[i64] = if ndim == 0 {
        &[]
    } else {
        // SAFETY: the tensor's contract: `shape` holds `ndim` extents.
        unsafe { std::slice::from_raw_parts(t.shape, ndim) }
    };
    let shape = raw_shape
        .iter()
        .map(|&d| usize::try_from(d))
        .collect::<Result<Vec<usize>, _>>()
        .map_err(|_| refuse(format!("negative extents in shape {raw_shape:?}")))?;
    let strides = if t.strides.is_null() || ndim == 0 {
        None
    } else {
        // SAFETY: as above, `strides` holds `ndim` strides when not null.
        let raw = unsafe { std::slice::from_raw_parts(t.strides, ndim) };
        Some(
            raw.iter()
                .map(|&s| isize::try_from(s))
                .collect::<Result<Vec<isize>, _>>()
                .map_err(|_| refuse(format!("strides {raw:?} overflow")))?,
        )
    };
    let data = (t.data as u64)
        .checked_add(t.byte_offset)
        .ok_or_else(|| refuse("the byte offset overflows the address".into()))?;
    let layout = ForeignLayout {
        data,
        dtype,
        shape: &shape,
        strides: strides.as_deref(),
        stream,
        read_only,
        device_known: false,
    };
    // SAFETY: the tensor's contract (the caller's): its memory is valid
    // until its deleter runs, which the owner does, once, when kernelkit's
    // last array goes.
    unsafe { foreign_array(device, layout, owner) }
}

/// A pointer that may move to the thread that drops the last array.
struct SendPtr<T>(*mut T);
// SAFETY: DLPack tensors may be freed from any thread (their deleter is
// the producer's, and the protocol allows any thread to call it); the
// pointer is only used to call it, once.
unsafe impl<T> Send for SendPtr<T> {}

/// An array over a `DLManagedTensor` (the legacy struct), on `device`,
/// produced by `stream` if given. No copy. On success the array owns the
/// tensor: its deleter is called exactly once, when kernelkit's last
/// array of it goes. On an error nothing is called: the tensor is still
/// the caller's.
///
/// # Safety
///
/// `tensor` points to a valid `DLManagedTensor` that nobody else will
/// delete, whose memory stays valid until its deleter runs, and that
/// [`foreign_array`]'s contract holds for (nothing writes it while
/// kernelkit reads it, except in `stream`'s order). Its deleter may be
/// called from any thread.
pub unsafe fn import(
    device: &Device,
    tensor: *mut DLManagedTensor,
    stream: Option<&Stream>,
) -> Result<Array> {
    if tensor.is_null() {
        return Err(refuse("a null DLManagedTensor".into()));
    }
    // SAFETY: the caller's contract: a valid tensor.
    let t = unsafe { &(*tensor).dl_tensor };
    let ptr = SendPtr(tensor);
    let owner = ForeignOwner::deleter(move || {
        let ptr = ptr;
        // SAFETY: the tensor is valid until this call, which is the one
        // call of its deleter (the owner runs once).
        if let Some(deleter) = unsafe { (*ptr.0).deleter } {
            unsafe { deleter(ptr.0) }
        }
    });
    // SAFETY: the caller's contract.
    unsafe { import_tensor(device, t, false, stream, owner) }
}

/// [`import`] for a `DLManagedTensorVersioned`: major version 1 only; a
/// tensor flagged read-only becomes a read-only array (refused as an
/// output).
///
/// # Safety
///
/// As [`import`].
pub unsafe fn import_versioned(
    device: &Device,
    tensor: *mut DLManagedTensorVersioned,
    stream: Option<&Stream>,
) -> Result<Array> {
    if tensor.is_null() {
        return Err(refuse("a null DLManagedTensorVersioned".into()));
    }
    // SAFETY: the caller's contract: a valid tensor.
    let managed = unsafe { &*tensor };
    if managed.version.major != VERSION.major {
        return Err(refuse(format!(
            "version {}.{} (kernelkit reads {}.x)",
            managed.version.major, managed.version.minor, VERSION.major
        )));
    }
    let read_only = managed.flags & FLAG_READ_ONLY != 0;
    let ptr = SendPtr(tensor);
    let owner = ForeignOwner::deleter(move || {
        let ptr = ptr;
        // SAFETY: as in `import`: the one call of the deleter.
        if let Some(deleter) = unsafe { (*ptr.0).deleter } {
            unsafe { deleter(ptr.0) }
        }
    });
    // SAFETY: the caller's contract.
    unsafe { import_tensor(device, &managed.dl_tensor, read_only, stream, owner) }
}

/// What an exported tensor keeps: the array (so its memory) and the
/// shape and strides the tensor points to.
struct Export<M> {
    managed: M,
    _array: Array,
    _shape: Vec<i64>,
    _strides: Vec<i64>,
}

/// The `DLTensor` of `array` (pointing into `shape` and `strides`), or why
/// it cannot be exported.
fn tensor_of(array: &Array, shape: &mut Vec<i64>, strides: &mut Vec<i64>) -> Result<DLTensor> {
    if array.foreign_mem().is_some_and(|m| m.lease.is_some()) {
        return Err(refuse(
            "the array borrows its memory for a scope; an exported tensor could outlive it".into(),
        ));
    }
    let device = array.device();
    let dev = match device.kind() {
        DeviceKind::Cpu | DeviceKind::Null => DLDevice {
            device_type: device_type::CPU,
            device_id: 0,
        },
        DeviceKind::Cuda => DLDevice {
            device_type: device_type::CUDA,
            device_id: device.id().ordinal as i32,
        },
    };
    *shape = array.shape().iter().map(|&d| d as i64).collect();
    *strides = array.strides().iter().map(|&s| s as i64).collect();
    Ok(DLTensor {
        data: array.storage.mem.addr as *mut c_void,
        device: dev,
        ndim: array.ndim() as i32,
        dtype: dl_dtype(array.dtype()),
        shape: shape.as_mut_ptr(),
        strides: strides.as_mut_ptr(),
        byte_offset: (array.offset() * array.dtype().size()) as u64,
    })
}

unsafe extern "C" fn delete_export(tensor: *mut DLManagedTensor) {
    if tensor.is_null() {
        return;
    }
    // SAFETY: `manager_ctx` is the `Box<Export<_>>` `export` leaked, and
    // the DLPack contract calls the deleter once.
    drop(unsafe { Box::from_raw((*tensor).manager_ctx.cast::<Export<DLManagedTensor>>()) });
}

unsafe extern "C" fn delete_export_versioned(tensor: *mut DLManagedTensorVersioned) {
    if tensor.is_null() {
        return;
    }
    // SAFETY: as `delete_export`.
    drop(unsafe {
        Box::from_raw(
            (*tensor)
                .manager_ctx
                .cast::<Export<DLManagedTensorVersioned>>(),
        )
    });
}

/// `array` as a `DLManagedTensor` (legacy) that keeps the array's memory
/// until the consumer calls its deleter (once). No copy. A read-only
/// array is refused (the legacy struct cannot say so: use
/// [`export_versioned`]), and so is one that borrows its memory.
pub fn export(array: &Array) -> Result<*mut DLManagedTensor> {
    if !array.is_writable() {
        return Err(refuse(
            "a read-only array needs the versioned struct's read-only flag".into(),
        ));
    }
    let (mut shape, mut strides) = (Vec::new(), Vec::new());
    let dl_tensor = tensor_of(array, &mut shape, &mut strides)?;
    let export = Box::new(Export {
        managed: DLManagedTensor {
            dl_tensor,
            manager_ctx: std::ptr::null_mut(),
            deleter: Some(delete_export),
        },
        _array: array.clone(),
        _shape: shape,
        _strides: strides,
    });
    let raw = Box::into_raw(export);
    // SAFETY: `raw` is the live box just leaked; its `managed` field is
    // the first field of a heap block that moves no more.
    unsafe {
        (*raw).managed.manager_ctx = raw.cast();
        Ok(&mut (*raw).managed)
    }
}

/// `array` as a `DLManagedTensorVersioned` (version 1.1), flagged
/// read-only when the array is; see [`export`].
pub fn export_versioned(array: &Array) -> Result<*mut DLManagedTensorVersioned> {
    let (mut shape, mut strides) = (Vec::new(), Vec::new());
    let dl_tensor = tensor_of(array, &mut shape, &mut strides)?;
    let flags = if array.is_writable() {
        0
    } else {
        FLAG_READ_ONLY
    };
    let export = Box::new(Export {
        managed: DLManagedTensorVersioned {
            version: VERSION,
            manager_ctx: std::ptr::null_mut(),
            deleter: Some(delete_export_versioned),
            flags,
            dl_tensor,
        },
        _array: array.clone(),
        _shape: shape,
        _strides: strides,
    });
    let raw = Box::into_raw(export);
    // SAFETY: as in `export`.
    unsafe {
        (*raw).managed.manager_ctx = raw.cast();
        Ok(&mut (*raw).managed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    /// The structs as `dlpack.h` lays them out on 64-bit targets.
    #[test]
    fn layouts_follow_the_header() {
        assert_eq!(size_of::<DLDevice>(), 8);
        assert_eq!(size_of::<DLDataType>(), 4);
        assert_eq!(offset_of!(DLTensor, device), 8);
        assert_eq!(offset_of!(DLTensor, ndim), 16);
        assert_eq!(offset_of!(DLTensor, dtype), 20);
        assert_eq!(offset_of!(DLTensor, shape), 24);
        assert_eq!(offset_of!(DLTensor, strides), 32);
        assert_eq!(offset_of!(DLTensor, byte_offset), 40);
        assert_eq!(size_of::<DLTensor>(), 48);
        assert_eq!(offset_of!(DLManagedTensor, manager_ctx), 48);
        assert_eq!(offset_of!(DLManagedTensor, deleter), 56);
        assert_eq!(offset_of!(DLManagedTensorVersioned, manager_ctx), 8);
        assert_eq!(offset_of!(DLManagedTensorVersioned, deleter), 16);
        assert_eq!(offset_of!(DLManagedTensorVersioned, flags), 24);
        assert_eq!(offset_of!(DLManagedTensorVersioned, dl_tensor), 32);
    }

    #[test]
    fn every_dtype_round_trips() {
        for d in DType::ALL {
            assert_eq!(dtype_of(dl_dtype(d)), Some(d), "{d}");
        }
        let vector = DLDataType {
            code: type_code::FLOAT,
            bits: 32,
            lanes: 4,
        };
        assert_eq!(dtype_of(vector), None);
    }
}
