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
//! the driver has no pools. The configuration's `block_cache` setting
//! (`KERNELKIT_CUDA_ALLOC=pool`) turns the per-stream cache off (every
//! allocation asks the pool), for comparison.
//!
//! **A thread's spare.** Before any of that, the last small output a
//! thread dropped stays with the thread whole (heap block, device block,
//! stream), for the thread's next output of that stream and size: that is
//! `array::storage`'s; this module says which blocks qualify
//! ([`DeviceMem::spare_class`], [`CudaStream::spare_class`]).
//!
//! **Locks.** Each stream keeps the small block it freed last in one atomic
//! word, taken and given back without a lock (a loop of calls that drops its
//! outputs never goes further); the rest of its cache has its own mutex,
//! taken by allocations and frees of that stream only; a block's list of foreign streams has
//! its own mutex, taken only the first time another stream uses it. No lock
//! is held across a driver call that waits.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use smallvec::SmallVec;

use super::compile::Nvrtc;
use super::driver::{self, memset, DevicePtr, RawFunction, RawPool, RawStream};
use super::launch::{launch_gather, GatherArgs};
use super::load::{resolve, CudaModule};
use super::Context;
use crate::backend::{ArgRef, Memory, Module, Owner, StreamHandle};
use crate::codegen::cuda::MAX_NDIM;
use crate::error::{DeviceError, Result};

/// Where blocks come from when no stream cache has one.
pub(super) struct Allocator {
    pub(super) ctx: Arc<Context>,
    /// A kernelkit-owned memory pool (stream-ordered), if the driver has them.
    pool: Option<RawPool>,
    /// Keep freed blocks in per-stream caches (the configuration's
    /// `block_cache`).
    pub(super) cache: bool,
}

impl Allocator {
    /// The allocator of device `ordinal`, from a pool of its own if the
    /// driver has `pools`; `cache`: whether streams keep freed blocks.
    pub(super) fn new(
        ctx: Arc<Context>,
        ordinal: u32,
        pools: bool,
        cache: bool,
    ) -> Result<Allocator> {
        let mut pool = None;
        if pools {
            ctx.bind()?;
            pool = Some(driver::mem_pool_create(ordinal, &ctx.label)?);
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

    /// `bytes` of device memory, usable in `stream`'s order (the context
    /// is current).
    pub(super) fn allocate(&self, bytes: usize, stream: RawStream) -> Result<DevicePtr> {
        Ok(match self.pool {
            Some(pool) => driver::mem_alloc_from_pool(bytes, pool, stream, &self.ctx.label)?,
            None => driver::mem_alloc(bytes, &self.ctx.label)?,
        })
    }

    /// Gives `ptr` (from [`Allocator::allocate`]) back, once every use of
    /// it queued on `stream` so far is done (every use of a
    /// block is ordered before this point on `stream`).
    pub(super) fn free(&self, ptr: DevicePtr, stream: RawStream) {
        match self.pool {
            Some(_) => driver::mem_free_async(ptr, stream),
            None => driver::mem_free(ptr),
        }
    }
}

impl Drop for Allocator {
    fn drop(&mut self) {
        if let (Some(pool), Ok(())) = (self.pool, self.ctx.bind()) {
            // Every stream (and so every block) is gone: each holds an
            // `Arc` of this allocator. Waiting for the context ends their
            // queued work first.
            let _ = driver::ctx_synchronize(&self.ctx.label);
            driver::mem_pool_destroy(pool);
        }
    }
}

/// Most bytes one stream keeps cached.
pub(super) const CACHE_BYTES: usize = 4 << 30;
/// Most blocks one stream keeps cached.
pub(super) const CACHE_BLOCKS: usize = 64;

/// The largest size class a thread keeps as its spare output memory (see
/// `array::storage`).
const SPARE_CLASS: usize = 1 << 20;

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

/// A CUDA stream and its cache of free blocks.
pub(crate) struct CudaStream {
    pub(super) raw: RawStream,
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
    cache: Mutex<(Vec<(usize, DevicePtr)>, usize)>,
}

/// Bits of a packed [`CudaStream::recent`] entry that hold the address.
const ADDRESS_BITS: u32 = 52;

/// A free block as one word: its size class (in 512-byte steps, at most
/// 1 MiB: 12 bits) above a 52-bit address. `None` for blocks that do not
/// fit (larger classes, addresses beyond 52 bits): those use the locked
/// cache.
fn pack(class: usize, ptr: DevicePtr) -> Option<u64> {
    (class <= 1 << 20 && ptr != 0 && ptr >> ADDRESS_BITS == 0)
        .then_some(((class / 512) as u64) << ADDRESS_BITS | ptr)
}

fn unpack(word: u64) -> (usize, DevicePtr) {
    (
        (word >> ADDRESS_BITS) as usize * 512,
        word & ((1 << ADDRESS_BITS) - 1),
    )
}

impl CudaStream {
    /// A new stream of `allocator`'s device, with an empty cache.
    pub(super) fn new(allocator: Arc<Allocator>) -> Result<Arc<CudaStream>> {
        let ctx = allocator.ctx.clone();
        ctx.bind()?;
        // Destroyed on drop.
        let raw = driver::stream_create(&ctx.label)?;
        Ok(Arc::new(CudaStream {
            raw,
            ctx,
            caching: allocator.cache,
            allocator,
            recent: AtomicU64::new(0),
            cache: Mutex::new((Vec::new(), 0)),
        }))
    }

    /// Waits until the stream's work is done.
    pub(super) fn synchronize(&self) -> Result<()> {
        self.ctx.bind()?;
        driver::stream_synchronize(self.raw, &self.ctx.label)?;
        Ok(())
    }

    #[inline]
    fn take(&self, class: usize) -> Option<DevicePtr> {
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
    fn take_cached(&self, class: usize) -> Option<DevicePtr> {
        let mut cache = lock(&self.cache);
        let at = cache.0.iter().rposition(|&(c, _)| c == class)?;
        let (_, ptr) = cache.0.swap_remove(at);
        cache.1 -= class;
        Some(ptr)
    }

    #[inline]
    fn give_back(&self, class: usize, ptr: DevicePtr) {
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
    fn give_back_slow(&self, class: usize, ptr: DevicePtr) {
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

    /// The spare size class of an output of `len` bytes on this stream:
    /// `None` for streams that cache no blocks (the block cache is off)
    /// and for outputs larger than [`SPARE_CLASS`].
    #[inline]
    pub(crate) fn spare_class(&self, len: usize) -> Option<usize> {
        let class = size_class(len);
        (self.caching && class <= SPARE_CLASS).then_some(class)
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
        // No block refers to this stream any more (each holds an `Arc` of
        // it); queued work still completes after the destroy.
        driver::stream_destroy(self.raw);
    }
}

/// Owns one device block; gives it back to the cache of the stream it was
/// allocated on (its *home*) when its memory is released. It holds no
/// count on that stream: the array storage around it does (its place).
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

    /// Whether a stream other than the home one has used the block. Read
    /// without a lock: an owner's record of its use is ordered before its
    /// drop (a Release decrement), so it is seen by whoever then finds the
    /// buffer unique (an Acquire load); see `array::storage::alone_at_home`.
    #[inline]
    pub(crate) fn used_elsewhere(&self) -> bool {
        self.last_foreign.load(Ordering::Relaxed) != 0
    }

    /// Gives the block back to its home stream's cache, once every foreign
    /// stream's use of it is ordered before the home stream's next work.
    /// Called once, by the dying buffer.
    #[inline]
    pub(crate) fn release(&mut self, addr: DevicePtr, home: &StreamHandle) {
        let Some(home) = home.cuda() else {
            return; // Not reached: CUDA memory is allocated on CUDA streams.
        };
        // No foreign stream ever used the block (the common case): nothing
        // to order, and (holding the block alone) no atomic to read.
        if *self.last_foreign.get_mut() != 0 {
            self.order_after_foreign(home);
        }
        home.give_back(self.class, addr);
    }

    /// Makes `home` wait for every foreign stream's use of the block: an
    /// event recorded on the other stream and waited for by the home
    /// stream, so work queued on the home stream from now on (the block's
    /// next user) runs after the other stream's uses (or, without an
    /// event, a wait for the other stream). Destroying a recorded event is
    /// allowed; its resources go when it completes.
    #[cold]
    #[inline(never)]
    fn order_after_foreign(&mut self, home: &CudaStream) {
        let foreign = std::mem::take(self.foreign.get_mut().unwrap_or_else(|p| p.into_inner()));
        if foreign.is_empty() || home.ctx.bind().is_err() {
            return;
        }
        let label = &home.ctx.label;
        for other in foreign {
            match driver::event_create(label) {
                Ok(event) => {
                    let _ = driver::event_record(event, other.raw, label);
                    let _ = driver::stream_wait_event(home.raw, event, label);
                    driver::event_destroy(event);
                }
                Err(_) => {
                    let _ = driver::stream_synchronize(other.raw, label);
                }
            }
        }
    }

    /// This block's size class, if a thread may keep it whole as its spare
    /// (a small block; the caller checks it is alone at home).
    #[inline]
    pub(crate) fn spare_class(&self) -> Option<usize> {
        (self.class <= SPARE_CLASS).then_some(self.class)
    }
}

/// `len` bytes in the order of `stream`: a block from the stream's cache
/// (or the allocator).
#[inline]
pub(super) fn alloc_on(stream: &Arc<CudaStream>, len: usize) -> Result<Memory> {
    let class = size_class(len);
    let ptr = match stream.take(class) {
        Some(p) => p,
        None => {
            stream.ctx.bind()?;
            stream.allocator.allocate(class, stream.raw)?
        }
    };
    let home = Arc::as_ptr(stream) as usize;
    Ok(Memory {
        addr: ptr,
        len,
        owner: Owner::Device(DeviceMem {
            class,
            home,
            last_foreign: AtomicUsize::new(0),
            foreign: Mutex::new(Vec::new()),
        }),
    })
}

/// The CUDA stream of `home`, where its memory is allocated.
fn cuda_of(home: &StreamHandle) -> Result<&Arc<CudaStream>, DeviceError> {
    home.cuda().ok_or_else(|| DeviceError::Driver {
        device: "cuda".into(),
        operation: "allocation",
        reason: "the stream is not a CUDA stream".into(),
    })
}

/// `len` bytes in the order of `home`.
pub(super) fn alloc(len: usize, home: &StreamHandle) -> Result<Memory> {
    alloc_on(cuda_of(home)?, len)
}

/// A new block holding `bytes`; the copy has finished when this returns.
pub(super) fn upload(bytes: &[u8], home: &StreamHandle) -> Result<Memory> {
    let stream = cuda_of(home)?;
    let buf = alloc_on(stream, bytes.len())?;
    stream.ctx.bind()?;
    if bytes.is_empty() {
        stream.synchronize()?;
    } else {
        // The block holds at least `bytes.len()` bytes; the copy waits for
        // the stream.
        driver::copy_to_device(buf.addr, bytes, stream.raw, &stream.ctx.label)?;
    }
    Ok(buf)
}

/// Copies `len` bytes at `offset` to the host, in `stream`'s order.
pub(super) fn download(
    stream: &Arc<CudaStream>,
    buf: &Memory,
    offset: usize,
    len: usize,
) -> Result<Vec<u8>> {
    // Reserved fallibly: a huge output is an error, not an abort.
    let mut out = Vec::new();
    if out.try_reserve_exact(len).is_err() {
        return Err(DeviceError::Driver {
            device: stream.ctx.label.clone(),
            operation: "allocate",
            reason: format!("the system cannot provide {len} bytes of host memory"),
        }
        .into());
    }
    out.resize(len, 0);
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
    // In bounds (checked above); the copy waits for the stream.
    driver::copy_to_host(
        &mut out,
        buf.addr + offset as u64,
        stream.raw,
        &stream.ctx.label,
    )?;
    Ok(out)
}

/// Repeats `pattern` (1, 2, 4 or 8 bytes) over the buffer, in stream order.
pub(super) fn fill(stream: &Arc<CudaStream>, buf: &Memory, pattern: &[u8]) -> Result<()> {
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
    // Every arm writes `n` elements of the pattern's size inside the buffer
    // (`n * size <= len`), in stream order.
    let (addr, s) = (buf.addr, stream.raw);
    match pattern.len() {
        1 => memset::d8(addr, pattern[0], n, s, label)?,
        2 => memset::d16(
            addr,
            u16::from_le_bytes([pattern[0], pattern[1]]),
            n,
            s,
            label,
        )?,
        4 => memset::d32(addr, word(pattern), n, s, label)?,
        8 if pattern[..4] == pattern[4..] => memset::d32(addr, word(pattern), n * 2, s, label)?,
        8 => {
            // Low and high words as two strided fills (pitch 8 bytes).
            memset::d32_strided(addr, 8, word(&pattern[..4]), n, s, label)?;
            memset::d32_strided(addr + 4, 8, word(&pattern[4..]), n, s, label)?;
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

/// The built-in strided → contiguous copy kernels of one device.
pub(super) struct Gather {
    /// `kk_gather_1`, `_2`, `_4`, `_8`.
    functions: [RawFunction; 4],
    /// Keeps the functions loaded.
    _module: Module,
}

impl Gather {
    /// Compiles [`GATHER_SOURCE`] and resolves its kernels.
    pub(super) fn build(ctx: &Arc<Context>, nvrtc: &Nvrtc) -> Result<Gather, String> {
        let cubin = nvrtc
            .compile_source(GATHER_SOURCE)
            .map_err(|e| e.to_string())?;
        let module =
            super::load::load(ctx, "kernelkit", "kk_gather", &cubin).map_err(|e| e.to_string())?;
        let cuda = module
            .downcast_ref::<CudaModule>()
            .ok_or_else(|| "the gather module is not a CUDA module".to_string())?;
        let resolve = |size: usize| resolve(ctx, cuda, &format!("kk_gather_{size}")).map(|r| r.0);
        let functions = [resolve(1)?, resolve(2)?, resolve(4)?, resolve(8)?];
        Ok(Gather {
            functions,
            _module: module,
        })
    }

    /// Copies the elements of `src` (any strides) row-major into `dst`.
    pub(super) fn run(
        &self,
        stream: &Arc<CudaStream>,
        src: &ArgRef<'_>,
        dst: &Memory,
    ) -> Result<()> {
        let label = &stream.ctx.label;
        let index = match src.dtype.size() {
            1 => 0,
            2 => 1,
            4 => 2,
            _ => 3,
        };
        // Drop unit axes: they never move the offset.
        let axes: SmallVec<[(usize, isize); 8]> = src
            .shape
            .iter()
            .zip(src.strides)
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
        let mut args = GatherArgs {
            src: src.addr,
            dst: dst.addr,
            shape: [1; MAX_NDIM],
            strides: [0; MAX_NDIM],
            ndim: axes.len() as i32,
            n: src.size() as u64,
        };
        for (i, (d, s)) in axes.iter().enumerate() {
            args.shape[i] = *d as i64;
            args.strides[i] = *s as i64;
        }
        if args.n == 0 {
            return Ok(());
        }
        stream.ctx.bind()?;
        if let Some(mem) = src.mem.device_mem() {
            mem.used_on(stream);
        }
        // The view lies inside the source buffer and `dst` holds `n`
        // elements.
        let blocks = args.n.div_ceil(256).min(65_535) as u32;
        launch_gather(&stream.ctx, self.functions[index], stream, blocks, &args)
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
