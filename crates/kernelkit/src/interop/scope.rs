//! Borrowed arrays: views of memory the caller keeps, for the length of a
//! closure ([`scope`]).
//!
//! A view is an ordinary [`Array`]; what makes it safe is that the scope,
//! not the view, decides when the borrow ends. When the closure returns
//! (or unwinds), every view it made is revoked: new uses are refused and
//! uses in progress are waited for. A view's clone that escaped the
//! closure (into a struct, another thread, `mem::forget`) is an error to
//! use, never a read of memory the caller has since freed or changed:
//! unlike a guard whose `Drop` would end the borrow, the scope cannot be
//! leaked.

use std::marker::PhantomData;
use std::sync::{Arc, Mutex};

use crate::array::foreign::{self, Source};
use crate::array::Array;
use crate::backend::foreign::{ForeignOwner, Lease};
use crate::device::Device;
use crate::dtype::{DType, Element};
use crate::error::{ArrayError, Result};

/// Borrows made inside [`scope`]'s closure; see the module documentation.
///
/// `'env` is the borrowed data's lifetime (it outlives the scope); the
/// scope is `Sync`, so threads spawned inside the closure may make views
/// too.
pub struct Scope<'scope, 'env: 'scope> {
    leases: Mutex<Vec<Arc<Lease>>>,
    /// Invariant in both, as `std::thread::Scope`: a borrow cannot be made
    /// longer or shorter than the scope says.
    _scope: PhantomData<&'scope mut &'scope ()>,
    _env: PhantomData<&'env mut &'env ()>,
}

/// Runs `f` with a [`Scope`] whose views of borrowed memory end when `f`
/// returns.
///
/// ```
/// use kernelkit::{interop, Device, Kernel};
/// # fn main() -> kernelkit::Result<()> {
/// let device = Device::cpu();
/// let kernel = Kernel::builder("twice")
///     .inputs(["x"])
///     .outputs(["y"])
///     .source("uint i = thread_position_in_grid.x; y[i] = 2 * x[i];")
///     .build()?;
/// let x = vec![1.0f32, 2.0, 3.0];
/// let mut y = vec![0.0f32; 3];
/// interop::scope(|s| {
///     let xs = s.slice(&device, &x, [3])?;
///     let ys = s.slice_mut(&device, &mut y, [3])?;
///     kernel.call([&xs]).output_into(&ys).grid([3, 1, 1]).launch()?;
///     Ok::<_, kernelkit::Error>(())
/// })?;
/// assert_eq!(y, [2.0, 4.0, 6.0]); // written in place, no copy
/// # Ok(()) }
/// ```
pub fn scope<'env, R>(f: impl for<'scope> FnOnce(&'scope Scope<'scope, 'env>) -> R) -> R {
    let scope = Scope {
        leases: Mutex::new(Vec::new()),
        _scope: PhantomData,
        _env: PhantomData,
    };
    /// Revokes the scope's borrows when `scope` returns or unwinds.
    struct End<'a, 'scope, 'env>(&'a Scope<'scope, 'env>);
    impl Drop for End<'_, '_, '_> {
        fn drop(&mut self) {
            let leases =
                std::mem::take(&mut *self.0.leases.lock().unwrap_or_else(|p| p.into_inner()));
            for lease in leases {
                lease.revoke();
            }
        }
    }
    let end = End(&scope);
    let out = f(end.0);
    drop(end);
    out
}

impl<'scope, 'env> Scope<'scope, 'env> {
    /// A new lease, revoked when the scope ends.
    pub(crate) fn lease(&'scope self) -> Arc<Lease> {
        let lease = Arc::new(Lease::default());
        self.leases
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(lease.clone());
        lease
    }

    /// A read-only view of `data`, row-major in `shape`, on `device` (the
    /// CPU): no copy. Kernels read it in place; it cannot be an output.
    pub fn slice<T: Element>(
        &'scope self,
        device: &Device,
        data: &'env [T],
        shape: impl IntoIterator<Item = usize>,
    ) -> Result<Array> {
        let shape: Vec<usize> = shape.into_iter().collect();
        self.host_view(
            device,
            data.as_ptr() as u64,
            data.len(),
            T::DTYPE,
            &shape,
            None,
            0,
            true,
        )
    }

    /// A writable view of `data`, row-major in `shape`, on `device` (the
    /// CPU): kernels write it in place (give it to
    /// [`Call::output_into`](crate::Call::output_into)), and `data` holds
    /// the result once the scope ends. Not for `bool`: a kernel may write
    /// any byte, and a `bool` other than 0 or 1 is undefined behaviour in
    /// Rust (borrow the bytes as `u8`).
    pub fn slice_mut<T: Element>(
        &'scope self,
        device: &Device,
        data: &'env mut [T],
        shape: impl IntoIterator<Item = usize>,
    ) -> Result<Array> {
        let shape: Vec<usize> = shape.into_iter().collect();
        writable::<T>()?;
        let addr = data.as_mut_ptr() as u64;
        self.host_view(device, addr, data.len(), T::DTYPE, &shape, None, 0, false)
    }

    /// A read-only strided view of `data`: element 0 at `data[offset]`,
    /// `strides` in elements (negative and zero allowed). Every element it
    /// reaches must lie in `data`.
    pub fn strided<T: Element>(
        &'scope self,
        device: &Device,
        data: &'env [T],
        shape: &[usize],
        strides: &[isize],
        offset: usize,
    ) -> Result<Array> {
        let addr = data.as_ptr() as u64;
        self.host_view(
            device,
            addr,
            data.len(),
            T::DTYPE,
            shape,
            Some(strides),
            offset,
            true,
        )
    }

    /// A writable strided view of `data` (as [`Scope::strided`]; not for
    /// `bool`, as [`Scope::slice_mut`]).
    pub fn strided_mut<T: Element>(
        &'scope self,
        device: &Device,
        data: &'env mut [T],
        shape: &[usize],
        strides: &[isize],
        offset: usize,
    ) -> Result<Array> {
        writable::<T>()?;
        let addr = data.as_mut_ptr() as u64;
        self.host_view(
            device,
            addr,
            data.len(),
            T::DTYPE,
            shape,
            Some(strides),
            offset,
            false,
        )
    }

    /// A view of `len` elements at `addr` (a borrowed slice), checked to
    /// stay inside them.
    #[allow(clippy::too_many_arguments)]
    fn host_view(
        &'scope self,
        device: &Device,
        addr: u64,
        len: usize,
        dtype: DType,
        shape: &[usize],
        strides: Option<&[isize]>,
        offset: usize,
        read_only: bool,
    ) -> Result<Array> {
        super::host_device(device)?;
        let size = dtype.size();
        let data = addr + (offset.min(len) * size) as u64;
        let described = foreign::describe(data, dtype, shape, strides)?;
        let start = addr;
        let end = addr + (len * size) as u64;
        let inside = described.len == 0
            || (offset <= len
                && described.base >= start
                && described.base + described.len as u64 <= end);
        if !inside {
            return Err(ArrayError::Foreign(format!(
                "shape {shape:?} with strides {:?} at offset {offset} reaches outside the {len} \
                 elements borrowed",
                strides.map(|s| s.to_vec()).unwrap_or_default()
            ))
            .into());
        }
        self.view(device, described, dtype, read_only, None)
    }

    /// An array over borrowed memory, revoked when the scope ends.
    pub(crate) fn view(
        &'scope self,
        device: &Device,
        described: foreign::Described,
        dtype: DType,
        read_only: bool,
        stream: Option<&crate::device::Stream>,
    ) -> Result<Array> {
        self.view_with(device, described, dtype, read_only, stream, |source| source)
    }

    /// [`Scope::view`], the source adjusted by `with` (a CUDA owner's hook).
    pub(crate) fn view_with(
        &'scope self,
        device: &Device,
        described: foreign::Described,
        dtype: DType,
        read_only: bool,
        stream: Option<&crate::device::Stream>,
        with: impl FnOnce(Source) -> Source,
    ) -> Result<Array> {
        let source = with(Source {
            owner: ForeignOwner::none(),
            lease: Some(self.lease()),
            read_only,
            device_known: false,
            #[cfg(feature = "cuda")]
            access: None,
        });
        foreign::build(device, described, dtype, stream, source)
    }
}

/// Refuses writable borrows of `bool` (see [`Scope::slice_mut`]).
pub(crate) fn writable<T: Element>() -> Result<()> {
    if T::DTYPE == DType::Bool {
        return Err(ArrayError::Foreign(
            "a kernel may write any byte into a writable view, and a `bool` must be 0 or 1: \
             borrow the bytes as `u8`"
                .into(),
        )
        .into());
    }
    Ok(())
}
