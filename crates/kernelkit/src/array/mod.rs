//! Arrays: a buffer on one device plus shape, strides, offset and dtype.
//!
//! Views (permute, slice, broadcast) share the buffer and change only the
//! layout, so `ensure_row_contiguous = false` and the `_strides` parameters
//! mean what they mean in MLX: the kernel sees the real strides.
//!
//! It holds [`Array`], its storage (`storage`: a backend's memory and
//! the stream that writes it, and each thread's spare output), arrays
//! over memory another library owns (`foreign`) and the
//! [`outputs::Outputs`] a call returns. **What this floor may import:**
//! `backend` and the floors below, and `device` (the same floor).

pub(crate) mod foreign;
pub mod outputs;
pub(crate) mod storage;

use std::fmt;

use smallvec::SmallVec;

use crate::backend::ArgRef;
use crate::device::{Device, Stream};
use crate::dtype::{self, DType, Element};
use crate::error::{ArrayError, Result};

/// Dimensions of an array.
pub type Shape = SmallVec<[usize; 4]>;
/// Strides of an array, in elements (0 for broadcast axes).
pub type Strides = SmallVec<[isize; 4]>;

/// An n-dimensional array on a device. Cheap to clone (the buffer is shared).
#[derive(Clone)]
pub struct Array {
    /// The memory, with its device and producing stream.
    pub(crate) storage: SharedStorage,
    pub(crate) shape: Shape,
    pub(crate) strides: Strides,
    /// Offset of element 0, in elements.
    pub(crate) offset: usize,
    pub(crate) dtype: DType,
}

pub(crate) use storage::{Place, SharedStorage};

impl fmt::Debug for Array {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Array")
            .field("device", &self.device().label())
            .field("dtype", &self.dtype)
            .field("shape", &self.shape)
            .field("strides", &self.strides)
            .field("offset", &self.offset)
            .finish()
    }
}

/// Row-major strides for a shape.
pub(crate) fn row_major_strides(shape: &[usize]) -> Strides {
    let mut strides = [0isize; 4];
    if shape.len() <= strides.len() {
        // The common case, without the vector's growth checks: a kernel
        // output gets its strides on every call.
        fill_row_major(shape, &mut strides[..shape.len()]);
        return Strides::from_buf_and_len(strides, shape.len());
    }
    let mut strides: Strides = SmallVec::from_elem(0, shape.len());
    fill_row_major(shape, &mut strides);
    strides
}

#[inline(always)]
fn fill_row_major(shape: &[usize], strides: &mut [isize]) {
    let mut acc = 1isize;
    for (s, &d) in strides.iter_mut().zip(shape).rev() {
        *s = acc;
        acc = acc.saturating_mul(d.max(1) as isize);
    }
}

/// A shape from extents checked to be positive (an output's, as given).
pub(crate) fn shape_from_extents(extents: &[i64]) -> Shape {
    let mut shape = [0usize; 4];
    if extents.len() <= shape.len() {
        for (s, &d) in shape.iter_mut().zip(extents) {
            *s = d as usize;
        }
        return Shape::from_buf_and_len(shape, extents.len());
    }
    extents.iter().map(|&d| d as usize).collect()
}

/// `shape` when `bytes` holds exactly its elements of `dtype`.
fn shape_of_bytes(
    shape: impl IntoIterator<Item = usize>,
    bytes: &[u8],
    dtype: DType,
) -> Result<Shape> {
    let shape: Shape = shape.into_iter().collect();
    let n = checked_size(&shape, dtype).ok_or_else(|| ArrayError::Overflow(shape.to_vec()))?;
    if n * dtype.size() != bytes.len() {
        return Err(ArrayError::Length {
            len: bytes.len() / dtype.size(),
            shape: shape.to_vec(),
            expected: n,
        }
        .into());
    }
    Ok(shape)
}

/// Element count of a shape, or `None` on overflow (also of the byte size).
pub(crate) fn checked_size(shape: &[usize], dtype: DType) -> Option<usize> {
    checked_count(shape.iter().copied(), dtype)
}

/// [`checked_size`] over extents as they come.
#[inline]
pub(crate) fn checked_count(extents: impl Iterator<Item = usize>, dtype: DType) -> Option<usize> {
    let mut n = 1usize;
    for d in extents {
        n = n.checked_mul(d)?;
    }
    n.checked_mul(dtype.size())?;
    if n > isize::MAX as usize / 8 {
        return None;
    }
    Some(n)
}

impl Array {
    /// An array holding a copy of `data`, laid out row-major in `shape`.
    pub fn from_slice<T: Element>(
        device: &Device,
        data: &[T],
        shape: impl IntoIterator<Item = usize>,
    ) -> Result<Array> {
        let shape: Shape = shape.into_iter().collect();
        Array::from_bytes(device, &dtype::to_bytes(data), shape, T::DTYPE)
    }

    /// An array from little-endian element bytes, row-major.
    pub fn from_bytes(
        device: &Device,
        bytes: &[u8],
        shape: impl IntoIterator<Item = usize>,
        dtype: DType,
    ) -> Result<Array> {
        let shape = shape_of_bytes(shape, bytes, dtype)?;
        device.check_dtype(dtype)?;
        let mem = device
            .backend()
            .upload(bytes, device.default_stream().handle())?;
        let storage = SharedStorage::new(mem, Place::Ready(device.clone()));
        Ok(Array::contiguous(storage, shape, dtype))
    }

    /// An array of zeros.
    pub fn zeros(
        device: &Device,
        shape: impl IntoIterator<Item = usize>,
        dtype: DType,
    ) -> Result<Array> {
        Array::zeros_on(device.default_stream(), shape, dtype)
    }

    /// An array of zeros filled on `stream`, which is therefore its
    /// producer: work queued later on `stream` follows the fill with no
    /// wait, where an array filled on another stream would make a launch
    /// on `stream` wait for that stream on the host first.
    pub fn zeros_on(
        stream: &Stream,
        shape: impl IntoIterator<Item = usize>,
        dtype: DType,
    ) -> Result<Array> {
        Array::zeros_in(stream, shape, dtype, false)
    }

    /// [`Array::zeros_on`] in memory no cache of this process kept for
    /// reuse (autotuning's scratch: see `Backend::alloc_fresh`).
    pub(crate) fn fresh_zeros_on(
        stream: &Stream,
        shape: impl IntoIterator<Item = usize>,
        dtype: DType,
    ) -> Result<Array> {
        Array::zeros_in(stream, shape, dtype, true)
    }

    fn zeros_in(
        stream: &Stream,
        shape: impl IntoIterator<Item = usize>,
        dtype: DType,
        fresh: bool,
    ) -> Result<Array> {
        let shape: Shape = shape.into_iter().collect();
        let n = checked_size(&shape, dtype).ok_or_else(|| ArrayError::Overflow(shape.to_vec()))?;
        let device = stream.device();
        device.check_dtype(dtype)?;
        // Allocate on the device directly: a host vector of zeros first would
        // abort the process when the size is more than memory can hold.
        let backend = device.backend();
        let mem = if fresh {
            backend.alloc_fresh(n * dtype.size(), stream.handle())?
        } else {
            backend.alloc(n * dtype.size(), stream.handle())?
        };
        let zero = [0u8; 16];
        backend.fill(&mem, &zero[..dtype.size()], stream.handle())?;
        let storage = SharedStorage::new(mem, Place::Queued(stream.clone()));
        Ok(Array::contiguous(storage, shape, dtype))
    }

    /// [`Array::from_bytes`] in memory no cache of this process kept for
    /// reuse, copied in `stream`'s order (autotuning's scratch): `stream`
    /// is its producer, so a launch there that writes it does not wait for
    /// it on the host afterwards (as it would for an array of another
    /// stream's).
    pub(crate) fn fresh_from_bytes_on(
        stream: &Stream,
        bytes: &[u8],
        shape: impl IntoIterator<Item = usize>,
        dtype: DType,
    ) -> Result<Array> {
        let shape = shape_of_bytes(shape, bytes, dtype)?;
        let device = stream.device();
        device.check_dtype(dtype)?;
        // The copy has finished when `upload_fresh` returns: naming
        // `stream` its producer orders nothing that is not done.
        let mem = device.backend().upload_fresh(bytes, stream.handle())?;
        let storage = SharedStorage::new(mem, Place::Queued(stream.clone()));
        Ok(Array::contiguous(storage, shape, dtype))
    }

    pub(crate) fn contiguous(storage: SharedStorage, shape: Shape, dtype: DType) -> Array {
        let strides = row_major_strides(&shape);
        Array {
            storage,
            shape,
            strides,
            offset: 0,
            dtype,
        }
    }

    /// The device the buffer lives on.
    pub fn device(&self) -> &Device {
        self.storage.place.device()
    }

    /// The stream whose queued work writes this array, if any.
    pub(crate) fn producer(&self) -> Option<&Stream> {
        self.storage.place.producer()
    }
    /// The element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }
    /// The dimensions.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }
    /// The strides, in elements.
    pub fn strides(&self) -> &[isize] {
        &self.strides
    }
    /// The offset of the first element in the buffer, in elements.
    pub fn offset(&self) -> usize {
        self.offset
    }
    /// Number of dimensions.
    pub fn ndim(&self) -> usize {
        self.shape.len()
    }
    /// Number of elements.
    pub fn size(&self) -> usize {
        self.shape.iter().product()
    }

    /// True when the elements are laid out row-major without gaps.
    pub fn is_row_contiguous(&self) -> bool {
        let mut expected = 1isize;
        for (&d, &s) in self.shape.iter().zip(&self.strides).rev() {
            if d == 1 {
                continue;
            }
            if s != expected {
                return false;
            }
            expected *= d as isize;
        }
        true
    }

    /// The address of element 0 in the backend's address space.
    pub(crate) fn data_addr(&self) -> u64 {
        self.storage.mem.addr + (self.offset * self.dtype.size()) as u64
    }

    /// The array as a launch argument: what a backend reads of it.
    #[inline]
    pub(crate) fn arg(&self) -> ArgRef<'_> {
        ArgRef {
            addr: self.data_addr(),
            mem: &self.storage.mem,
            dtype: self.dtype,
            shape: &self.shape,
            strides: &self.strides,
        }
    }

    /// Reverses the axes.
    pub fn transpose(&self) -> Array {
        let axes: Vec<usize> = (0..self.ndim()).rev().collect();
        self.permute(&axes).expect("a reversal is a permutation")
    }

    /// Reorders the axes: axis `i` of the result is axis `axes[i]` of `self`.
    pub fn permute(&self, axes: &[usize]) -> Result<Array> {
        let n = self.ndim();
        let mut seen = vec![false; n];
        if axes.len() != n
            || axes
                .iter()
                .any(|&a| a >= n || std::mem::replace(&mut seen[a], true))
        {
            return Err(ArrayError::View(format!(
                "permute: {axes:?} is not a permutation of the {n} axes of shape {:?}",
                self.shape
            ))
            .into());
        }
        let mut out = self.clone();
        out.shape = axes.iter().map(|&a| self.shape[a]).collect();
        out.strides = axes.iter().map(|&a| self.strides[a]).collect();
        Ok(out)
    }

    /// Slices every axis by `[start, stop, step]` (step ≥ 1, `stop` clamped to
    /// the extent). Axes not listed are kept whole.
    pub fn slice(&self, ranges: &[[usize; 3]]) -> Result<Array> {
        if ranges.len() > self.ndim() {
            return Err(ArrayError::View(format!(
                "slice: {} ranges for {} axes",
                ranges.len(),
                self.ndim()
            ))
            .into());
        }
        let mut out = self.clone();
        let mut offset = self.offset as isize;
        for (axis, &[start, stop, step]) in ranges.iter().enumerate() {
            let extent = self.shape[axis];
            if step == 0 {
                return Err(ArrayError::View(format!("slice: axis {axis} has step 0")).into());
            }
            let stop = stop.min(extent);
            if start > stop {
                return Err(ArrayError::View(format!(
                    "slice: axis {axis}: start {start} is past stop {stop} (extent {extent})"
                ))
                .into());
            }
            let len = (stop - start).div_ceil(step);
            if len > 0 {
                offset += start as isize * self.strides[axis];
            }
            out.shape[axis] = len;
            // A step only matters between two elements: with one or none,
            // keep the stride (a step past the extent, such as 2^62, would
            // overflow it). With two or more, `step` is below the extent,
            // so the product stays within the buffer's span.
            if len > 1 {
                out.strides[axis] = isize::try_from(step)
                    .ok()
                    .and_then(|step| self.strides[axis].checked_mul(step))
                    .ok_or_else(|| {
                        ArrayError::View(format!("slice: axis {axis}: step {step} is too large"))
                    })?;
            }
        }
        out.offset = offset.max(0) as usize;
        Ok(out)
    }

    /// Broadcasts to `shape` (NumPy rules: axes of extent 1 repeat with
    /// stride 0, new leading axes are added).
    pub fn broadcast_to(&self, shape: &[usize]) -> Result<Array> {
        let n = shape.len();
        if n < self.ndim() {
            return Err(ArrayError::View(format!(
                "broadcast: cannot broadcast shape {:?} to {shape:?}",
                self.shape
            ))
            .into());
        }
        let lead = n - self.ndim();
        let mut strides: Strides = SmallVec::from_elem(0, n);
        for i in 0..self.ndim() {
            let (from, to) = (self.shape[i], shape[lead + i]);
            strides[lead + i] = if from == to {
                self.strides[i]
            } else if from == 1 {
                0
            } else {
                return Err(ArrayError::View(format!(
                    "broadcast: cannot broadcast shape {:?} to {shape:?}",
                    self.shape
                ))
                .into());
            };
        }
        if checked_size(shape, self.dtype).is_none() {
            return Err(ArrayError::Overflow(shape.to_vec()).into());
        }
        let mut out = self.clone();
        out.shape = shape.iter().copied().collect();
        out.strides = strides;
        Ok(out)
    }

    /// Waits for the work that writes this array.
    pub fn wait(&self) -> Result<()> {
        if let Some(s) = self.producer() {
            s.synchronize()?;
        }
        Ok(())
    }

    /// The elements in row-major order as little-endian bytes (waits for the
    /// producing stream).
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        // Borrowed memory is read only while its borrow lasts.
        let _use = self.enter()?;
        let size = self.dtype.size();
        let n = self.size();
        if n == 0 {
            return Ok(Vec::new());
        }
        // The span of the buffer this view touches.
        let (mut lo, mut hi) = (self.offset as isize, self.offset as isize);
        for (&d, &s) in self.shape.iter().zip(&self.strides) {
            let reach = (d as isize - 1) * s;
            if reach < 0 {
                lo += reach;
            } else {
                hi += reach;
            }
        }
        let device = self.device();
        let stream = self.producer().unwrap_or_else(|| device.default_stream());
        let download = || {
            device.backend().download(
                &self.storage.mem,
                lo as usize * size,
                (hi - lo + 1) as usize * size,
                stream.handle(),
            )
        };
        let mut raw = self.with_owner(stream, download)?;
        if self.is_row_contiguous() {
            // A row-contiguous view spans exactly its own elements: the
            // download is the answer, without a second copy.
            let start = (self.offset - lo as usize) * size;
            raw.truncate(start + n * size);
            raw.drain(..start);
            return Ok(raw);
        }
        // A broadcast view can name far more elements than its buffer holds:
        // refuse a read-back that memory cannot hold instead of aborting.
        let mut out = Vec::new();
        if out.try_reserve_exact(n * size).is_err() {
            return Err(ArrayError::Overflow(self.shape.to_vec()).into());
        }
        let mut index = vec![0usize; self.ndim()];
        for _ in 0..n {
            let pos: isize = index
                .iter()
                .zip(&self.strides)
                .map(|(&i, &s)| i as isize * s)
                .sum::<isize>()
                + self.offset as isize
                - lo;
            out.extend_from_slice(&raw[pos as usize * size..][..size]);
            for axis in (0..self.ndim()).rev() {
                index[axis] += 1;
                if index[axis] < self.shape[axis] {
                    break;
                }
                index[axis] = 0;
            }
        }
        Ok(out)
    }

    /// The elements in row-major order (waits for the producing stream).
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        if T::DTYPE != self.dtype {
            return Err(ArrayError::DType {
                asked: T::DTYPE,
                actual: self.dtype,
            }
            .into());
        }
        Ok(dtype::from_bytes(&self.to_bytes()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arange(shape: &[usize]) -> Array {
        let n: usize = shape.iter().product();
        let data: Vec<i32> = (0..n as i32).collect();
        Array::from_slice(&Device::cpu(), &data, shape.iter().copied()).unwrap()
    }

    /// An array filled on a stream of its own names that stream as its
    /// producer (launches there need no host wait for it); `zeros` names
    /// the default stream.
    #[test]
    fn zeros_on_a_stream_is_produced_there() {
        let device = Device::new_cpu();
        let stream = device.new_stream().unwrap();
        let a = Array::zeros_on(&stream, [4, 2], DType::F32).unwrap();
        assert_eq!(a.producer(), Some(&stream));
        assert_eq!(a.to_vec::<f32>().unwrap(), vec![0.0; 8]);
        let b = Array::zeros(&device, [3], DType::I32).unwrap();
        assert_eq!(b.producer(), Some(device.default_stream()));
    }

    #[test]
    fn transpose_reads_in_view_order() {
        let a = arange(&[2, 3]);
        let t = a.transpose();
        assert_eq!(t.shape(), &[3, 2]);
        assert!(!t.is_row_contiguous());
        assert_eq!(t.to_vec::<i32>().unwrap(), vec![0, 3, 1, 4, 2, 5]);
    }

    #[test]
    fn slice_with_steps() {
        let a = arange(&[4, 5]);
        let s = a.slice(&[[1, 4, 2], [0, 5, 2]]).unwrap();
        assert_eq!(s.shape(), &[2, 3]);
        assert_eq!(s.to_vec::<i32>().unwrap(), vec![5, 7, 9, 15, 17, 19]);
        assert!(a.slice(&[[0, 4, 0]]).is_err());
    }

    #[test]
    fn a_step_past_the_extent_takes_one_element() {
        // Axis 0 has stride 5: a step of 2^62 once overflowed it (a panic).
        let a = arange(&[4, 5]);
        let s = a.slice(&[[1, 4, 1 << 62], [2, 5, usize::MAX]]).unwrap();
        assert_eq!(s.shape(), &[1, 1]);
        assert_eq!(s.to_vec::<i32>().unwrap(), vec![7]);
        // A view of a view with a large step: still in the buffer.
        let t = a
            .slice(&[[0, 4, 3]])
            .unwrap()
            .slice(&[[1, 2, 1 << 40]])
            .unwrap();
        assert_eq!(t.to_vec::<i32>().unwrap(), vec![15, 16, 17, 18, 19]);
    }

    #[test]
    fn broadcast_repeats() {
        let a = arange(&[3]);
        let b = a.broadcast_to(&[2, 3]).unwrap();
        assert_eq!(b.strides(), &[0, 1]);
        assert_eq!(b.to_vec::<i32>().unwrap(), vec![0, 1, 2, 0, 1, 2]);
        assert!(a.broadcast_to(&[2, 4]).is_err());
    }

    #[test]
    fn wrong_dtype_and_length_are_errors() {
        let a = arange(&[3]);
        assert!(a.to_vec::<f32>().is_err());
        assert!(Array::from_slice(&Device::cpu(), &[1.0f32, 2.0], [3]).is_err());
    }
}
