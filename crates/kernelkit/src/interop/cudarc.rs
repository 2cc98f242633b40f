//! cudarc 0.19 (the version candle 0.11 uses too): its streams as
//! kernelkit [`Stream`]s, and its `CudaSlice`s and `CudaView`s as arrays,
//! borrowed for a [`Scope`].
//!
//! cudarc tracks the work on each slice with events (a write event that
//! readers wait for, a read event that writers wait for). kernelkit keeps
//! that bookkeeping right: every launch (and every copy) that uses a
//! cudarc array takes the slice's pointer through `device_ptr(&stream)`
//! (`device_ptr_mut` for an output) on the launch's stream, and holds the
//! guard it returns until the launch is queued, so cudarc records the
//! launch as it records its own work. That needs the launch's stream to
//! be cudarc's: a call with cudarc arrays runs on a stream made by
//! [`stream`], by default the first array's own.

use std::marker::PhantomData;
use std::sync::{Arc, Mutex};

use cudarc::driver::{CudaSlice, CudaStream, CudaView, DevicePtr, DevicePtrMut};

use super::scope::writable;
use super::Scope;
use crate::array::foreign;
use crate::array::Array;
use crate::backend::foreign::ForeignAccess;
use crate::backend::ForeignStream;
use crate::device::{Device, Stream};
use crate::dtype::Element;
use crate::error::{ArrayError, Result};

/// A kernelkit stream over a cudarc stream of `device`: kernels queue in
/// order with the work cudarc (or candle) queues on it, without a
/// synchronize. kernelkit keeps the `Arc` and never destroys the stream.
/// A stream of another device's context is refused.
pub fn stream(device: &Device, stream: Arc<CudaStream>) -> Result<Stream> {
    Stream::wrap(device, ForeignStream::Cudarc(stream))
}

/// A cudarc slice or view borrowed for a scope, read through
/// `device_ptr`.
struct Reader<T, S> {
    source: *const S,
    _element: PhantomData<fn() -> T>,
}

// SAFETY: the pointer is dereferenced only while the scope's lease is
// entered (see `around`), as a shared reference to a cudarc slice or view,
// which cudarc makes `Sync`; the scope's borrow (`&'env S`) allows sharing.
unsafe impl<T, S: Sync> Send for Reader<T, S> {}
// SAFETY: as above.
unsafe impl<T, S: Sync> Sync for Reader<T, S> {}

impl<T: 'static, S: DevicePtr<T> + Sync + 'static> ForeignAccess for Reader<T, S> {
    fn around(
        &self,
        stream: &Arc<CudaStream>,
        _write: bool,
        launch: &mut dyn FnMut() -> Result<()>,
    ) -> Result<()> {
        // SAFETY: kernelkit calls this only while the array's lease is
        // entered, and the scope that borrowed `source` for `'env` revokes
        // the lease (waiting for this call) before `'env` ends.
        let source = unsafe { &*self.source };
        // cudarc makes `stream` wait for the last write, and records this
        // read when the guard goes, after the launch is queued.
        let (_ptr, _record) = source.device_ptr(stream);
        launch()
    }
}

/// A cudarc slice borrowed mutably for a scope: read through `device_ptr`,
/// written through `device_ptr_mut`.
struct Writer<T> {
    slice: Mutex<*mut CudaSlice<T>>,
}

// SAFETY: the pointer comes from a `&'env mut CudaSlice<T>` the scope holds
// exclusively; it is dereferenced only under the mutex (one launch at a
// time) and only while the scope's lease is entered.
unsafe impl<T> Send for Writer<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for Writer<T> {}

impl<T: 'static> ForeignAccess for Writer<T> {
    fn around(
        &self,
        stream: &Arc<CudaStream>,
        write: bool,
        launch: &mut dyn FnMut() -> Result<()>,
    ) -> Result<()> {
        let mut guard = self.slice.lock().unwrap_or_else(|p| p.into_inner());
        // SAFETY: see `Reader::around`; the mutex makes this the only
        // reference while it is held.
        let slice = unsafe { &mut **guard };
        if write {
            let (_ptr, _record) = slice.device_ptr_mut(stream);
            launch()
        } else {
            let (_ptr, _record) = slice.device_ptr(stream);
            launch()
        }
    }
}

/// The address of `source`'s first element, read through cudarc on its
/// own stream (the guard records nothing new for work not yet queued).
fn address<T, S: DevicePtr<T>>(source: &S) -> u64 {
    let (ptr, record) = source.device_ptr(source.stream());
    drop(record);
    ptr
}

impl<'scope, 'env> Scope<'scope, 'env> {
    /// A read-only view of a cudarc slice on `device`, row-major in
    /// `shape` (at most `slice.len()` elements): no copy. Produced by the
    /// slice's own stream, where calls that name no stream run.
    pub fn cuda_slice<T: Element>(
        &'scope self,
        device: &Device,
        slice: &'env CudaSlice<T>,
        shape: impl IntoIterator<Item = usize>,
    ) -> Result<Array> {
        let shape: Vec<usize> = shape.into_iter().collect();
        let hook = Reader::<T, CudaSlice<T>> {
            source: slice,
            _element: PhantomData,
        };
        self.cuda_view_of(device, slice, &shape, true, Box::new(hook))
    }

    /// A read-only view of a cudarc view (a part of a slice), as
    /// [`Scope::cuda_slice`].
    pub fn cuda_view<'v: 'env, T: Element>(
        &'scope self,
        device: &Device,
        view: &'env CudaView<'v, T>,
        shape: impl IntoIterator<Item = usize>,
    ) -> Result<Array> {
        let shape: Vec<usize> = shape.into_iter().collect();
        // The view's lifetime is erased: it is used only while the lease
        // is entered, within `'env` (see `Reader::around`).
        let source = std::ptr::from_ref(view).cast::<CudaView<'static, T>>();
        let hook = Reader::<T, CudaView<'static, T>> {
            source,
            _element: PhantomData,
        };
        self.cuda_view_of(device, view, &shape, true, Box::new(hook))
    }

    /// A writable view of a cudarc slice, as [`Scope::cuda_slice`]: an
    /// output written into it (`output_into`) is written in place, through
    /// `device_ptr_mut`. Not for `bool` (see [`Scope::slice_mut`]).
    pub fn cuda_slice_mut<T: Element>(
        &'scope self,
        device: &Device,
        slice: &'env mut CudaSlice<T>,
        shape: impl IntoIterator<Item = usize>,
    ) -> Result<Array> {
        writable::<T>()?;
        let shape: Vec<usize> = shape.into_iter().collect();
        let (addr, len, home) = (address(&*slice), slice.len(), slice.stream().clone());
        let hook = Writer::<T> {
            slice: Mutex::new(slice),
        };
        self.cuda_array::<T>(device, addr, len, home, &shape, false, Box::new(hook))
    }

    fn cuda_view_of<T: Element, S: DevicePtr<T>>(
        &'scope self,
        device: &Device,
        source: &S,
        shape: &[usize],
        read_only: bool,
        hook: Box<dyn ForeignAccess>,
    ) -> Result<Array> {
        let (addr, len, home) = (address(source), source.len(), source.stream().clone());
        self.cuda_array::<T>(device, addr, len, home, shape, read_only, hook)
    }

    #[allow(clippy::too_many_arguments)]
    fn cuda_array<T: Element>(
        &'scope self,
        device: &Device,
        addr: u64,
        len: usize,
        home: Arc<CudaStream>,
        shape: &[usize],
        read_only: bool,
        hook: Box<dyn ForeignAccess>,
    ) -> Result<Array> {
        let described = foreign::describe(addr, T::DTYPE, shape, None)?;
        if described.len > len * T::DTYPE.size() {
            return Err(ArrayError::Foreign(format!(
                "shape {shape:?} holds more than the slice's {len} elements"
            ))
            .into());
        }
        let home = stream(device, home)?;
        self.view_with(
            device,
            described,
            T::DTYPE,
            read_only,
            Some(&home),
            |mut source| {
                source.access = Some(hook);
                source
            },
        )
    }
}
