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
        let home = stream(device, slice.stream().clone())?;
        self.cuda_slice_mut_on(&home, slice, shape)
    }

    /// A read-only strided view of a cudarc slice: element 0 at
    /// `slice[offset]`, `strides` in elements (negative and zero allowed),
    /// every element it reaches inside the slice. No copy: a transposed or
    /// sliced tensor is read in place. Produced by `home`, a stream from
    /// [`stream`] over the slice's own cudarc stream (an error otherwise):
    /// arrays that share `home` with the call's stream are ordered on it
    /// without waits, as candle's own kernels are.
    pub fn cuda_strided<T: Element>(
        &'scope self,
        home: &Stream,
        slice: &'env CudaSlice<T>,
        shape: &[usize],
        strides: &[isize],
        offset: usize,
    ) -> Result<Array> {
        let hook = Reader::<T, CudaSlice<T>> {
            source: slice,
            _element: PhantomData,
        };
        let at = Place {
            addr: address(slice),
            len: slice.len(),
            strides: Some(strides),
            offset,
        };
        self.cuda_array::<T>(home, slice.stream(), at, shape, true, Box::new(hook))
    }

    /// A writable row-major view of a cudarc slice (as
    /// [`Scope::cuda_slice_mut`]), produced by `home` (as
    /// [`Scope::cuda_strided`]).
    pub fn cuda_slice_mut_on<T: Element>(
        &'scope self,
        home: &Stream,
        slice: &'env mut CudaSlice<T>,
        shape: impl IntoIterator<Item = usize>,
    ) -> Result<Array> {
        writable::<T>()?;
        let shape: Vec<usize> = shape.into_iter().collect();
        let at = Place {
            addr: address(&*slice),
            len: slice.len(),
            strides: None,
            offset: 0,
        };
        let own = slice.stream().clone();
        let hook = Writer::<T> {
            slice: Mutex::new(slice),
        };
        self.cuda_array::<T>(home, &own, at, &shape, false, Box::new(hook))
    }

    fn cuda_view_of<T: Element, S: DevicePtr<T>>(
        &'scope self,
        device: &Device,
        source: &S,
        shape: &[usize],
        read_only: bool,
        hook: Box<dyn ForeignAccess>,
    ) -> Result<Array> {
        let home = stream(device, source.stream().clone())?;
        let at = Place {
            addr: address(source),
            len: source.len(),
            strides: None,
            offset: 0,
        };
        self.cuda_array::<T>(&home, source.stream(), at, shape, read_only, hook)
    }

    /// An array over cudarc memory at `at`, checked to stay inside it,
    /// produced by `home` (which must be `own`, the memory's cudarc stream).
    fn cuda_array<T: Element>(
        &'scope self,
        home: &Stream,
        own: &Arc<CudaStream>,
        at: Place<'_>,
        shape: &[usize],
        read_only: bool,
        hook: Box<dyn ForeignAccess>,
    ) -> Result<Array> {
        let same = home
            .handle()
            .cuda()
            .and_then(|s| s.cudarc())
            .is_some_and(|s| Arc::ptr_eq(s, own));
        if !same {
            return Err(ArrayError::Foreign(
                "the stream given is not a kernelkit stream over the slice's own cudarc stream \
                 (make it with `interop::cudarc::stream(device, slice.stream().clone())`)"
                    .into(),
            )
            .into());
        }
        let size = T::DTYPE.size();
        let data = at.addr + (at.offset.min(at.len) * size) as u64;
        let described = foreign::describe(data, T::DTYPE, shape, at.strides)?;
        let end = at.addr + (at.len * size) as u64;
        let inside = described.len == 0
            || (at.offset <= at.len
                && described.base >= at.addr
                && described.base + described.len as u64 <= end);
        if !inside {
            return Err(ArrayError::Foreign(format!(
                "shape {shape:?} with strides {:?} at offset {} reaches outside the slice's {} \
                 elements",
                at.strides.map(|s| s.to_vec()).unwrap_or_default(),
                at.offset,
                at.len
            ))
            .into());
        }
        self.view_with(
            home.device(),
            described,
            T::DTYPE,
            read_only,
            Some(home),
            |mut source| {
                source.access = Some(hook);
                source
            },
        )
    }
}

/// Where a view lies in a cudarc slice: the slice's first element's
/// address and length, the view's strides (`None`: row-major) and offset,
/// in elements.
struct Place<'a> {
    addr: u64,
    len: usize,
    strides: Option<&'a [isize]>,
    offset: usize,
}
