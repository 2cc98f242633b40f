//! Unloads retired modules once the work that may run them is done,
//! without waiting for the rest of the context's work.
//!
//! A module's last holder (see `load.rs`) does not unload it: the module
//! goes to its context's [`Unloads`] with the *fences* it must wait for,
//! and is unloaded (`cuModuleUnload`) once they have all passed. A fence
//! is an event recorded on a stream after every launch that may have used
//! the module: by the time the last holder lets go, every launch of the
//! module has been queued (a launch holds the module while it queues), so
//! an event recorded on a stream now follows all of them in that stream's
//! order.
//!
//! **Which streams.** Each stream says whether work was queued on it
//! since its last fence ([`StreamFences`]' `launched` flag: one store per
//! launch, the only cost on the warm path; a stream with nothing queued
//! since needs no new fence, its last one covers everything, so idle
//! streams cost nothing). The context keeps a list of its live streams;
//! an unload asks each of them:
//! - kernelkit's own streams, cudarc's (kept alive by their `Arc`) and the
//!   legacy default stream (valid for the life of the process) get a fence
//!   recorded there and then;
//! - another library's stream known only by its raw handle
//!   (`Stream::from_raw_cuda`, the streams of PyTorch and CuPy) is alive,
//!   for sure, only while a call on it runs: its owner may destroy it
//!   between calls (kernelkit-py keeps wrappers of such streams). So the
//!   unload only *asks* for a fence on it, and the next launch on it
//!   records one (launches on such streams already leave the warm path to
//!   ask whether the stream captures). The per-thread default stream is
//!   one of these: the call that records its fence is made on the thread
//!   whose stream it is;
//! - a stream that is being captured into a graph cannot take a fence (a
//!   record there is captured, not done); it is asked, like the last kind,
//!   and the first launch after the capture records it. (A module launched
//!   *under* a capture is pinned and never unloaded: see `load.rs`.)
//!
//! A stream that goes records a fence as it goes if work was queued on it
//! since its last one (while it is certainly alive: its own drop); the
//! fence joins the context's *orphans*, which every later unload waits for
//! too until they pass.
//!
//! **Reaping.** Nothing waits: the waiting modules are looked at
//! (`cuEventQuery`) on later cold paths — a module's last drop, a module
//! load (and so before every eviction), a synchronize of a stream — and
//! each one whose fences all passed is unloaded. When the device goes
//! (its context is released) whatever still waits is unloaded after one
//! synchronize of the context. [`Unloads::pending`] counts the modules
//! waiting (`CacheStats::pending_unloads`). A module whose fence was asked
//! of a stream that never runs another kernelkit launch, and went while it
//! was being captured, waits until the device goes.
//!
//! **Captures on other threads.** PyTorch captures graphs in the driver's
//! global mode, in which a "potentially unsafe" call from *any* thread
//! (a context synchronize, a module unload, an event query) invalidates
//! the capture. Every driver call of this file runs with the calling
//! thread in the relaxed capture mode ([`RelaxedCapture`]), restored
//! after, so a capture on another thread stays valid; none of them waits
//! for the context (the final drain of a device that goes excepted).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

use super::cuda_stream::CudaStream;
use super::driver::{self, RawEvent, RawModule, RawStream, RelaxedCapture};
use crate::sync::{lock, AtomicBool, Mutex};

/// Locks one of [`Unloads`]' own lists (plain `std` locks, outside the
/// loom model: only the per-stream protocol is modelled).
fn hold<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// An event recorded on a stream after the work a module may run.
pub(super) struct Fence {
    event: RawEvent,
    /// Seen passed once (it stays passed): no more queries.
    passed: AtomicBool,
}

impl Fence {
    /// A fence recorded on `stream` now.
    fn record(stream: RawStream, label: &str) -> Option<Arc<Fence>> {
        let event = driver::event_create(label).ok()?;
        if driver::event_record(event, stream, label).is_err() {
            driver::event_destroy(event);
            return None;
        }
        Some(Arc::new(Fence {
            event,
            passed: AtomicBool::new(false),
        }))
    }

    /// Whether the work before the fence has finished (`cuEventQuery`,
    /// which does not wait; an error counts as not yet).
    fn passed(&self, label: &str) -> bool {
        if self.passed.load(Ordering::Acquire) {
            return true;
        }
        let passed = driver::event_query(self.event, label).unwrap_or(false);
        if passed {
            self.passed.store(true, Ordering::Release);
        }
        passed
    }
}

impl Drop for Fence {
    fn drop(&mut self) {
        driver::event_destroy(self.event);
    }
}

/// What a stream shares with the unloads that wait for it: its last
/// fence, and whether one is asked of its next launch. Outlives the
/// stream (an unload that asked keeps it).
pub(super) struct StreamFences {
    /// An unload waits for a fence that only a launch on the stream (or
    /// its drop) may record: see the module documentation.
    wanted: AtomicBool,
    state: Mutex<FenceState<Arc<Fence>>>,
}

/// A stream's fences so far (`F`: a [`Fence`]; a number in the loom model).
pub(super) struct FenceState<F> {
    /// Fences recorded on the stream so far.
    generation: u64,
    /// The last of them.
    last: Option<F>,
    /// The stream went: no fence comes after `generation`.
    closed: bool,
}

impl<F> Default for FenceState<F> {
    fn default() -> Self {
        FenceState {
            generation: 0,
            last: None,
            closed: false,
        }
    }
}

/// What an unload needs of one stream.
enum Need<F> {
    /// This fence (`None`: nothing was ever queued there).
    Fence(Option<F>),
    /// A fence of a generation after this one, asked of the stream.
    After(u64),
}

/// A launch was queued on the stream (`launched`: the stream's flag): one
/// swap, after the launch is queued. See [`fence_for_unload`].
///
/// A swap, not a store: every write of the flag is a read-modify-write, so
/// each one continues the release sequence of the writes before it, and an
/// unload's swap that reads a later launch's `true` (or a fence's `false`)
/// still synchronizes with every earlier launch's write. With plain stores
/// it would synchronize only with the one write it read, and a fence could
/// be ordered before an earlier launch it must follow
/// (`loom_an_unload_fence_follows_every_launch_of_its_module` finds that
/// execution).
#[inline(always)]
pub(super) fn mark_launched(launched: &AtomicBool) {
    launched.swap(true, Ordering::Release);
}

/// Records a fence with `record` if work was queued since the last one
/// (clearing `launched` first: a launch queued while the fence is recorded
/// sets it again, and the next fence covers it), and publishes it. False
/// when `record` failed (then `launched` stays set).
fn fence_now<F>(
    launched: &AtomicBool,
    state: &mut FenceState<F>,
    record: impl FnOnce() -> Option<F>,
) -> bool {
    if !launched.swap(false, Ordering::AcqRel) {
        return true;
    }
    match record() {
        Some(fence) => {
            state.generation += 1;
            state.last = Some(fence);
            true
        }
        None => {
            // A swap, as every write of the flag (see `mark_launched`).
            launched.swap(true, Ordering::Release);
            false
        }
    }
}

/// What an unload starting now needs of a stream (its fence state locked):
/// its last fence, recorded now with `record` if work was queued since and
/// the stream may take one now (`recordable`), or a later fence.
///
/// Why the last fence is enough when `launched` is clear: every launch of
/// the module stored `launched` after it was queued and before the
/// module's last holder let go (before this), so this load sees that
/// store, or a later swap that cleared it: under this lock, before the
/// fence it published was recorded, which so follows the launch.
fn fence_for_unload<F: Clone>(
    launched: &AtomicBool,
    state: &mut FenceState<F>,
    recordable: bool,
    record: impl FnOnce() -> Option<F>,
) -> Need<F> {
    if (recordable && fence_now(launched, state, record)) || !launched.load(Ordering::Acquire) {
        Need::Fence(state.last.clone())
    } else {
        Need::After(state.generation)
    }
}

impl Default for StreamFences {
    fn default() -> Self {
        StreamFences {
            wanted: AtomicBool::new(false),
            state: Mutex::new(FenceState::default()),
        }
    }
}

impl StreamFences {
    /// Whether a fence is asked of the stream's next launch (one relaxed
    /// load, on the launch path of streams that may be captured).
    #[inline]
    pub(super) fn wanted(&self) -> bool {
        self.wanted.load(Ordering::Relaxed)
    }
}

impl CudaStream {
    /// Records a fence on this stream now (see [`fence_now`]). The caller
    /// knows the stream is alive and not capturing; the context is current.
    fn fence_now(&self, state: &mut FenceState<Arc<Fence>>) -> bool {
        fence_now(&self.launched, state, || {
            Fence::record(self.raw, &self.ctx.label)
        })
    }

    /// Adds to `wait` what an unload starting now needs of this stream:
    /// its last fence, recorded now if work was queued since, or a request
    /// for one that the stream's next launch (or its drop) records.
    fn fence_for_unload(&self, wait: &mut Waiting) {
        let fences = &self.fences;
        let mut state = lock(&fences.state);
        let recordable = self.fenced_any && !self.capturing().unwrap_or(true);
        let record = || Fence::record(self.raw, &self.ctx.label);
        match fence_for_unload(&self.launched, &mut state, recordable, record) {
            Need::Fence(Some(fence)) => {
                if !fence.passed(&self.ctx.label) {
                    wait.fences.push(fence);
                }
            }
            Need::Fence(None) => {}
            Need::After(generation) => {
                fences.wanted.store(true, Ordering::Release);
                wait.requests.push((fences.clone(), generation));
            }
        }
    }

    /// Records the fence an unload asked of this stream's next launch
    /// (called by that launch, before it queues its kernel, once it knows
    /// the stream is not capturing).
    #[cold]
    #[inline(never)]
    pub(super) fn record_wanted_fence(&self) {
        let _relaxed = RelaxedCapture::enter();
        let mut state = lock(&self.fences.state);
        if self.fences.wanted.swap(false, Ordering::AcqRel) && !self.fence_now(&mut state) {
            // Not recorded (the driver refused an event): asked again.
            self.fences.wanted.store(true, Ordering::Release);
        }
    }

    /// At the stream's drop (it is alive until the drop returns): a last
    /// fence if work was queued since the previous one, kept as an orphan
    /// that later unloads wait for; the stream's fences are closed.
    pub(super) fn close_fences(&self) {
        let _relaxed = RelaxedCapture::enter();
        let recorded = {
            let mut state = lock(&self.fences.state);
            let before = state.generation;
            if self.launched.load(Ordering::Acquire) && !self.capturing().unwrap_or(true) {
                self.fence_now(&mut state);
            }
            state.closed = true;
            (state.generation > before)
                .then(|| state.last.clone())
                .flatten()
        };
        if let Some(fence) = recorded {
            hold(&self.ctx.unloads.orphans).push(fence);
        }
    }
}

/// A module that waits for its fences.
struct Waiting {
    module: RawModule,
    fences: Vec<Arc<Fence>>,
    /// Fences asked of streams: (the stream's fences, the generation when
    /// asked); answered by any fence of a later generation.
    requests: Vec<(Arc<StreamFences>, u64)>,
}

impl Waiting {
    /// Whether every fence passed (answered requests become fences).
    fn ready(&mut self, label: &str) -> bool {
        let fences = &mut self.fences;
        self.requests.retain(|(stream, asked)| {
            let state = lock(&stream.state);
            if state.generation <= *asked {
                return true;
            }
            fences.extend(state.last.clone());
            false
        });
        self.requests.is_empty() && self.fences.iter().all(|f| f.passed(label))
    }
}

/// A context's modules waiting to be unloaded, and what they wait for:
/// see the module documentation.
#[derive(Default)]
pub(super) struct Unloads {
    /// The context's streams (dead ones are dropped as the list grows).
    streams: std::sync::Mutex<Vec<Weak<CudaStream>>>,
    /// The last fences of streams that went, until they pass.
    orphans: std::sync::Mutex<Vec<Arc<Fence>>>,
    waiting: std::sync::Mutex<Vec<Waiting>>,
    /// `waiting.len()`, read without the lock.
    pending: AtomicUsize,
}

impl Unloads {
    /// Lists a new stream of the context.
    pub(super) fn register(&self, stream: &Arc<CudaStream>) {
        let mut streams = hold(&self.streams);
        // Streams that went leave dead entries: dropped as the list grows,
        // so it stays about as long as the live streams.
        if streams.len() >= 8 && streams.len().is_power_of_two() {
            streams.retain(|s| s.strong_count() > 0);
        }
        streams.push(Arc::downgrade(stream));
    }

    /// Modules waiting for their fences.
    pub(super) fn pending(&self) -> usize {
        self.pending.load(Ordering::Acquire)
    }

    /// Unloads `module` (of this context, current on the calling thread)
    /// once every launch that may have used it has finished: its last
    /// holder let go, so no launch of it can be queued any more.
    pub(super) fn unload(&self, module: RawModule, label: &str) {
        let _relaxed = RelaxedCapture::enter();
        let mut wait = Waiting {
            module,
            fences: Vec::new(),
            requests: Vec::new(),
        };
        let streams: Vec<Arc<CudaStream>> = {
            let mut streams = hold(&self.streams);
            streams.retain(|s| s.strong_count() > 0);
            streams.iter().filter_map(Weak::upgrade).collect()
        };
        for stream in &streams {
            stream.fence_for_unload(&mut wait);
        }
        // A stream whose last handle was the one taken here goes now (its
        // drop takes the locks above, none of which is held).
        drop(streams);
        {
            let mut orphans = hold(&self.orphans);
            orphans.retain(|f| !f.passed(label));
            wait.fences.extend(orphans.iter().cloned());
        }
        if wait.ready(label) {
            driver::module_unload(module);
            return;
        }
        hold(&self.waiting).push(wait);
        self.pending.fetch_add(1, Ordering::AcqRel);
        self.reap_relaxed(label);
    }

    /// Unloads the waiting modules whose fences all passed, without
    /// waiting (the context is current on the calling thread).
    #[inline]
    pub(super) fn reap(&self, label: &str) {
        if self.pending() == 0 {
            return;
        }
        let _relaxed = RelaxedCapture::enter();
        self.reap_relaxed(label);
    }

    #[cold]
    #[inline(never)]
    fn reap_relaxed(&self, label: &str) {
        let mut waiting = std::mem::take(&mut *hold(&self.waiting));
        waiting.retain_mut(|w| {
            if !w.ready(label) {
                return true;
            }
            driver::module_unload(w.module);
            self.pending.fetch_sub(1, Ordering::AcqRel);
            false
        });
        if !waiting.is_empty() {
            hold(&self.waiting).append(&mut waiting);
        }
        hold(&self.orphans).retain(|f| !f.passed(label));
    }

    /// The device goes (its context is released after this): every module
    /// still waiting is unloaded after the context's work is done.
    pub(super) fn drain(&mut self, label: &str) {
        let waiting = std::mem::take(self.waiting.get_mut().unwrap_or_else(|p| p.into_inner()));
        self.orphans
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        if waiting.is_empty() {
            return;
        }
        let _relaxed = RelaxedCapture::enter();
        let _ = driver::ctx_synchronize(label);
        for w in waiting {
            driver::module_unload(w.module);
        }
        *self.pending.get_mut() = 0;
    }
}

/// Model-checked with `loom` (`RUSTFLAGS="--cfg loom" cargo test --lib loom_`):
/// the per-stream fence protocol ([`mark_launched`], [`fence_now`],
/// [`fence_for_unload`]) over a stream whose queue is a list (the driver
/// queues one stream's calls in the order they take its lock).
#[cfg(all(test, loom))]
mod loom_models {
    use super::*;
    use crate::sync::model;
    use loom::thread;

    #[derive(Clone, Copy, PartialEq, Debug)]
    enum Queued {
        Launch(u8),
        Fence,
    }

    struct ModelStream {
        launched: AtomicBool,
        state: Mutex<FenceState<usize>>,
        queue: Mutex<Vec<Queued>>,
    }

    impl ModelStream {
        fn launch(&self, who: u8) {
            lock(&self.queue).push(Queued::Launch(who));
            mark_launched(&self.launched);
        }

        /// What an unload starting now waits for: a queue position.
        fn unload(&self) -> Option<usize> {
            let mut state = lock(&self.state);
            let record = || {
                let mut queue = lock(&self.queue);
                queue.push(Queued::Fence);
                Some(queue.len() - 1)
            };
            match fence_for_unload(&self.launched, &mut state, true, record) {
                Need::Fence(at) => at,
                Need::After(_) => unreachable!("a stream that may record always records"),
            }
        }
    }

    /// Thread A launches module M on the stream and lets M go; meanwhile C
    /// launches another module there and D unloads a third (taking a fence
    /// of its own). M's unload, which starts after A let go, waits for a
    /// fence queued after A's launch, whatever the interleaving.
    #[test]
    fn loom_an_unload_fence_follows_every_launch_of_its_module() {
        model(None, || {
            let s = std::sync::Arc::new(ModelStream {
                launched: AtomicBool::new(false),
                state: Mutex::new(FenceState::default()),
                queue: Mutex::new(Vec::new()),
            });
            let c = {
                let s = s.clone();
                thread::spawn(move || s.launch(2))
            };
            let d = {
                let s = s.clone();
                thread::spawn(move || {
                    let _ = s.unload();
                })
            };
            let a = {
                let s = s.clone();
                thread::spawn(move || s.launch(1))
            };
            a.join().unwrap();
            let fence = s.unload();
            let queue = lock(&s.queue).clone();
            let launch = queue.iter().position(|q| *q == Queued::Launch(1)).unwrap();
            match fence {
                Some(at) => assert!(
                    at > launch,
                    "the fence at {at} precedes the launch: {queue:?}"
                ),
                None => panic!("no fence after a launch: {queue:?}"),
            }
            c.join().unwrap();
            d.join().unwrap();
        });
    }
}
