//! Streams and device memory: allocation, copies, fills, strided gathers.
//!
//! **Allocation is stream-ordered and cached per stream.** A kernel's
//! outputs are allocated on the launch's stream. When an array dies, its
//! block goes back to the cache of the stream it was allocated on (its
//! *home*); the next allocation of that size class on that stream reuses it
//! with no driver call at all, which is safe because every earlier use of
//! the block was queued on that same stream, before. Blocks used on another
//! stream too (an input uploaded on the default stream, read by a launch on
//! a thread's stream) record those streams; when such a block dies, its home
//! stream is made to wait for them (an event each) before the block is
//! reused. Beyond the cache ([`CACHE_BYTES`], [`CACHE_BLOCKS`] per stream),
//! blocks go back to the driver: `cuMemFreeAsync` into a kernelkit pool
//! whose release threshold keeps the memory mapped, or `cuMemFree` where
//! the driver has no pools. `KERNELKIT_CUDA_ALLOC=pool` turns the
//! per-stream cache off (every allocation asks the pool), for comparison.
//!
//! **A thread's spare.** Before any of that, the last small output a
//! thread dropped stays with the thread whole (heap block, device block,
//! stream), for the thread's next output of that stream and size
//! ([`recycle`], [`alloc_output`]): a loop of calls that drops its outputs
//! allocates nothing and touches no shared count.
//!
//! **Locks.** Each stream keeps the small block it freed last in one atomic
//! word, taken and given back without a lock (a loop of calls that drops its
//! outputs never goes further); the rest of its cache has its own mutex,
//! taken by allocations and frees of that stream only; a block's list of foreign streams has
//! its own mutex, taken only the first time another stream uses it. No lock
//! is held across a driver call that waits.

use std::cell::Cell;
use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use cudarc::driver::sys;
use smallvec::SmallVec;

use super::compile::Nvrtc;
use super::load::{resolve, CudaModule};
use super::{check, Context};
use crate::array::{Array, Place};
use crate::backend::{Buffer, Module, Owner, SharedBuffer};
use crate::codegen::cuda::MAX_NDIM;
use crate::device::Stream;
use crate::error::{DeviceError, Result};

/// Most bytes one stream keeps cached.
pub(super) const CACHE_BYTES: usize = 4 << 30;
/// Most blocks one stream keeps cached.
pub(super) const CACHE_BLOCKS: usize = 64;

/// The size class of an allocation: 512-byte steps up to 1 MiB, 2 MiB
/// steps above (so a block is reused only for nearly its own size).
fn size_class(len: usize) -> usize {
    let len = len.max(1);
    if len <= 1 << 20 {
        len.div_ceil(512) * 512
    } else {
        len.div_ceil(2 << 20) * (2 << 20)
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Where blocks come from when no stream cache has one.
pub(super) struct Allocator {
    ctx: Arc<Context>,
    /// A kernelkit-owned memory pool (stream-ordered), if the driver has them.
    pool: Option<sys::CUmemoryPool>,
    /// Keep freed blocks in per-stream caches.
    cache: bool,
}

// SAFETY: pool handles may be used from any thread.
unsafe impl Send for Allocator {}
// SAFETY: as above; the handle is never mutated.
unsafe impl Sync for Allocator {}

impl Allocator {
    pub(super) fn new(ctx: Arc<Context>, ordinal: u32, pools: bool) -> Result<Allocator> {
        let cache = std::env::var("KERNELKIT_CUDA_ALLOC").map_or(true, |v| v != "pool");
        let mut pool = None;
        if pools {
            ctx.bind()?;
            // SAFETY: the props are plain data, zero meaning "default" for
            // every field not set here.
            let mut props: sys::CUmemPoolProps = unsafe { std::mem::zeroed() };
            props.allocType = sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED;
            props.handleTypes = sys::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_NONE;
            props.location.type_ = sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE;
            props.location.id = ordinal as i32;
            let mut raw: sys::CUmemoryPool = std::ptr::null_mut();
            // SAFETY: creates a pool owned by this allocator.
            check(
                unsafe { sys::cuMemPoolCreate(&mut raw, &props) },
                &ctx.label,
                "cuMemPoolCreate",
            )?;
            let mut threshold: u64 = u64::MAX;
            // SAFETY: the release threshold attribute takes a u64.
            check(
                unsafe {
                    sys::cuMemPoolSetAttribute(
                        raw,
                        sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                        (&mut threshold as *mut u64).cast(),
                    )
                },
                &ctx.label,
                "cuMemPoolSetAttribute",
            )?;
            pool = Some(raw);
        }
        Ok(Allocator { ctx, pool, cache })
    }

    pub(super) fn describe(&self) -> &'static str {
        match (self.pool.is_some(), self.cache) {
            (true, true) => "per-stream cache over a stream-ordered pool",
            (true, false) => "stream-ordered pool",
            (false, true) => "per-stream cache over cuMemAlloc",
            (false, false) => "cuMemAlloc",
        }
    }

    fn allocate(&self, bytes: usize, stream: sys::CUstream) -> Result<u64> {
        let mut ptr: sys::CUdeviceptr = 0;
        match self.pool {
            // SAFETY: allocates `bytes` from our pool in `stream`'s order.
            Some(pool) => check(
                unsafe { sys::cuMemAllocFromPoolAsync(&mut ptr, bytes, pool, stream) },
                &self.ctx.label,
                "cuMemAllocFromPoolAsync",
            )?,
            // SAFETY: a plain device allocation.
            None => check(
                unsafe { sys::cuMemAlloc_v2(&mut ptr, bytes) },
                &self.ctx.label,
                "cuMemAlloc",
            )?,
        }
        Ok(ptr)
    }

    fn free(&self, ptr: u64, stream: sys::CUstream) {
        // SAFETY: `ptr` came from `allocate` and every use of it was ordered
        // before this point on `stream` (see the module docs).
        unsafe {
            match self.pool {
                Some(_) => sys::cuMemFreeAsync(ptr, stream),
                None => sys::cuMemFree_v2(ptr),
            };
        }
    }
}

impl Drop for Allocator {
    fn drop(&mut self) {
        if let (Some(pool), Ok(())) = (self.pool, self.ctx.bind()) {
            // SAFETY: every stream (and so every block) is gone: each holds
            // an `Arc` of this allocator.
            unsafe {
                sys::cuCtxSynchronize();
                sys::cuMemPoolDestroy(pool);
            }
        }
    }
}

/// A CUDA stream and its cache of free blocks.
pub(crate) struct CudaStream {
    pub(super) raw: sys::CUstream,
    pub(super) ctx: Arc<Context>,
    allocator: Arc<Allocator>,
    /// `allocator.cache`, copied here (the allocator's line stays cold).
    caching: bool,
    /// The block this stream freed last, if small ([`pack`]): taken and
    /// given back with one atomic operation each, no lock. A call that
    /// frees its output before the next call allocates one (the common
    /// loop) never reaches `cache`.
    recent: AtomicU64,
    /// (size class, address) of blocks free in this stream's order.
    cache: Mutex<(Vec<(usize, u64)>, usize)>,
}

/// Bits of a packed [`CudaStream::recent`] entry that hold the address.
const ADDRESS_BITS: u32 = 52;

/// A free block as one word: its size class (in 512-byte steps, at most
/// 1 MiB: 12 bits) above a 52-bit address. `None` for blocks that do not
/// fit (larger classes, addresses beyond 52 bits): those use the locked
/// cache.
fn pack(class: usize, ptr: u64) -> Option<u64> {
    (class <= 1 << 20 && ptr != 0 && ptr >> ADDRESS_BITS == 0)
        .then_some(((class / 512) as u64) << ADDRESS_BITS | ptr)
}

fn unpack(word: u64) -> (usize, u64) {
    (
        (word >> ADDRESS_BITS) as usize * 512,
        word & ((1 << ADDRESS_BITS) - 1),
    )
}

// SAFETY: stream handles may be used from any thread; the cache is behind
// a mutex.
unsafe impl Send for CudaStream {}
// SAFETY: as above.
unsafe impl Sync for CudaStream {}

impl CudaStream {
    pub(super) fn new(allocator: Arc<Allocator>) -> Result<Arc<CudaStream>> {
        let ctx = allocator.ctx.clone();
        ctx.bind()?;
        let mut raw: sys::CUstream = std::ptr::null_mut();
        // SAFETY: creates a stream that does not synchronize with the legacy
        // default stream; destroyed on drop.
        check(
            unsafe {
                sys::cuStreamCreate(&mut raw, sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32)
            },
            &ctx.label,
            "cuStreamCreate",
        )?;
        Ok(Arc::new(CudaStream {
            raw,
            ctx,
            caching: allocator.cache,
            allocator,
            recent: AtomicU64::new(0),
            cache: Mutex::new((Vec::new(), 0)),
        }))
    }

    /// Whether the stream's work has finished (without waiting).
    pub(super) fn finished(&self) -> Result<bool> {
        self.ctx.bind()?;
        // SAFETY: asks the driver about the stream's work; no memory moves.
        let result = unsafe { sys::cuStreamQuery(self.raw) };
        if result == sys::CUresult::CUDA_ERROR_NOT_READY {
            return Ok(false);
        }
        check(result, &self.ctx.label, "cuStreamQuery")?;
        Ok(true)
    }

    pub(super) fn synchronize(&self) -> Result<()> {
        self.ctx.bind()?;
        // SAFETY: waits for the stream's work.
        check(
            unsafe { sys::cuStreamSynchronize(self.raw) },
            &self.ctx.label,
            "cuStreamSynchronize",
        )?;
        Ok(())
    }

    #[inline]
    fn take(&self, class: usize) -> Option<u64> {
        if !self.caching {
            return None;
        }
        let word = self.recent.load(Ordering::Acquire);
        if word != 0
            && unpack(word).0 == class
            && self
                .recent
                .compare_exchange(word, 0, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        {
            return Some(unpack(word).1);
        }
        self.take_cached(class)
    }

    /// [`CudaStream::take`] from the locked cache.
    #[cold]
    #[inline(never)]
    fn take_cached(&self, class: usize) -> Option<u64> {
        let mut cache = lock(&self.cache);
        let at = cache.0.iter().rposition(|&(c, _)| c == class)?;
        let (_, ptr) = cache.0.swap_remove(at);
        cache.1 -= class;
        Some(ptr)
    }

    #[inline]
    fn give_back(&self, class: usize, ptr: u64) {
        if self.caching {
            if let Some(word) = pack(class, ptr) {
                if self
                    .recent
                    .compare_exchange(0, word, Ordering::AcqRel, Ordering::Relaxed)
                    .is_ok()
                {
                    return;
                }
            }
        }
        self.give_back_slow(class, ptr);
    }

    /// [`CudaStream::give_back`] to the locked cache, or to the driver.
    #[cold]
    #[inline(never)]
    fn give_back_slow(&self, class: usize, ptr: u64) {
        if self.caching {
            let mut cache = lock(&self.cache);
            if cache.0.len() < CACHE_BLOCKS && cache.1 + class <= CACHE_BYTES {
                cache.0.push((class, ptr));
                cache.1 += class;
                return;
            }
        }
        if self.ctx.bind().is_ok() {
            self.allocator.free(ptr, self.raw);
        }
    }
}

impl Drop for CudaStream {
    fn drop(&mut self) {
        if self.ctx.bind().is_err() {
            return;
        }
        let mut blocks = std::mem::take(&mut lock(&self.cache).0);
        let recent = *self.recent.get_mut();
        if recent != 0 {
            blocks.push(unpack(recent));
        }
        for (_, ptr) in blocks {
            self.allocator.free(ptr, self.raw);
        }
        // SAFETY: no block refers to this stream any more (each holds an
        // `Arc` of it); queued work still completes after the destroy.
        unsafe {
            sys::cuStreamDestroy_v2(self.raw);
        }
    }
}

/// Owns one device block; gives it back to the cache of the stream it was
/// allocated on (its *home*: the buffer's [`Place::stream`]) when the buffer
/// dies. It holds no count on that stream: the buffer's place does.
pub(crate) struct DeviceMem {
    class: usize,
    /// The home stream's address, to tell it from others (never followed).
    home: usize,
    /// The last foreign stream recorded (fast check, no lock).
    last_foreign: AtomicUsize,
    /// Every other stream that used the block.
    foreign: Mutex<Vec<Arc<CudaStream>>>,
}

impl DeviceMem {
    /// Records that work on `stream` uses this block.
    #[inline]
    pub(super) fn used_on(&self, stream: &Arc<CudaStream>) {
        let key = Arc::as_ptr(stream) as usize;
        if key == self.home || self.last_foreign.load(Ordering::Relaxed) == key {
            return;
        }
        let mut foreign = lock(&self.foreign);
        if !foreign.iter().any(|s| Arc::ptr_eq(s, stream)) {
            foreign.push(stream.clone());
        }
        self.last_foreign.store(key, Ordering::Relaxed);
    }
}

impl DeviceMem {
    /// Gives the block back to its home stream's cache, once every foreign
    /// stream's use of it is ordered before the home stream's next work.
    /// Called once, by the dying buffer.
    #[inline]
    pub(crate) fn release(&mut self, addr: u64, place: &Place) {
        let Some(home) = place.stream().handle().cuda() else {
            return; // Not reached: CUDA buffers are placed on CUDA streams.
        };
        // No foreign stream ever used the block (the common case): nothing
        // to order, and (holding the block alone) no atomic to read.
        if *self.last_foreign.get_mut() != 0 {
            self.order_after_foreign(home);
        }
        home.give_back(self.class, addr);
    }

    /// Makes `home` wait for every foreign stream's use of the block.
    #[cold]
    #[inline(never)]
    fn order_after_foreign(&mut self, home: &CudaStream) {
        let foreign = std::mem::take(self.foreign.get_mut().unwrap_or_else(|p| p.into_inner()));
        if foreign.is_empty() || home.ctx.bind().is_err() {
            return;
        }
        for other in foreign {
            let mut event: sys::CUevent = std::ptr::null_mut();
            // SAFETY: an event recorded on the other stream and waited
            // for by the home stream, so work queued on the home stream
            // from now on (the block's next user) runs after the other
            // stream's uses. Destroying a recorded event is allowed;
            // its resources go when it completes.
            unsafe {
                if sys::cuEventCreate(
                    &mut event,
                    sys::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32,
                ) == sys::CUresult::CUDA_SUCCESS
                {
                    sys::cuEventRecord(event, other.raw);
                    sys::cuStreamWaitEvent(home.raw, event, 0);
                    sys::cuEventDestroy_v2(event);
                } else {
                    sys::cuStreamSynchronize(other.raw);
                }
            }
        }
    }
}

/// The CUDA stream of `place`, where its memory is allocated.
fn home_of(place: &Place) -> Result<&Arc<CudaStream>, DeviceError> {
    place
        .stream()
        .handle()
        .cuda()
        .ok_or_else(|| DeviceError::Driver {
            device: place.device().label().to_string(),
            operation: "allocation",
            reason: "the stream is not a CUDA stream".into(),
        })
}

/// `len` bytes in the order of `place`'s stream.
pub(super) fn alloc(len: usize, place: Place) -> Result<SharedBuffer> {
    let stream = home_of(&place)?.clone();
    alloc_on(&stream, len, place)
}

/// The largest size class a thread keeps as its spare output buffer.
const SPARE_CLASS: usize = 1 << 20;

thread_local! {
    /// The CUDA output buffer this thread dropped last, kept whole: see
    /// [`recycle`].
    static SPARE: Cell<Option<triomphe::Arc<Buffer>>> = const { Cell::new(None) };
}

/// Where a buffer goes when its last owner drops it: a small output block
/// that only its own stream used becomes this thread's spare (the previous
/// spare is released); anything else is released now. Streams that cache
/// no blocks (`KERNELKIT_CUDA_ALLOC=pool`) keep no spare either.
///
/// A loop of calls that drops each call's outputs then reuses one buffer:
/// no heap allocation, no atomic operation on the stream's block slot or
/// its reference count. The price: each thread keeps at most one block of
/// at most [`SPARE_CLASS`] bytes, and the stream that block belongs to,
/// until its next output or its exit.
pub(crate) fn recycle(buffer: triomphe::Arc<Buffer>) {
    let keep = matches!(&buffer.place, Place::Queued(s)
            if s.handle().cuda().is_some_and(|s| s.caching))
        && matches!(&buffer.owner, Owner::Device(mem)
            if mem.class <= SPARE_CLASS && mem.last_foreign.load(Ordering::Relaxed) == 0)
        && buffer.is_unique();
    if !keep {
        return drop(buffer);
    }
    // If the thread is exiting, the closure (and the buffer) is dropped.
    let old = SPARE.try_with(|spare| spare.replace(Some(buffer)));
    drop(old);
}

/// A new output of `len` bytes in the order of `stream`: this thread's
/// spare if it fits, else a block from the stream's cache (or the driver).
#[inline]
pub(super) fn alloc_output(
    cuda: &Arc<CudaStream>,
    len: usize,
    stream: &Stream,
) -> Result<SharedBuffer> {
    let class = size_class(len);
    let spare = SPARE
        .try_with(|spare| {
            let mut buffer = spare.take()?;
            let fits = matches!((&buffer.place, &buffer.owner),
                (Place::Queued(s), Owner::Device(mem)) if s == stream && mem.class == class);
            match triomphe::Arc::get_mut(&mut buffer) {
                Some(b) if fits => {
                    b.len = len;
                    Some(buffer)
                }
                _ => {
                    spare.set(Some(buffer));
                    None
                }
            }
        })
        .ok()
        .flatten();
    match spare {
        Some(buffer) => Ok(SharedBuffer::from_arc(buffer)),
        None => alloc_on(cuda, len, Place::Queued(stream.clone())),
    }
}

/// `len` bytes in the order of `stream`, which is `place`'s stream (the
/// dispatch path has it at hand already).
#[inline]
fn alloc_on(stream: &Arc<CudaStream>, len: usize, place: Place) -> Result<SharedBuffer> {
    let class = size_class(len);
    let ptr = match stream.take(class) {
        Some(p) => p,
        None => {
            stream.ctx.bind()?;
            stream.allocator.allocate(class, stream.raw)?
        }
    };
    let home = Arc::as_ptr(stream) as usize;
    Ok(SharedBuffer::new(Buffer {
        addr: ptr,
        len,
        place,
        owner: Owner::Device(DeviceMem {
            class,
            home,
            last_foreign: AtomicUsize::new(0),
            foreign: Mutex::new(Vec::new()),
        }),
    }))
}

/// A new block holding `bytes`; the copy has finished when this returns.
pub(super) fn upload(bytes: &[u8], place: Place) -> Result<SharedBuffer> {
    let stream = home_of(&place)?.clone();
    let buf = alloc_on(&stream, bytes.len(), place)?;
    stream.ctx.bind()?;
    if !bytes.is_empty() {
        // SAFETY: the block holds at least `bytes.len()` bytes; the host
        // slice stays borrowed until the stream is synchronized below.
        check(
            unsafe {
                sys::cuMemcpyHtoDAsync_v2(
                    buf.addr,
                    bytes.as_ptr().cast::<c_void>(),
                    bytes.len(),
                    stream.raw,
                )
            },
            &stream.ctx.label,
            "cuMemcpyHtoDAsync",
        )?;
    }
    stream.synchronize()?;
    Ok(buf)
}

/// Copies `len` bytes at `offset` to the host, in `stream`'s order.
pub(super) fn download(
    stream: &Arc<CudaStream>,
    buf: &Buffer,
    offset: usize,
    len: usize,
) -> Result<Vec<u8>> {
    let mut out = vec![0u8; len];
    if len == 0 {
        return Ok(out);
    }
    if offset.checked_add(len).is_none_or(|end| end > buf.len) {
        return Err(DeviceError::Driver {
            device: stream.ctx.label.clone(),
            operation: "cuMemcpyDtoHAsync",
            reason: format!(
                "bytes {offset}..{} are outside the {}-byte buffer",
                offset.saturating_add(len),
                buf.len
            ),
        }
        .into());
    }
    stream.ctx.bind()?;
    if let Some(mem) = buf.device_mem() {
        mem.used_on(stream);
    }
    // SAFETY: in bounds (checked above); `out` outlives the synchronize.
    check(
        unsafe {
            sys::cuMemcpyDtoHAsync_v2(
                out.as_mut_ptr().cast::<c_void>(),
                buf.addr + offset as u64,
                len,
                stream.raw,
            )
        },
        &stream.ctx.label,
        "cuMemcpyDtoHAsync",
    )?;
    stream.synchronize()?;
    Ok(out)
}

/// Repeats `pattern` (1, 2, 4 or 8 bytes) over the buffer, in stream order.
pub(super) fn fill(stream: &Arc<CudaStream>, buf: &Buffer, pattern: &[u8]) -> Result<()> {
    let label = &stream.ctx.label;
    let n = buf.len / pattern.len().max(1);
    if n == 0 {
        return Ok(());
    }
    stream.ctx.bind()?;
    if let Some(mem) = buf.device_mem() {
        mem.used_on(stream);
    }
    let word = |b: &[u8]| u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    // SAFETY (every arm): writes `n` elements of the pattern's size inside
    // the buffer (`n * size <= len`), in stream order.
    let r = unsafe {
        match pattern.len() {
            1 => sys::cuMemsetD8Async(buf.addr, pattern[0], n, stream.raw),
            2 => sys::cuMemsetD16Async(
                buf.addr,
                u16::from_le_bytes([pattern[0], pattern[1]]),
                n,
                stream.raw,
            ),
            4 => sys::cuMemsetD32Async(buf.addr, word(pattern), n, stream.raw),
            8 if pattern[..4] == pattern[4..] => {
                sys::cuMemsetD32Async(buf.addr, word(pattern), n * 2, stream.raw)
            }
            8 => {
                // Low and high words as two strided 2-D fills (pitch 8 bytes).
                let r = sys::cuMemsetD2D32Async(buf.addr, 8, word(&pattern[..4]), 1, n, stream.raw);
                if r != sys::CUresult::CUDA_SUCCESS {
                    r
                } else {
                    sys::cuMemsetD2D32Async(buf.addr + 4, 8, word(&pattern[4..]), 1, n, stream.raw)
                }
            }
            other => {
                return Err(DeviceError::Driver {
                    device: label.clone(),
                    operation: "fill",
                    reason: format!("no fill for {other}-byte elements"),
                }
                .into())
            }
        }
    };
    check(r, label, "cuMemsetAsync")?;
    Ok(())
}

/// The source of the built-in strided-copy kernels.
pub(super) const GATHER_SOURCE: &str = r#"
struct kk_layout { long long shape[10]; long long strides[10]; int ndim; };
template <typename T>
__device__ void kk_gather(const T* src, T* dst, const kk_layout& l, unsigned long long n) {
  unsigned long long step = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
    long long rem = (long long)i, loc = 0;
    for (int d = l.ndim - 1; d >= 0; --d) {
      loc += (rem % l.shape[d]) * l.strides[d];
      rem /= l.shape[d];
    }
    dst[i] = src[loc];
  }
}
extern "C" __global__ void kk_gather_1(const unsigned char* s, unsigned char* d, kk_layout l, unsigned long long n) { kk_gather(s, d, l, n); }
extern "C" __global__ void kk_gather_2(const unsigned short* s, unsigned short* d, kk_layout l, unsigned long long n) { kk_gather(s, d, l, n); }
extern "C" __global__ void kk_gather_4(const unsigned int* s, unsigned int* d, kk_layout l, unsigned long long n) { kk_gather(s, d, l, n); }
extern "C" __global__ void kk_gather_8(const unsigned long long* s, unsigned long long* d, kk_layout l, unsigned long long n) { kk_gather(s, d, l, n); }
"#;

/// `kk_layout` in the gather source.
#[repr(C)]
struct Layout {
    shape: [i64; MAX_NDIM],
    strides: [i64; MAX_NDIM],
    ndim: i32,
}

/// The built-in strided → contiguous copy kernels of one device, compiled
/// once (the first time a strided input needs them).
pub(super) struct Gather {
    functions: [sys::CUfunction; 4],
    _module: Module,
}

// SAFETY: function handles may be used from any thread.
unsafe impl Send for Gather {}
// SAFETY: as above.
unsafe impl Sync for Gather {}

impl Gather {
    pub(super) fn build(ctx: &Arc<Context>, nvrtc: &Nvrtc) -> Result<Gather, String> {
        let cubin = nvrtc
            .compile_source(GATHER_SOURCE)
            .map_err(|e| e.to_string())?;
        let module =
            super::load::load(ctx, "kernelkit", "kk_gather", &cubin).map_err(|e| e.to_string())?;
        let cuda = module
            .downcast_ref::<CudaModule>()
            .ok_or_else(|| "the gather module is not a CUDA module".to_string())?;
        let mut functions = [std::ptr::null_mut(); 4];
        for (slot, size) in functions.iter_mut().zip([1, 2, 4, 8]) {
            *slot = resolve(ctx, cuda, &format!("kk_gather_{size}"))?.0;
        }
        Ok(Gather {
            functions,
            _module: module,
        })
    }

    /// Copies the elements of `src` (any strides) row-major into `dst`.
    pub(super) fn run(&self, stream: &Arc<CudaStream>, src: &Array, dst: &Buffer) -> Result<()> {
        let label = &stream.ctx.label;
        let size = src.dtype.size();
        let index = match size {
            1 => 0,
            2 => 1,
            4 => 2,
            _ => 3,
        };
        // Drop unit axes: they never move the offset.
        let axes: SmallVec<[(usize, isize); 8]> = src
            .shape
            .iter()
            .zip(&src.strides)
            .filter(|(&d, _)| d != 1)
            .map(|(&d, &s)| (d, s))
            .collect();
        if axes.len() > MAX_NDIM {
            return Err(DeviceError::Driver {
                device: label.clone(),
                operation: "strided copy",
                reason: format!(
                    "arrays with more than {MAX_NDIM} non-unit axes cannot be made contiguous on \
                     the GPU (shape {:?})",
                    src.shape
                ),
            }
            .into());
        }
        let mut layout = Layout {
            shape: [1; MAX_NDIM],
            strides: [0; MAX_NDIM],
            ndim: axes.len() as i32,
        };
        for (i, (d, s)) in axes.iter().enumerate() {
            layout.shape[i] = *d as i64;
            layout.strides[i] = *s as i64;
        }
        let mut n = src.size() as u64;
        if n == 0 {
            return Ok(());
        }
        stream.ctx.bind()?;
        if let Some(mem) = src.buffer.device_mem() {
            mem.used_on(stream);
        }
        let mut src_ptr = src.data_addr();
        let mut dst_ptr = dst.addr;
        let mut params: [*mut c_void; 4] = [
            (&mut src_ptr as *mut u64).cast(),
            (&mut dst_ptr as *mut u64).cast(),
            (&mut layout as *mut Layout).cast(),
            (&mut n as *mut u64).cast(),
        ];
        let blocks = n.div_ceil(256).min(65_535) as u32;
        // SAFETY: the parameters match `kk_gather_N`'s signature (two
        // pointers, the layout struct, a u64); the view lies inside the
        // source buffer and `dst` holds `n` elements.
        check(
            unsafe {
                sys::cuLaunchKernel(
                    self.functions[index],
                    blocks,
                    1,
                    1,
                    256,
                    1,
                    1,
                    0,
                    stream.raw,
                    params.as_mut_ptr(),
                    std::ptr::null_mut(),
                )
            },
            label,
            "cuLaunchKernel (strided copy)",
        )?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recent_blocks_pack_into_one_word() {
        for class in [512, 1024, 64 << 10, 1 << 20] {
            let ptr = 0x7f12_3456_7800u64;
            assert_eq!(unpack(pack(class, ptr).unwrap()), (class, ptr));
        }
        assert_eq!(
            pack(2 << 20, 0x1000),
            None,
            "large classes use the locked cache"
        );
        assert_eq!(
            pack(512, 1 << 52),
            None,
            "wide addresses use the locked cache"
        );
        assert_eq!(pack(512, 0), None, "0 means empty");
    }

    #[test]
    fn size_classes() {
        assert_eq!(size_class(0), 512);
        assert_eq!(size_class(512), 512);
        assert_eq!(size_class(513), 1024);
        assert_eq!(size_class(1 << 20), 1 << 20);
        assert_eq!(size_class((1 << 20) + 1), 2 << 20);
        assert_eq!(size_class(1 << 30), 1 << 30);
    }
}
