//! Array storage: a backend's [`Memory`] and where it lives, in one heap
//! block that every view of it shares.
//!
//! An array's memory is written by work queued on one stream (its
//! *producer*), or was complete when made; a reader on another stream waits
//! for the producer first. The block's [`Place`] says which, and reaches
//! the device through it: a kernel output holds one shared count (its
//! stream's), not two.
//!
//! **A thread's spare.** When the last array of a small output goes, and
//! only its own stream ever used the memory, the whole block — heap block,
//! device memory, stream — stays with the dropping thread as its *spare*,
//! and that thread's next output of the same stream and size class takes
//! it ([`SharedStorage::output`]): a loop of calls that drops its outputs
//! allocates nothing and touches no shared count. The backend says which
//! memory qualifies ([`Memory::spare_class`], [`StreamHandle::spare_class`]:
//! small CUDA blocks of streams that cache blocks); host memory never does.
//! The price: each thread keeps at most one such block, and the stream it
//! belongs to, until its next output or its exit.

use std::cell::Cell;
use std::mem::ManuallyDrop;

use crate::backend::{Memory, StreamHandle};
use crate::device::{Device, Stream};
use crate::error::Result;

/// Where memory lives and what a reader must wait for.
#[derive(Clone)]
pub(crate) enum Place {
    /// Complete when created (an upload waits for its copy).
    Ready(Device),
    /// Written by work queued on this stream: reads wait for it.
    Queued(Stream),
}

impl Place {
    pub(crate) fn device(&self) -> &Device {
        match self {
            Place::Ready(device) => device,
            Place::Queued(stream) => stream.device(),
        }
    }

    pub(crate) fn producer(&self) -> Option<&Stream> {
        match self {
            Place::Ready(_) => None,
            Place::Queued(stream) => Some(stream),
        }
    }

    /// The stream in whose order the memory was allocated: the producer,
    /// or the device's default stream (where uploads run).
    pub(crate) fn home(&self) -> &Stream {
        match self {
            Place::Ready(device) => device.default_stream(),
            Place::Queued(stream) => stream,
        }
    }
}

/// Memory and its place. Gives the memory back, in its home stream's
/// order, when the last view goes (unless it becomes a spare).
pub(crate) struct Storage {
    pub(crate) mem: Memory,
    pub(crate) place: Place,
}

impl Drop for Storage {
    #[inline]
    fn drop(&mut self) {
        let Storage { mem, place } = self;
        mem.release(place.home().handle());
    }
}

/// Storage shared by arrays.
///
/// `triomphe`'s `Arc` keeps no weak count, so the last owner frees a block
/// with one atomic operation instead of two; and the last owner may keep
/// the block whole as its thread's spare (see the module documentation).
pub(crate) struct SharedStorage(ManuallyDrop<triomphe::Arc<Storage>>);

thread_local! {
    /// The storage this thread dropped last, kept whole: see the module
    /// documentation.
    static SPARE: Cell<Option<triomphe::Arc<Storage>>> = const { Cell::new(None) };
}

impl SharedStorage {
    pub(crate) fn new(mem: Memory, place: Place) -> SharedStorage {
        SharedStorage::from_arc(triomphe::Arc::new(Storage { mem, place }))
    }

    #[inline]
    fn from_arc(arc: triomphe::Arc<Storage>) -> SharedStorage {
        SharedStorage(ManuallyDrop::new(arc))
    }

    /// New memory for a kernel output of `len` bytes, written by work on
    /// `stream`: this thread's spare if it fits, else the backend's.
    #[inline]
    pub(crate) fn output(stream: &Stream, len: usize) -> Result<SharedStorage> {
        if let Some(class) = stream.handle().spare_class(len) {
            if let Some(spare) = take_spare(stream, class, len) {
                return Ok(SharedStorage::from_arc(spare));
            }
        }
        let mem = stream.device().backend().alloc(len, stream.handle())?;
        Ok(SharedStorage::new(mem, Place::Queued(stream.clone())))
    }
}

/// This thread's spare, if it is of `stream` and size `class`, resized to
/// `len`.
#[inline]
fn take_spare(stream: &Stream, class: usize, len: usize) -> Option<triomphe::Arc<Storage>> {
    SPARE
        .try_with(|spare| {
            let mut storage = spare.take()?;
            let fits = matches!(&storage.place, Place::Queued(s) if s == stream)
                && storage.mem.spare_class() == Some(class);
            match triomphe::Arc::get_mut(&mut storage) {
                Some(s) if fits => {
                    s.mem.reuse(len);
                    Some(storage)
                }
                _ => {
                    spare.set(Some(storage));
                    None
                }
            }
        })
        .ok()
        .flatten()
}

impl Clone for SharedStorage {
    #[inline]
    fn clone(&self) -> SharedStorage {
        SharedStorage::from_arc(triomphe::Arc::clone(&self.0))
    }
}

impl std::ops::Deref for SharedStorage {
    type Target = Storage;
    #[inline]
    fn deref(&self) -> &Storage {
        &self.0
    }
}

impl Drop for SharedStorage {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: the `Arc` is taken once, here, and the field is not used
        // after: this is the value's drop.
        let arc = unsafe { ManuallyDrop::take(&mut self.0) };
        if arc.mem.spare_class().is_some() {
            return recycle(arc);
        }
        drop(arc)
    }
}

/// Where storage whose memory could be a spare goes when an owner drops
/// it: if it was the last owner, the stream caches blocks and no other
/// stream used the memory, it becomes this thread's spare (the previous
/// spare is released); otherwise it is dropped as usual.
fn recycle(storage: triomphe::Arc<Storage>) {
    let keep = matches!(&storage.place, Place::Queued(s)
            if keeps_spares(s.handle(), &storage.mem))
        && alone_at_home(|| storage.is_unique(), || storage.mem.used_elsewhere());
    if !keep {
        return drop(storage);
    }
    // If the thread is exiting, the closure (and the storage) is dropped.
    let old = SPARE.try_with(|spare| spare.replace(Some(storage)));
    drop(old);
}

/// Whether outputs of `home` of this memory's size may be kept as spares.
#[inline]
fn keeps_spares(home: &StreamHandle, mem: &Memory) -> bool {
    home.spare_class(mem.len).is_some()
}

/// Whether storage that an owner drops may become its thread's spare: no
/// other owner is left (`is_unique`) and no stream but its home ever used
/// it (`used_elsewhere`), asked in that order. Finding the storage unique
/// is an Acquire load of its count, which every other owner decremented
/// with Release when it went, after recording its launches on other
/// streams: so the record read next includes them all. Asked the other way
/// round, an owner that launches on another stream and drops its array
/// between the two reads is missed, and the block is reused on its home
/// stream while that launch may still read it (the `loom` model below
/// checks both orders' outcome).
#[inline(always)]
fn alone_at_home(is_unique: impl FnOnce() -> bool, used_elsewhere: impl FnOnce() -> bool) -> bool {
    is_unique() && !used_elsewhere()
}

/// Model-checked with `loom` (`RUSTFLAGS="--cfg loom" cargo test --lib
/// loom_`).
#[cfg(all(test, loom))]
mod loom_models {
    use super::alone_at_home;
    use loom::sync::atomic::{AtomicUsize, Ordering};
    use loom::sync::{Arc, Mutex};
    use loom::thread;

    /// What `recycle` reads of an output's storage, with loom's atomics:
    /// its reference count as `triomphe` keeps it (a drop subtracts with
    /// Release, `is_unique` loads with Acquire), and the memory's record of
    /// other streams as the CUDA backend's `DeviceMem::used_on` writes it
    /// (the list under its lock, then `last_foreign`, Relaxed) and
    /// `used_elsewhere` reads it.
    struct Output {
        count: AtomicUsize,
        foreign: Mutex<Vec<usize>>,
        last_foreign: AtomicUsize,
    }

    /// An output has two owners: the array this thread drops, and a clone
    /// that another thread launches on another stream (or, in the second
    /// run, on the output's own stream, which records nothing) and then
    /// drops. Whatever the schedule, this thread never keeps as its spare a
    /// block that another stream used: the launch there may still be
    /// reading it.
    #[test]
    fn loom_spare_is_never_a_block_another_stream_used() {
        for elsewhere in [true, false] {
            crate::sync::model(None, move || {
                let output = Arc::new(Output {
                    count: AtomicUsize::new(2),
                    foreign: Mutex::new(Vec::new()),
                    last_foreign: AtomicUsize::new(0),
                });
                let clone = output.clone();
                let other = thread::spawn(move || {
                    if elsewhere {
                        clone.foreign.lock().unwrap().push(0xf0);
                        clone.last_foreign.store(0xf0, Ordering::Relaxed);
                    }
                    clone.count.fetch_sub(1, Ordering::Release);
                });
                let kept = alone_at_home(
                    || output.count.load(Ordering::Acquire) == 1,
                    || output.last_foreign.load(Ordering::Relaxed) != 0,
                );
                other.join().unwrap();
                assert!(
                    !(kept && elsewhere),
                    "kept as the spare a block that another stream used"
                );
            });
        }
    }
}
