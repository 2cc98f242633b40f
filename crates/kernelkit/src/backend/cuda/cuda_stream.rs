//! Streams and their block caches: stream-ordered allocation, cached per
//! stream.
//!
//! A kernel's outputs are allocated on the launch's stream. When an array
//! dies, its block goes back to the cache of the stream it was allocated
//! on (its *home*); the next allocation of that size class on that stream
//! reuses it with no driver call at all, which is safe because every
//! earlier use of the block was queued on that same stream, before. Blocks
//! used on another stream too (an input uploaded on the default stream,
//! read by a launch on a thread's stream) record those streams; when such a
//! block dies, its home stream is made to wait for them (an event each)
//! before the block is reused. Beyond the cache ([`CACHE_BYTES`],
//! [`CACHE_BLOCKS`] per stream), blocks go back to the device's
//! [`Allocator`] (`allocator`).
//!
//! **The debugging mode.** The configuration's `block_cache` setting off
//! (`KERNELKIT_CUDA_ALLOC=exact`) turns the per-stream cache off: every
//! allocation asks the allocator for a block of exactly the array's size,
//! and a freed block goes back to it (unless its stream is being captured
//! into a graph), never to another array of kernelkit's: a write past an
//! array's end is past the end of its allocation, where compute-sanitizer
//! and guard regions report it, not in the slack of a larger block or in
//! a block reused for the next array.
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
//! taken by allocations and frees of that stream only; a block's list of
//! foreign streams has its own mutex, taken only the first time another
//! stream uses it. No lock is held across a driver call that waits.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use super::allocator::Allocator;
use super::driver::{self, DevicePtr, RawStream};
use super::unload::StreamFences;
use super::Context;
use crate::backend::{Memory, Owner, StreamHandle};
use crate::error::Result;

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

/// The size of the block an allocation of `len` bytes gets: its size
/// class on a stream that caches blocks; else (the debugging mode) exactly
/// `len` (the driver refuses zero bytes), so that what a kernel writes past
/// the array's end is past the end of its allocation.
#[inline]
fn block_size(caching: bool, len: usize) -> usize {
    if caching {
        size_class(len)
    } else {
        len.max(1)
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Who made a stream, and so who destroys it.
pub(crate) enum StreamOrigin {
    /// kernelkit: destroyed when the last handle goes.
    Own,
    /// Another library, by its raw handle: never destroyed by kernelkit
    /// (the caller keeps it alive, see `Stream::from_raw_cuda`).
    Raw,
    /// cudarc: kept alive by this `Arc`, destroyed by cudarc.
    Cudarc(Arc<cudarc::driver::CudaStream>),
}

/// A CUDA stream and its cache of free blocks.
pub(crate) struct CudaStream {
    pub(super) raw: RawStream,
    /// Who made it (a foreign stream is never destroyed here).
    origin: StreamOrigin,
    pub(super) ctx: Arc<Context>,
    allocator: Arc<Allocator>,
    /// `allocator.cache`, copied here (the allocator's line stays cold).
    caching: bool,
    /// Whether a thread may keep an output of this stream as its spare:
    /// not on a stream another library owns by its raw handle, which its
    /// owner may destroy once the user's arrays are gone (a spare outlives
    /// them, until the thread's next output or its exit).
    spares: bool,
    /// Whether someone other than kernelkit may be capturing this stream
    /// into a CUDA graph: another library's stream, or one of kernelkit's
    /// whose raw handle was handed out ([`CudaStream::raw_handle`]). Only
    /// such streams are asked ([`CudaStream::capturing`]): nothing else can
    /// begin a capture on a stream it has no handle of.
    may_capture: AtomicBool,
    /// Whether kernelkit itself is capturing this stream now
    /// ([`CudaStream::capture`]): launches then pin no module (the
    /// capturer holds their functions while it keeps the graph).
    own_capture: AtomicBool,
    /// The block this stream freed last, if small ([`pack`]): taken and
    /// given back with one atomic operation each, no lock. A call that
    /// frees its output before the next call allocates one (the common
    /// loop) never reaches `cache`.
    recent: AtomicU64,
    /// (size class, address) of blocks free in this stream's order.
    cache: Mutex<(Vec<(usize, DevicePtr)>, usize)>,
    /// Whether a kernel was queued on this stream since its last fence:
    /// stored by every launch once it is queued, cleared when a fence is
    /// recorded (see `unload`, which waits for the fences of the streams
    /// that may have run a module before unloading it).
    pub(super) launched: crate::sync::AtomicBool,
    /// Whether an unload may record a fence on this stream at any time
    /// (kernelkit's own streams, cudarc's, the legacy default stream), or
    /// only asks the stream's next launch for one (a raw handle of another
    /// library, alive for sure only during a call: see `unload`).
    pub(super) fenced_any: bool,
    /// The fences recorded on this stream, shared with the unloads that
    /// wait for them.
    pub(super) fences: Arc<StreamFences>,
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
        Ok(CudaStream::with_origin(allocator, raw, StreamOrigin::Own))
    }

    /// A stream that another library made, on `allocator`'s device: its
    /// context must be the device's (else the error names both). Outputs
    /// allocated on it are kernelkit's and are cached on it as on any
    /// stream; the stream itself is never destroyed by kernelkit.
    pub(super) fn wrap(
        allocator: Arc<Allocator>,
        raw: cudarc::driver::sys::CUstream,
        origin: StreamOrigin,
    ) -> Result<Arc<CudaStream>> {
        let ctx = allocator.ctx.clone();
        ctx.bind()?;
        let raw = RawStream::from_foreign(raw);
        let owner = driver::stream_context(raw, &ctx.label)?;
        if owner != ctx.raw() {
            return Err(crate::error::DeviceError::Unavailable {
                device: ctx.label.clone(),
                reason: "the stream belongs to another CUDA context (another device, or a \
                         context that is not the device's primary one)"
                    .into(),
            }
            .into());
        }
        Ok(CudaStream::with_origin(allocator, raw, origin))
    }

    fn with_origin(allocator: Arc<Allocator>, raw: RawStream, origin: StreamOrigin) -> Arc<Self> {
        let ctx = allocator.ctx.clone();
        let spares = allocator.cache && !matches!(origin, StreamOrigin::Raw);
        let may_capture = AtomicBool::new(!matches!(origin, StreamOrigin::Own));
        // A raw handle is alive for sure only during a call on it, but the
        // legacy default stream (`CU_STREAM_LEGACY`, or 0) is valid for the
        // life of the process.
        let fenced_any = !matches!(origin, StreamOrigin::Raw) || raw.addr() <= 1;
        let stream = Arc::new(CudaStream {
            may_capture,
            own_capture: AtomicBool::new(false),
            raw,
            origin,
            ctx,
            caching: allocator.cache,
            spares,
            allocator,
            recent: AtomicU64::new(0),
            cache: Mutex::new((Vec::new(), 0)),
            launched: crate::sync::AtomicBool::new(false),
            fenced_any,
            fences: Arc::new(StreamFences::default()),
        });
        stream.ctx.unloads.register(&stream);
        stream
    }

    /// The raw `CUstream` handle as a number, for protocols that exchange
    /// stream handles (DLPack's `__dlpack__(stream=...)`).
    pub(crate) fn raw_handle(&self) -> u64 {
        // Whoever holds the handle may begin a capture on it.
        self.may_capture.store(true, Ordering::Relaxed);
        self.raw.addr() as u64
    }

    /// Whether work queued on this stream now is being captured into a
    /// CUDA graph (`cuStreamIsCapturing`), for the streams that someone
    /// else may capture; `false` without a driver call for the rest.
    #[inline]
    pub(crate) fn capturing(&self) -> Result<bool> {
        if !self.may_capture() {
            return Ok(false);
        }
        self.capturing_now()
    }

    /// Whether someone else may be capturing this stream (see
    /// `may_capture`): one relaxed load, for the hot paths to test before
    /// they call out of line.
    #[inline(always)]
    pub(crate) fn may_capture(&self) -> bool {
        self.may_capture.load(Ordering::Relaxed)
    }

    /// [`CudaStream::capturing`], asked of the driver.
    #[cold]
    #[inline(never)]
    pub(crate) fn capturing_now(&self) -> Result<bool> {
        self.ctx.bind()?;
        Ok(driver::stream_is_capturing(self.raw, &self.ctx.label)?)
    }

    /// Whether the capture under way is kernelkit's own
    /// ([`CudaStream::capture`]).
    #[inline]
    pub(crate) fn own_capture(&self) -> bool {
        self.own_capture.load(Ordering::Relaxed)
    }

    /// The work `run` queues on this stream captured into an executable
    /// graph instead of run. The stream must be the caller's alone (no
    /// other thread queues on it meanwhile); launches under the capture
    /// pin no module, so the caller keeps the functions they launch
    /// alive as long as the graph. A capture `run` fails, or the driver
    /// ends, captures nothing and leaves the stream usable.
    pub(super) fn capture(
        &self,
        run: &mut dyn FnMut() -> Result<()>,
    ) -> Result<driver::RawGraphExec> {
        self.ctx.bind()?;
        let label = &self.ctx.label;
        // Launches ask the driver whether the stream captures (and so
        // record no fence on it meanwhile).
        self.may_capture.store(true, Ordering::Relaxed);
        driver::begin_capture(self.raw, label)?;
        self.own_capture.store(true, Ordering::Relaxed);
        let ran = run();
        self.own_capture.store(false, Ordering::Relaxed);
        self.ctx.bind()?;
        let exec = driver::end_capture(self.raw, label);
        match (ran, exec) {
            (Ok(()), Ok(exec)) => Ok(exec),
            (Err(e), Ok(exec)) => {
                driver::graph_exec_destroy(exec);
                Err(e)
            }
            (Err(e), Err(_)) => Err(e),
            (Ok(()), Err(e)) => Err(e.into()),
        }
    }

    /// Queues on this stream a graph [`CudaStream::capture`] made (on
    /// any stream of the context): a launch of every module it holds, for
    /// the unload protocol's fences.
    pub(super) fn replay(&self, exec: driver::RawGraphExec) -> Result<()> {
        self.ctx.bind()?;
        driver::graph_launch(exec, self.raw, &self.ctx.label)?;
        super::unload::mark_launched(&self.launched);
        Ok(())
    }

    /// The cudarc stream this wraps, if cudarc made it.
    pub(crate) fn cudarc(&self) -> Option<&Arc<cudarc::driver::CudaStream>> {
        match &self.origin {
            StreamOrigin::Cudarc(s) => Some(s),
            _ => None,
        }
    }

    /// Whether the stream's work has finished (without waiting).
    pub(super) fn finished(&self) -> Result<bool> {
        self.ctx.bind()?;
        Ok(driver::stream_query(self.raw, &self.ctx.label)?)
    }

    /// Waits until the stream's work is done.
    pub(super) fn synchronize(&self) -> Result<()> {
        self.ctx.bind()?;
        driver::stream_synchronize(self.raw, &self.ctx.label)?;
        Ok(())
    }

    /// The GPU time of the work `run` queues on this stream, measured by
    /// two timing events recorded around it (what autotuning compares).
    pub(super) fn time(
        &self,
        before: &mut dyn FnMut() -> Result<()>,
        run: &mut dyn FnMut() -> Result<()>,
    ) -> Result<std::time::Duration> {
        self.ctx.bind()?;
        let label = &self.ctx.label;
        if !driver::event_timing_available() {
            before()?;
            self.synchronize()?;
            let started = std::time::Instant::now();
            run()?;
            self.synchronize()?;
            return Ok(started.elapsed());
        }
        let start = driver::timing_event_create(label)?;
        let end = match driver::timing_event_create(label) {
            Ok(end) => end,
            Err(e) => {
                driver::event_destroy(start);
                return Err(e.into());
            }
        };
        let timed = (|| -> Result<f32> {
            before()?;
            self.ctx.bind()?;
            driver::event_record(start, self.raw, label)?;
            run()?;
            self.ctx.bind()?;
            driver::event_record(end, self.raw, label)?;
            driver::event_synchronize(end, label)?;
            Ok(driver::event_elapsed_ms(start, end, label)?)
        })();
        driver::event_destroy(start);
        driver::event_destroy(end);
        let ms: f32 = timed?;
        Ok(std::time::Duration::from_secs_f64(
            f64::from(ms.max(0.0)) / 1e3,
        ))
    }

    /// The device's allocator (graph allocations ask its pool).
    pub(super) fn allocator(&self) -> &Allocator {
        &self.allocator
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
        // A free queued on a capturing stream would be captured as a free
        // node of memory the graph did not allocate: kept cached instead,
        // past the limits, until reused or the stream is dropped.
        let keep = self.capturing().unwrap_or(true);
        if self.caching || keep {
            let mut cache = lock(&self.cache);
            if keep || (cache.0.len() < CACHE_BLOCKS && cache.1 + class <= CACHE_BYTES) {
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
    /// and raw foreign streams (`spares`), and for outputs larger than
    /// [`SPARE_CLASS`].
    #[inline]
    pub(crate) fn spare_class(&self, len: usize) -> Option<usize> {
        let class = size_class(len);
        (self.spares && class <= SPARE_CLASS).then_some(class)
    }
}

impl Drop for CudaStream {
    fn drop(&mut self) {
        if self.ctx.bind().is_err() {
            return;
        }
        // The fence that later unloads wait for, while the stream is
        // certainly alive.
        self.close_fences();
        let mut blocks = std::mem::take(&mut lock(&self.cache).0);
        let recent = *self.recent.get_mut();
        if recent != 0 {
            blocks.push(unpack(recent));
        }
        for (_, ptr) in blocks {
            self.allocator.free(ptr, self.raw);
        }
        // No block refers to this stream any more (each holds an `Arc` of
        // it); queued work still completes after the destroy. A foreign
        // stream is its maker's to destroy.
        if let StreamOrigin::Own = self.origin {
            driver::stream_destroy(self.raw);
        }
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
    pub(crate) fn used_on(&self, stream: &Arc<CudaStream>) {
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
        order_after(home, foreign);
    }

    /// A record of the streams that use memory which is no cached block
    /// (a graph allocation, `graph`): the same bookkeeping, no size class.
    /// Only [`DeviceMem::order_uses`] and [`DeviceMem::used_on`] may be
    /// asked of it: it is never given back to a cache.
    pub(super) fn uses_only(home: &Arc<CudaStream>) -> DeviceMem {
        DeviceMem {
            class: 0,
            home: Arc::as_ptr(home) as usize,
            last_foreign: AtomicUsize::new(0),
            foreign: Mutex::new(Vec::new()),
        }
    }

    /// Makes `home` wait for every foreign stream's use of the memory, as
    /// [`DeviceMem::release`] does before giving a block back; for memory
    /// that is freed instead.
    pub(super) fn order_uses(&mut self, home: &CudaStream) {
        if *self.last_foreign.get_mut() != 0 {
            self.order_after_foreign(home);
        }
    }

    /// This block's size class, if a thread may keep it whole as its spare
    /// (a small block; the caller checks it is alone at home).
    #[inline]
    pub(crate) fn spare_class(&self) -> Option<usize> {
        (self.class <= SPARE_CLASS).then_some(self.class)
    }
}

/// Makes `home` wait for the work queued so far on each of `others` (an
/// event recorded there and waited for by `home`; without an event, a wait
/// for the other stream), so `home`'s later work runs after it. `home`
/// itself may be among `others`: it needs no wait.
#[cold]
#[inline(never)]
pub(crate) fn order_after(home: &CudaStream, others: Vec<Arc<CudaStream>>) {
    if others.is_empty() || home.ctx.bind().is_err() {
        return;
    }
    let label = &home.ctx.label;
    for other in others {
        if other.raw == home.raw {
            continue;
        }
        // A use captured into a graph happens when the graph is replayed,
        // which no event recorded now orders; and an event wait across the
        // capture's border (a stream outside it waiting for an event
        // recorded under it, or the reverse), like synchronizing a
        // capturing stream, would break the capture. So exactly one of
        // the two capturing orders nothing: the graph's owner keeps the
        // memory it uses alive while it can replay. (Two streams that both
        // capture order as usual: the event joins them in the graph.)
        if other.capturing().unwrap_or(true) != home.capturing().unwrap_or(true) {
            continue;
        }
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

/// `len` bytes in the order of `stream`: a block from the stream's cache
/// (or the allocator).
#[inline]
pub(super) fn alloc_on(stream: &Arc<CudaStream>, len: usize) -> Result<Memory> {
    alloc_block(stream, len, true)
}

/// [`alloc_on`], never a block from the stream's cache (the block goes
/// back to it when released, as any other).
pub(super) fn alloc_fresh_on(stream: &Arc<CudaStream>, len: usize) -> Result<Memory> {
    alloc_block(stream, len, false)
}

#[inline]
fn alloc_block(stream: &Arc<CudaStream>, len: usize, reuse: bool) -> Result<Memory> {
    let class = block_size(stream.caching, len);
    let ptr = match reuse.then(|| stream.take(class)).flatten() {
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
    fn the_debugging_mode_allocates_exact_sizes() {
        for len in [1, 3, 511, 513, (1 << 20) + 1] {
            assert_eq!(block_size(false, len), len);
            assert_eq!(block_size(true, len), size_class(len));
        }
        assert_eq!(block_size(false, 0), 1, "the driver refuses 0 bytes");
        assert_ne!(block_size(true, 513), 513, "classes round up");
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
